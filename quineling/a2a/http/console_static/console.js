// The operator console (docs/console.md): the public HTTP+JSON API, same-origin, with the caller's own token.
// Every value from the server reaches the page through textContent or an attribute, never as markup.
"use strict";

(function () {
  const TOKEN_KEY = "quineling.console.token"; // sessionStorage: this tab only, gone when it closes
  const TENANT_KEY = "quineling.console.tenant";
  const FINAL = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"]);
  const RETRY_MS = 1000; // until the stream's own retry: hint says otherwise

  // The sixteen runtime operations (docs/runtime-operations.md) and their fields: text, number or json.
  const OPERATIONS = {
    parse: [["thought", "text", true]],
    create: [["thought", "text", true], ["options.seed", "number"], ["options.repeats", "number"]],
    compile: [["intent", "json", true]],
    inspect: [["artifactId", "text", true]],
    run: [["artifactId", "text", true]],
    reproduce: [["artifactId", "text", true], ["recordId", "text", true]],
    recover: [["recovery", "json", true]],
    frame: [["artifactId", "text", true], ["phase", "number", true], ["options.budget", "number"], ["options.crests", "number"]],
    offspringPreview: [["input", "json", true]],
    offspringFrame: [["input", "json", true], ["candidateId", "text", true], ["childSourceHash", "text", true], ["phase", "number", true], ["options.budget", "number"], ["options.crests", "number"]],
    offspringAdmit: [["input", "json", true], ["candidateId", "text", true], ["childSourceHash", "text", true], ["target", "json", true], ["requestId", "text", true]],
    lineage: [["artifactId", "text"], ["cursor", "number"], ["limit", "number"]],
    annotate: [["artifactId", "text", true], ["intent", "json", true]],
    worldCreate: [["worldKey", "text", true], ["seed", "number", true], ["affinity", "text"]],
    worldInspect: [["worldId", "text", true]],
    worldCommand: [["worldId", "text", true], ["sequence", "number", true], ["expectedRevision", "number", true], ["command", "json", true]],
  };

  const $ = (id) => document.getElementById(id);
  const view = { taskId: null, pageToken: "", follower: null, viewer: null };

  // --- the API ----------------------------------------------------------------------------------------

  function base() {
    const tenant = sessionStorage.getItem(TENANT_KEY) || "";
    return "/a2a/rest" + (tenant ? "/" + encodeURIComponent(tenant) : "");
  }

  function headers(extra) {
    const h = Object.assign({ "A2A-Version": "1.0" }, extra || {});
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) h.Authorization = "Bearer " + token;
    return h;
  }

  class ApiError extends Error {
    constructor(status, body) {
      const error = (body && body.error) || {};
      super(`${status} ${error.status || ""} ${error.message || ""}`.trim());
      this.status = status;
      this.body = body;
    }
  }

  async function api(method, path, body, absolute) {
    const init = { method, headers: headers(body ? { "Content-Type": "application/json" } : {}), cache: "no-store", credentials: "omit" };
    if (body) init.body = JSON.stringify(body);
    const response = await fetch(absolute ? path : base() + path, init);
    const text = await response.text();
    let parsed = null;
    try { parsed = text ? JSON.parse(text) : null; } catch (_) { parsed = { error: { message: text.slice(0, 200) } }; }
    if (!response.ok) throw new ApiError(response.status, parsed);
    return parsed;
  }

  const taskPath = (id) => "/tasks/" + encodeURIComponent(id);

  // --- small DOM helpers ------------------------------------------------------------------------------

  function el(tag, text, attrs) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  }

  function row(cells) {
    const tr = document.createElement("tr");
    for (const cell of cells) {
      const td = document.createElement("td");
      if (cell instanceof Node) td.appendChild(cell); else td.textContent = cell === undefined || cell === null ? "" : String(cell);
      tr.appendChild(td);
    }
    return tr;
  }

  function say(id, text) { $(id).textContent = text; }

  function partsText(parts) {
    return (parts || []).map((p) => (p.text !== undefined ? p.text : JSON.stringify(p.data !== undefined ? p.data : p))).join(" ");
  }

  // --- tasks ------------------------------------------------------------------------------------------

  async function listTasks(token) {
    const params = new URLSearchParams({ pageSize: $("filter-size").value || "20", historyLength: "0" });
    if ($("filter-context").value) params.set("contextId", $("filter-context").value);
    if ($("filter-status").value) params.set("status", $("filter-status").value);
    if (token) params.set("pageToken", token);
    try {
      const page = await api("GET", "/tasks?" + params.toString());
      const body = $("tasks").tBodies[0];
      body.replaceChildren();
      for (const task of page.tasks || []) {
        const open = el("button", task.id, { type: "button", class: "link", "data-task-id": task.id });
        open.addEventListener("click", () => selectTask(task.id));
        const state = (task.status && task.status.state) || "";
        const shown = el("span", state.replace(/^TASK_STATE_/, "").toLowerCase().replace(/_/g, " "), { title: state });
        body.appendChild(row([open, shown, task.status && task.status.timestamp, task.contextId]));
      }
      say("tasks-caption", `${page.totalSize} task(s); showing ${(page.tasks || []).length}`);
      view.pageToken = page.nextPageToken || "";
      $("next-page").disabled = !view.pageToken;
    } catch (error) {
      say("tasks-caption", "Listing failed: " + error.message);
    }
  }

  async function selectTask(id) {
    stopFollowing();
    view.taskId = id;
    say("task-id", id);
    $("events").replaceChildren();
    for (const button of ["follow", "cancel"]) $(button).disabled = false;
    await refreshTask();
  }

  async function refreshTask() {
    try {
      const task = await api("GET", taskPath(view.taskId) + "?historyLength=50");
      showTask(task);
      return task;
    } catch (error) {
      say("task-state", "unreadable: " + error.message);
      return null;
    }
  }

  function showTask(task) {
    say("task-state", task.status.state);
    const history = $("history");
    history.replaceChildren();
    for (const message of task.history || []) history.appendChild(el("li", `${message.role}: ${partsText(message.parts)}`));
    const artifacts = $("artifacts");
    artifacts.replaceChildren();
    for (const artifact of task.artifacts || []) {
      const item = el("li", `${artifact.name || artifact.artifactId}: ${partsText(artifact.parts).slice(0, 400)}`);
      const lifeform = lifeformOf(artifact);
      if (lifeform) {
        const show = el("button", "View body", { type: "button" });
        show.addEventListener("click", () => { $("viewer-artifact").value = lifeform; drawFrame(); });
        item.appendChild(document.createTextNode(" "));
        item.appendChild(show);
      }
      artifacts.appendChild(item);
    }
  }

  // The lifeform an artifact names: the result of create, compile, recover, inspect or annotate.
  function lifeformOf(artifact) {
    for (const part of artifact.parts || []) {
      const result = part.data && part.data.result;
      if (!result) continue;
      const id = (result.artifact && result.artifact.id) || result.id;
      if (typeof id === "string" && id.startsWith("sha256:")) return id;
    }
    return null;
  }

  async function cancelTask() {
    try {
      showTask(await api("POST", taskPath(view.taskId) + ":cancel", {}));
    } catch (error) {
      say("live-status", "Cancel refused: " + error.message);
    }
  }

  // --- following a task over SSE ----------------------------------------------------------------------
  // EventSource cannot send Authorization, so the stream is read with fetch and parsed here. Each event's id
  // is remembered: a reconnect sends the last as Last-Event-ID, and an id already shown is never shown again.

  class Follower {
    constructor(taskId) {
      this.taskId = taskId;
      this.lastId = null;
      this.seen = new Set();
      this.retry = RETRY_MS;
      this.controller = null;
      this.stopped = false;
    }

    stop() {
      this.stopped = true;
      if (this.controller) this.controller.abort();
    }

    async run() {
      while (!this.stopped) {
        let finished = false;
        try {
          finished = await this.once();
        } catch (error) {
          if (this.stopped) return;
          say("live-status", "Disconnected (" + error.message + "); reconnecting…");
        }
        if (finished || this.stopped) return;
        await new Promise((resolve) => setTimeout(resolve, this.retry));
      }
    }

    // One connection: true when the task is over (final, or nothing more to follow).
    async once() {
      this.controller = new AbortController();
      const extra = { Accept: "text/event-stream" };
      if (this.lastId) extra["Last-Event-ID"] = this.lastId;
      const response = await fetch(base() + taskPath(this.taskId) + ":subscribe",
        { method: "GET", headers: headers(extra), cache: "no-store", credentials: "omit", signal: this.controller.signal });
      if (!response.ok) {
        const text = await response.text();
        if (response.status >= 500) throw new Error("HTTP " + response.status);
        say("live-status", "Not following: " + text.slice(0, 200));
        const task = await refreshTask();
        if (task) this.show({ statusUpdate: { taskId: task.id, status: task.status } }, null);
        return true;
      }
      say("live-status", "Following " + this.taskId);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
          if (this.frame(block)) return true;
        }
      }
      if (this.stopped) return true;
      // A resumed stream of a task that ended with the last event shown closes at once: nothing more to follow.
      const task = await refreshTask();
      if (task && FINAL.has(task.status.state)) return true;
      throw new Error("stream closed");
    }

    // One SSE event block; true when it ends the task.
    frame(block) {
      let id = null, data = "", event = "message";
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") id = value;
        else if (field === "data") data += (data ? "\n" : "") + value;
        else if (field === "event") event = value;
        else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
      }
      if (!data) return false;
      const payload = JSON.parse(data);
      if (event === "error") {
        say("live-status", "Stream error: " + JSON.stringify(payload).slice(0, 200));
        return true;
      }
      if (id !== null) {
        if (this.seen.has(id)) return false;
        this.seen.add(id);
        this.lastId = id;
      }
      return this.show(payload, id);
    }

    show(payload, id) {
      const task = payload.task;
      const update = payload.statusUpdate;
      const artifact = payload.artifactUpdate;
      let state = null, text;
      if (task) { state = task.status.state; text = "task " + state; }
      else if (update) { state = update.status.state; text = "status " + state + (update.status.message ? ": " + partsText(update.status.message.parts) : ""); }
      else if (artifact) { text = "artifact " + (artifact.artifact.name || artifact.artifact.artifactId); }
      else { text = JSON.stringify(payload).slice(0, 200); }
      const item = el("li", text);
      if (id !== null) item.dataset.eventId = id;
      $("events").appendChild(item);
      if (state) say("task-state", state);
      if (state && FINAL.has(state)) {
        say("live-status", "Task is " + state);
        refreshTask();
        return true;
      }
      return false;
    }
  }

  function follow() {
    stopFollowing();
    if (!view.taskId) return;
    view.follower = new Follower(view.taskId);
    $("unfollow").disabled = false;
    view.follower.run().finally(() => { $("unfollow").disabled = true; });
  }

  function stopFollowing() {
    if (view.follower) view.follower.stop();
    view.follower = null;
  }

  // --- sending ----------------------------------------------------------------------------------------

  function message(part) {
    const msg = { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [part] };
    if ($("follow-up").checked && view.taskId) msg.taskId = view.taskId;
    return { message: msg };
  }

  async function send(part) {
    try {
      const answer = await api("POST", "/message:send", message(part));
      const task = answer.task || answer;
      say("send-result", JSON.stringify(answer, null, 2).slice(0, 20000));
      if (task && task.id) {
        await selectTask(task.id);
        listTasks("");
      }
      return answer;
    } catch (error) {
      say("send-result", "Refused: " + error.message);
      return null;
    }
  }

  function fieldId(name) { return "op-field-" + name.replace(/\./g, "-"); }

  function operationForm() {
    const fields = $("operation-fields");
    fields.replaceChildren(el("legend", "Fields of " + $("operation").value));
    for (const [name, kind, required] of OPERATIONS[$("operation").value]) {
      const id = fieldId(name);
      const label = el("label", name + (required ? " (required)" : ""), { for: id });
      const input = kind === "json" ? el("textarea", null, { id, rows: "3" }) : el("input", null, { id, type: kind === "number" ? "number" : "text", step: "any", autocomplete: "off" });
      if (name === "artifactId" && $("viewer-artifact").value) input.value = $("viewer-artifact").value;
      const wrap = el("div", null, { class: "field" });
      wrap.append(label, input);
      fields.appendChild(wrap);
    }
  }

  function operationRequest() {
    const operation = $("operation").value;
    const request = { operation };
    for (const [name, kind, required] of OPERATIONS[operation]) {
      const raw = $(fieldId(name)).value.trim();
      if (!raw) {
        if (required) throw new Error(name + " is required");
        continue;
      }
      const value = kind === "number" ? Number(raw) : kind === "json" ? JSON.parse(raw) : raw;
      const path = name.split(".");
      let target = request;
      for (const key of path.slice(0, -1)) target = target[key] = target[key] || {};
      target[path[path.length - 1]] = value;
    }
    return request;
  }

  // --- the viewer -------------------------------------------------------------------------------------
  // Each phase's frame is one `frame` call (one task); frames are kept per artifact, budget and crests, so a
  // replayed animation asks nothing again.

  const FRAME_STEP = 0.125;
  const frames = new Map();

  async function frameAt(artifactId, phase, budget, crests) {
    const key = JSON.stringify([artifactId, phase, budget, crests]);
    if (!frames.has(key)) {
      const request = { operation: "frame", artifactId, phase, options: { budget, crests } };
      const answer = await api("POST", "/message:send", { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ data: request, mediaType: "application/json" }] } });
      const task = answer.task || answer;
      const state = task.status.state;
      const result = (task.artifacts || []).flatMap((a) => a.parts || []).map((p) => p.data).find((d) => d && d.result);
      if (state !== "TASK_STATE_COMPLETED" || !result) {
        const error = task.status.message && task.status.message.metadata && task.status.message.metadata.quinelingError;
        throw new Error(error ? `${error.code}: ${error.message} (${error.path || ""})` : "the frame failed: " + state);
      }
      frames.set(key, result.result);
    }
    return frames.get(key);
  }

  function clampInput(id) {
    const input = $(id);
    const value = Math.round(Number(input.value));
    const clamped = Math.min(Number(input.max), Math.max(Number(input.min), Number.isFinite(value) ? value : Number(input.min)));
    input.value = String(clamped);
    return clamped;
  }

  async function drawFrame() {
    const artifactId = $("viewer-artifact").value.trim();
    if (!artifactId) { say("viewer-status", "Give an artifact id"); return false; }
    const phase = Number($("viewer-phase").value) || 0;
    const budget = clampInput("viewer-budget");
    const crests = clampInput("viewer-crests");
    try {
      const frame = await frameAt(artifactId, phase, budget, crests);
      const title = `${artifactId} at phase ${phase}, budget ${budget}, crests ${crests}`;
      $("viewer-picture").replaceChildren(window.QuinelingViewer.frameSvg(frame, title));
      const legend = $("viewer-legend");
      legend.replaceChildren();
      frame.nodeIds.forEach((node, index) => {
        const swatch = el("span", null, { class: "swatch", "data-owner": String(index) });
        swatch.style.backgroundColor = window.QuinelingViewer.colour(index);
        const item = el("li");
        item.append(swatch, document.createTextNode(" " + node));
        legend.appendChild(item);
      });
      const seam = el("li", "seams between nodes", { class: "seam" });
      legend.appendChild(seam);
      say("viewer-status", `${frame.points.length} points, ${frame.ridges.length} ridges, phase ${phase}`);
      view.frame = frame;
      return true;
    } catch (error) {
      say("viewer-status", "Cannot draw: " + error.message);
      stopPlaying();
      return false;
    }
  }

  function stepPhase() {
    const next = (Number($("viewer-phase").value) || 0) + FRAME_STEP;
    $("viewer-phase").value = String(next >= 1 ? next - 1 : next);
    return drawFrame();
  }

  function play() {
    if (view.viewer) { stopPlaying(); return; }
    $("viewer-play").textContent = "Pause";
    const tick = async () => {
      if (!view.viewer) return;
      const ok = await stepPhase();
      if (ok && view.viewer) view.viewer = setTimeout(tick, 150);
    };
    view.viewer = setTimeout(tick, 0);
  }

  function stopPlaying() {
    if (view.viewer) clearTimeout(view.viewer);
    view.viewer = null;
    $("viewer-play").textContent = "Play";
  }

  // --- the operator view ------------------------------------------------------------------------------

  async function loadOperator() {
    const section = $("operator-section");
    let report;
    try {
      report = await api("GET", "/ui/api/operator", null, true);
    } catch (_) {
      section.hidden = true; // not an operator (403), or not authenticated: nothing to show
      return;
    }
    section.hidden = false;
    section.dataset.loaded = String(Date.now());
    say("operator-ready", report.ready.status + (report.ready.warnings ? " — " + report.ready.warnings.join("; ") : ""));
    say("operator-version", report.version);
    const scopes = $("operator-scopes").tBodies[0];
    scopes.replaceChildren();
    for (const scope of report.scopes) {
      for (const [name, counter] of Object.entries(scope.counters)) {
        scopes.appendChild(row([scope.scope, name, counter.used, counter.limit === null ? "-" : counter.limit]));
      }
    }
    const agents = $("operator-agents").tBodies[0];
    agents.replaceChildren();
    for (const agent of report.agents) {
      agents.appendChild(row([agent.name, agent.url, agent.health, agent.latency_ms === null ? "-" : Math.round(agent.latency_ms), agent.last_error || ""]));
    }
  }

  // --- start --------------------------------------------------------------------------------------------

  function refreshAll() {
    say("auth-state", sessionStorage.getItem(TOKEN_KEY) ? "token set for this tab" : "no token");
    listTasks("");
    loadOperator();
  }

  function start() {
    $("tenant").value = sessionStorage.getItem(TENANT_KEY) || "";
    $("auth-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const token = $("token").value.trim();
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      $("token").value = "";
      sessionStorage.setItem(TENANT_KEY, $("tenant").value.trim());
      refreshAll();
    });
    $("forget").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); refreshAll(); });
    $("filters").addEventListener("submit", (event) => { event.preventDefault(); listTasks(""); });
    $("first-page").addEventListener("click", () => listTasks(""));
    $("next-page").addEventListener("click", () => listTasks(view.pageToken));
    $("follow").addEventListener("click", follow);
    $("unfollow").addEventListener("click", stopFollowing);
    $("cancel").addEventListener("click", cancelTask);
    $("send-thought").addEventListener("submit", (event) => { event.preventDefault(); send({ text: $("thought").value }); });
    const select = $("operation");
    for (const name of Object.keys(OPERATIONS)) select.appendChild(el("option", name, { value: name }));
    select.addEventListener("change", operationForm);
    operationForm();
    $("send-operation").addEventListener("submit", (event) => {
      event.preventDefault();
      let request;
      try { request = operationRequest(); } catch (error) { say("send-result", "Not sent: " + error.message); return; }
      send({ data: request, mediaType: "application/json" });
    });
    $("viewer-form").addEventListener("submit", (event) => { event.preventDefault(); drawFrame(); });
    $("viewer-step").addEventListener("click", stepPhase);
    $("viewer-play").addEventListener("click", play);
    $("operator-refresh").addEventListener("click", loadOperator);
    refreshAll();
  }

  window.QuinelingConsole = { OPERATIONS, selectTask, follow, drawFrame, listTasks };
  start();
})();
