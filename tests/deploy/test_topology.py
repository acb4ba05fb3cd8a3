"""The production topology, for real, on one machine (deploy/local/topology.py): three app hosts (gunicorn,
2 gevent workers each, API keys), one Redis host (AOF, ``appendfsync always``), one nginx host running
deploy/nginx.conf, each in its own network namespace on a private bridge. The tests run in order on one
topology and each leaves it whole for the next:

1. a task created on one host is read, subscribed to, continued and canceled on the others, and a ListTasks
   cursor pages across hosts — with our own HTTP calls aimed at each host, and with the official Python and
   JavaScript clients through the balancer (the access log says which host served each request);
2. SIGKILL of one app host under load: clients see only retryable errors, and every acknowledged task is there;
3. SIGKILL and restart of Redis under load: nothing acknowledged is lost, and the service recovers by itself;
4. 100 ms of added latency on every Redis reply: everything stays correct (p50/p99 printed);
5. one app host partitioned from Redis (its packets dropped): its clients get the retryable store error
   within the Redis deadline, never a hang or a 500.

Needs root, iproute2 (`ip netns`, `tc`), redis-server and nginx; without one it skips, naming it and how to get it
(tests/support/tools.py), unless QUINELING_REQUIRE_NETNS is set (CI), when it fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from quineling.auth.keyfile import add_key
from quineling.auth.watch import CHECK_SECONDS
from quineling.settings import Settings
from tests.deploy.conftest import load_topology
from tests.interop.conftest import sdk_unavailable
from tests.interop.test_js_sdk import JS_DIR
from tests.support.sse import parse_sse
from tests.support.tools import NODE_HOW_TO_GET, REQUIRE_INTEROP, REQUIRE_NETNS, require_tool, unavailable

try:
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types.a2a_pb2 import (
        CancelTaskRequest,
        GetTaskRequest,
        ListTasksRequest,
        SendMessageRequest,
        SubscribeToTaskRequest,
        TaskState,
    )
    from google.protobuf import json_format
except ImportError as exc:  # pragma: no cover - the interop extra, which ./dev and CI install
    SDK_MISSING: str | None = f"a2a-sdk is not installed ({exc})"
else:
    SDK_MISSING = None

pytestmark = [pytest.mark.slow]

V1 = {"A2A-Version": "1.0"}
SQUARE_SUM = "[2,3,4] | square | sum | report total"
WAITING, DONE, CANCELED = "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED", "TASK_STATE_CANCELED"
TIMEOUT = 30  # per HTTP request: never reached; every bound below is much shorter
# The longest a request may wait on an unreachable Redis: its read deadline, or a connect deadline and the one
# repeat a failed connect earns (stores/redis/connection.py), whichever is longer, plus scheduling slack.
DEFAULTS = Settings()
STORE_BOUND = (
    max(DEFAULTS.redis_timeout_seconds, 2 * DEFAULTS.redis_connect_timeout_seconds) + 2.0
)  # fmt: skip


# Each tool the topology runs, and how to get it (deploy/local/topology.py checks the same ones before `up`).
TOOLS = {
    "ip": "apt-get install iproute2",
    "tc": "apt-get install iproute2",
    "redis-server": "apt-get install redis-server",
    "nginx": "apt-get install nginx",
}


@pytest.fixture(scope="module")
def topology(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if os.geteuid() != 0:
        unavailable("ip netns (network namespaces) needs root: run the tests as root", REQUIRE_NETNS)
    for tool, how_to_get in TOOLS.items():
        require_tool(tool, how_to_get, REQUIRE_NETNS)
    module = load_topology()
    # The loads below create hundreds of tasks for one principal: above the default 128 a store evicts the
    # oldest finished ones (docs/decisions/), which would read as lost here.
    built = module.Topology(tmp_path_factory.mktemp("topology"), settings={"task_max": "100000"})
    started = time.monotonic()
    try:
        built.up()
        print(f"topology up in {time.monotonic() - started:.1f}s")
        yield built
    finally:
        built.down()
    assert module.run("ip", "netns", "list", check=False).stdout.count(built.prefix) == 0


@dataclass
class Http:
    """Our own HTTP calls (REST binding, and JSON-RPC for the loads), with the operator's API key."""

    token: str
    local: threading.local = field(default_factory=threading.local)

    @property
    def session(self) -> requests.Session:
        if not hasattr(self.local, "session"):
            self.local.session = requests.Session()
            self.local.session.headers.update({"Authorization": f"Bearer {self.token}", **V1})
        session: requests.Session = self.local.session
        return session

    def rest(self, base: str, verb: str, path: str, body: Any = None, **kw: Any) -> requests.Response:
        return self.session.request(verb, f"{base}/a2a/rest{path}", json=body, timeout=TIMEOUT, **kw)

    def rpc(self, base: str, method: str, params: dict[str, Any]) -> requests.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return self.session.post(f"{base}/a2a/jsonrpc", json=body, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def http(topology: Any) -> Http:
    return Http(topology.token)


def message(text: str, **fields: str) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **fields}


def upstream(response: requests.Response) -> str:
    return response.headers.get("X-Quineling-Upstream", "")


def access_log_since(topology: Any, offset: int) -> list[str]:
    text: str = topology.access_log.read_text()
    return text[offset:].splitlines()


def upstreams_in(lines: list[str]) -> Counter[str]:
    return Counter(
        word.split("=", 1)[1] for line in lines for word in line.split() if word.startswith("upstream=")
    )


# --- 1. one task, every host ---------------------------------------------------------------------------------


def test_a_task_moves_between_hosts_and_a_cursor_pages_across_them(topology: Any, http: Http) -> None:
    one, two, three = (topology.app_url(app) for app in topology.apps)
    created = http.rest(one, "POST", "/message:send", {"message": message("")})
    assert created.status_code == 200, created.text
    task = created.json()["task"]
    assert task["status"]["state"] == WAITING
    task_id = task["id"]

    read = http.rest(two, "GET", f"/tasks/{task_id}")
    assert (
        read.status_code == 200 and read.json()["id"] == task_id and read.json()["status"]["state"] == WAITING
    )

    stream = http.rest(three, "POST", f"/tasks/{task_id}:subscribe", stream=True)
    assert stream.status_code == 200 and stream.headers["Content-Type"].startswith("text/event-stream")
    events = parse_sse(stream.iter_content(chunk_size=None))
    kind, first = next(events)
    assert first["task"]["id"] == task_id and first["task"]["status"]["state"] == WAITING

    continued = http.rest(two, "POST", "/message:send", {"message": message("", taskId=task_id)})
    assert continued.status_code == 200, continued.text
    assert continued.json()["task"]["status"]["state"] == WAITING  # asked again: the thought was empty
    assert len(continued.json()["task"]["history"]) > len(task["history"])

    canceled = http.rest(three, "POST", f"/tasks/{task_id}:cancel")
    assert canceled.status_code == 200 and canceled.json()["status"]["state"] == CANCELED
    seen = [event for _, event in events]  # the stream ends with the terminal state
    stream.close()
    states = [event["statusUpdate"]["status"]["state"] for event in seen if "statusUpdate" in event]
    assert states[-1] == CANCELED and WAITING in states, seen  # host three saw host two's continuation

    # A cursor made on one host is good on the others: five tasks in one context, two per page, three hosts.
    context = uuid.uuid4().hex
    made = set()
    for base in (one, two, three, one, two):
        answer = http.rest(base, "POST", "/message:send", {"message": message(SQUARE_SUM, contextId=context)})
        assert answer.status_code == 200, answer.text
        made.add(answer.json()["task"]["id"])
    paged: list[str] = []
    token = ""
    for base in (one, two, three):
        page = http.rest(base, "GET", f"/tasks?contextId={context}&pageSize=2&pageToken={token}")
        assert page.status_code == 200, page.text
        paged += [t["id"] for t in page.json()["tasks"]]
        token = page.json().get("nextPageToken", "")
    assert sorted(paged) == sorted(made) and token == "", (paged, made)

    # Through the balancer, round-robin: consecutive requests go to different hosts.
    served = [upstream(http.rest(topology.balancer_url, "GET", f"/tasks/{task_id}")) for _ in range(6)]
    assert len(set(served)) == 3, served


def test_the_official_python_client_through_the_balancer(topology: Any) -> None:
    if SDK_MISSING:
        sdk_unavailable(SDK_MISSING)
    offset = len(topology.access_log.read_text())

    def request(text: str, **fields: str) -> SendMessageRequest:
        return json_format.ParseDict({"message": message(text, **fields)}, SendMessageRequest())

    async def scenario() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {topology.token}"}
        async with httpx.AsyncClient(headers=headers, timeout=TIMEOUT) as transport:
            config = ClientConfig(
                streaming=True, httpx_client=transport, supported_protocol_bindings=["JSONRPC"]
            )
            client = await ClientFactory(config).create_from_url(topology.balancer_url)
            sent = [event async for event in client.send_message(request(""))]
            task_id = sent[0].task.id
            polled = await client.get_task(GetTaskRequest(id=task_id))
            seen: list[Any] = []

            async def follow() -> None:
                async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                    seen.append(event)

            reading = asyncio.create_task(follow())
            for _ in range(500):  # the subscription's first event (the task), within 10 s
                if seen or reading.done():
                    break
                await asyncio.sleep(0.02)
            assert seen, reading.done() and reading.exception()
            [event async for event in client.send_message(request("", taskId=task_id))]
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            await asyncio.wait_for(reading, 20)
            context = uuid.uuid4().hex
            made = set()
            for _ in range(3):
                events = [
                    event async for event in client.send_message(request(SQUARE_SUM, contextId=context))
                ]
                made.add(events[0].task.id)
            paged: list[str] = []
            token = ""
            while True:
                page = await client.list_tasks(
                    ListTasksRequest(context_id=context, page_size=1, page_token=token)
                )
                paged += [t.id for t in page.tasks]
                token = page.next_page_token
                if not token:
                    break
            return {"polled": polled, "seen": seen, "canceled": canceled, "made": made, "paged": paged}

    out = asyncio.run(scenario())
    assert out["polled"].status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert out["canceled"].status.state == TaskState.TASK_STATE_CANCELED
    assert out["seen"][-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
    assert sorted(out["paged"]) == sorted(out["made"])
    served = upstreams_in(access_log_since(topology, offset))
    assert len(served) == 3, served  # the SDK's calls were spread over all three hosts


def test_the_official_js_client_through_the_balancer(topology: Any) -> None:
    node = require_tool("node", NODE_HOW_TO_GET, REQUIRE_INTEROP)
    if not (JS_DIR / "node_modules" / "@a2a-js" / "sdk").exists():
        sdk_unavailable("@a2a-js/sdk is not installed (run: bash tests/interop/js/install.sh)")
    other = add_key(topology.keys_file, f"other-{uuid.uuid4().hex[:8]}")  # the keys file reaches every host
    written = time.monotonic()
    # Each worker of each host reloads the keys file on its own, at its first request a check interval after
    # its last check: wait until every host knows the new key and that interval has passed since the write,
    # or the balancer may send one of the other principal's calls to a worker that answers it 401.
    for app in topology.apps:
        deadline = time.monotonic() + 15
        while requests.get(f"{topology.app_url(app)}/a2a/rest/tasks?pageSize=1", timeout=5, headers={
            "Authorization": f"Bearer {other}", "A2A-Version": "1.0"
        }).status_code == 401:  # fmt: skip
            assert time.monotonic() < deadline, f"{app} never loaded the new key"
            time.sleep(0.2)
    time.sleep(max(0.0, written + CHECK_SECONDS + 0.25 - time.monotonic()))
    offset = len(topology.access_log.read_text())
    env = {**os.environ, "A2A_TOKEN": topology.token, "A2A_OTHER_TOKEN": other}
    proc = subprocess.run(
        [node, "client.mjs", topology.balancer_url, "bearer", "rest"],
        cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, f"{proc.stderr}\n{proc.stdout}"
    out = json.loads(proc.stdout)
    assert out["created"]["state"] == DONE and out["polled"]["id"] == out["created"]["id"]
    assert out["subscribed"][0] == {"kind": "task", "state": WAITING}
    assert out["subscribed"][-1] == {"kind": "statusUpdate", "state": CANCELED}
    assert out["canceled"]["state"] == CANCELED
    assert out["otherGet"]["isTaskNotFound"], out["otherGet"]
    assert out["otherCancel"]["isTaskNotFound"], out["otherCancel"]
    lines = access_log_since(topology, offset)
    asked = out["canceled"]["id"]
    # The owner's subscribe and cancel (the other principal's cancel, refused, comes after).
    subscribe, cancel = (
        next(line for line in lines if f"/tasks/{asked}:{action} " in line)
        for action in ("subscribe", "cancel")
    )
    # Every host served part of the scenario, and the stream was held by one host while another canceled.
    assert len(upstreams_in(lines)) == 3, lines
    assert upstreams_in([subscribe]) != upstreams_in([cancel]), (subscribe, cancel)


# --- load, and how its answers are judged --------------------------------------------------------------------


@dataclass
class Ledger:
    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[str, str] = field(default_factory=dict)  # task id -> the state it was acknowledged in
    outcomes: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    last_ok: float = 0.0

    def note(self, op: str, outcome: str, seconds: float) -> None:
        with self.lock:
            self.outcomes[f"{op}:{outcome}"] += 1
            self.latencies.setdefault(op, []).append(seconds)
            if outcome == "ok":
                self.last_ok = time.monotonic()


def retryable(details: Any) -> bool:
    return any(
        isinstance(d, dict) and (d.get("metadata") or {}).get("retryable") == "true" for d in details or []
    )


def judge(response: requests.Response) -> tuple[str, Any]:
    """``ok`` with the result, ``retryable`` (nginx's 502/503 when a host is gone, the A2A store error), or
    ``bad`` with what was wrong."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if response.status_code in (502, 503) and not isinstance(payload, dict):
        return "retryable", f"nginx {response.status_code}"
    if not isinstance(payload, dict):
        return "bad", f"HTTP {response.status_code} {response.text[:200]}"
    error = payload.get("error")
    if response.status_code == 200 and error is None:
        return "ok", payload.get("result", payload)
    if isinstance(error, dict) and retryable(error.get("data") or error.get("details")):
        if response.status_code == 503 and not response.headers.get("Retry-After"):
            return "bad", "503 without Retry-After"
        return "retryable", error
    return "bad", f"HTTP {response.status_code} {response.text[:300]}"


def client_loop(
    http: Http, base: Callable[[], str], ledger: Ledger, stop: threading.Event, seed: int
) -> None:
    """Send a task (alternating bindings) and read one acknowledged task back, until ``stop``."""
    n = seed
    while not stop.is_set():
        n += 1
        started = time.monotonic()
        try:
            if n % 2:
                response = http.rpc(base(), "SendMessage", {"message": message(SQUARE_SUM)})
            else:
                response = http.rest(base(), "POST", "/message:send", {"message": message(SQUARE_SUM)})
            outcome, result = judge(response)
        except requests.ConnectionError as exc:
            outcome, result = "retryable", repr(exc)
        ledger.note("send", outcome, time.monotonic() - started)
        if outcome == "bad":
            ledger.violations.append(f"send: {result}")
        elif outcome == "ok":
            with ledger.lock:
                ledger.acked[result["task"]["id"]] = result["task"]["status"]["state"]
            started = time.monotonic()
            try:
                read_outcome, got = judge(http.rest(base(), "GET", f"/tasks/{result['task']['id']}"))
            except requests.ConnectionError as exc:
                read_outcome, got = "retryable", repr(exc)
            ledger.note("get", read_outcome, time.monotonic() - started)
            if read_outcome == "bad" or (read_outcome == "ok" and got["status"]["state"] != DONE):
                ledger.violations.append(f"get: {got}")


def under_load(http: Http, base: Callable[[], str], action: Callable[[], None], *, clients: int = 4,
               before: float = 1.5, after: float = 2.0) -> Ledger:  # fmt: skip
    """Run ``clients`` client loops; ``action`` after ``before`` seconds; stop ``after`` seconds later."""
    ledger, stop = Ledger(), threading.Event()
    threads = [
        threading.Thread(target=client_loop, args=(http, base, ledger, stop, seed)) for seed in range(clients)
    ]
    for thread in threads:
        thread.start()
    try:
        time.sleep(before)
        action()
        time.sleep(after)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=TIMEOUT + 5)
    assert not any(thread.is_alive() for thread in threads)
    return ledger


def assert_all_acknowledged_there(http: Http, base: str, ledger: Ledger) -> None:
    missing = {}
    for task_id, state in ledger.acked.items():
        response = http.rest(base, "GET", f"/tasks/{task_id}")
        if response.status_code != 200 or response.json()["status"]["state"] != state:
            missing[task_id] = f"{response.status_code} {response.text[:200]}"
    assert missing == {}, (
        f"{len(missing)} of {len(ledger.acked)} acknowledged tasks: {list(missing.items())[:3]}"
    )


# --- 2. an app host dies ----------------------------------------------------------------------------------


def test_killing_an_app_host_under_load_costs_only_retryable_errors(topology: Any, http: Http) -> None:
    balancer = topology.balancer_url
    # A stream held open through the balancer: the host that holds it is the one to kill.
    task = http.rest(balancer, "POST", "/message:send", {"message": message("")}).json()["task"]
    stream = http.rest(balancer, "POST", f"/tasks/{task['id']}:subscribe", stream=True)
    hosts = {
        f"{topology.address(app)}:{topology.app_url(app).rsplit(':', 1)[1]}": app for app in topology.apps
    }
    victim = hosts[upstream(stream)]
    events = parse_sse(stream.iter_content(chunk_size=None))
    assert next(events)[1]["task"]["status"]["state"] == WAITING

    ledger = under_load(http, lambda: balancer, lambda: topology.kill(victim))
    print(f"kill {victim}: {dict(sorted(ledger.outcomes.items()))}")
    assert ledger.violations == [], ledger.violations[:5]
    assert ledger.outcomes["send:ok"] > 10, ledger.outcomes
    assert_all_acknowledged_there(http, balancer, ledger)

    # The stream ended with its host (a cut connection, which a client answers by subscribing again); a new
    # one through the balancer reaches a live host and sees the task go on.
    try:
        after = [event for _, event in events]
    except requests.RequestException:
        after = []
    assert all("error" not in event for event in after), after
    again = http.rest(balancer, "POST", f"/tasks/{task['id']}:subscribe", stream=True)
    assert hosts[upstream(again)] != victim
    resumed = parse_sse(again.iter_content(chunk_size=None))
    assert next(resumed)[1]["task"]["status"]["state"] == WAITING
    assert http.rest(balancer, "POST", f"/tasks/{task['id']}:cancel").json()["status"]["state"] == CANCELED
    states = [e["statusUpdate"]["status"]["state"] for _, e in resumed if "statusUpdate" in e]
    assert states == [CANCELED], states
    topology.start_app(victim)  # back for the next tests; nginx sends it requests again after fail_timeout


# --- 3. Redis restarts ------------------------------------------------------------------------------------


def test_restarting_redis_loses_nothing_acknowledged_and_the_service_recovers(
    topology: Any, http: Http
) -> None:
    assert "aof_enabled:1" in topology.redis_cli("info", "persistence")
    restarted = {}

    def crash_and_restart() -> None:
        topology.kill("redis")  # SIGKILL: whatever Redis acknowledged must already be in the AOF
        time.sleep(1.0)
        topology.start_redis()
        restarted["at"] = time.monotonic()

    ledger = under_load(http, lambda: topology.balancer_url, crash_and_restart, after=3.0)
    print(f"redis restart: {dict(sorted(ledger.outcomes.items()))}")
    assert ledger.violations == [], ledger.violations[:5]
    assert ledger.outcomes["send:retryable"] > 0, ledger.outcomes  # the outage was felt
    assert ledger.last_ok > restarted["at"], "no request succeeded after Redis came back"
    assert_all_acknowledged_there(http, topology.balancer_url, ledger)
    # Recovered by itself, on every host: nobody restarted the apps.
    for app in topology.apps:
        for _ in range(3):  # several greenlets' connections, each reconnected after the restart
            outcome, _ = judge(
                http.rest(topology.app_url(app), "POST", "/message:send", {"message": message(SQUARE_SUM)})
            )
            assert outcome == "ok", app


# --- 4. a slow network to Redis ---------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def test_100ms_to_redis_stays_correct(topology: Any, http: Http) -> None:
    topology.add_latency(100)
    try:
        started = time.monotonic()
        ledger = under_load(http, lambda: topology.balancer_url, lambda: None, before=4.0, after=0.0)
        # A stream across hosts under the same latency: subscribe on one, continue and cancel on others.
        one, two, three = (topology.app_url(app) for app in topology.apps)
        task = http.rest(one, "POST", "/message:send", {"message": message("")}).json()["task"]
        stream = http.rest(two, "POST", f"/tasks/{task['id']}:subscribe", stream=True)
        events = parse_sse(stream.iter_content(chunk_size=None))
        assert next(events)[1]["task"]["status"]["state"] == WAITING
        assert (
            http.rest(three, "POST", "/message:send", {"message": message("", taskId=task["id"])}).status_code
            == 200
        )
        assert http.rest(one, "POST", f"/tasks/{task['id']}:cancel").json()["status"]["state"] == CANCELED
        states = [e["statusUpdate"]["status"]["state"] for _, e in events if "statusUpdate" in e]
        stream.close()
        assert states[-1] == CANCELED and WAITING in states, states
        elapsed = time.monotonic() - started
    finally:
        topology.clear_latency()
    report = {
        op: f"n={len(v)} p50={statistics.median(v) * 1000:.0f}ms p99={percentile(v, 0.99) * 1000:.0f}ms"
        for op, v in ledger.latencies.items()
    }
    print(f"100 ms to Redis ({elapsed:.1f}s): {report}; {dict(ledger.outcomes)}")
    assert ledger.violations == [] and set(ledger.outcomes) == {"send:ok", "get:ok"}, ledger.outcomes
    assert min(ledger.latencies["send"]) > 0.1  # the latency was really there
    assert_all_acknowledged_there(http, topology.balancer_url, ledger)


# --- 5. one host cut off from Redis -------------------------------------------------------------------------


def test_a_host_partitioned_from_redis_answers_the_retryable_error_in_bounded_time(
    topology: Any, http: Http
) -> None:
    cut = topology.apps[0]
    base = topology.app_url(cut)
    known = http.rest(base, "POST", "/message:send", {"message": message(SQUARE_SUM)}).json()["task"]["id"]
    waiting = http.rest(base, "POST", "/message:send", {"message": message("")}).json()["task"]["id"]
    topology.partition(cut)
    answers: list[tuple[str, str, float]] = []
    ready: list[int] = []

    def call(name: str, do: Callable[[], requests.Response]) -> None:
        started = time.monotonic()
        try:
            outcome, detail = judge(do())
        except requests.RequestException as exc:
            outcome, detail = "bad", repr(exc)
        answers.append((name, outcome if outcome != "bad" else f"bad {detail}", time.monotonic() - started))

    calls = {
        "send-rest": lambda: http.rest(base, "POST", "/message:send", {"message": message(SQUARE_SUM)}),
        "send-rpc": lambda: http.rpc(base, "SendMessage", {"message": message(SQUARE_SUM)}),
        "list": lambda: http.rest(base, "GET", "/tasks?pageSize=5"),
        "get": lambda: http.rest(base, "GET", f"/tasks/{known}"),
        "cancel": lambda: http.rest(base, "POST", f"/tasks/{waiting}:cancel"),
        "via-balancer": lambda: http.rest(topology.balancer_url, "GET", "/tasks?pageSize=5"),
    }
    try:
        threads = [threading.Thread(target=call, args=item) for item in calls.items()]
        threads.append(
            threading.Thread(
                target=lambda: ready.append(requests.get(base + "/readyz", timeout=TIMEOUT).status_code)
            )
        )
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=TIMEOUT)
    finally:
        topology.heal(cut)
    print(f"partition of {cut} (bound {STORE_BOUND:g}s): {answers}; readyz {ready}")
    assert len(answers) == len(calls)
    assert [a for a in answers if a[1] not in ("ok", "retryable")] == []
    assert max(seconds for *_, seconds in answers) < STORE_BOUND, answers
    assert {name for name, outcome, _ in answers if outcome == "retryable"} >= {"send-rest", "send-rpc"}
    assert ready == [503]  # and the balancer's health checks, or Kubernetes', take it out
    topology.wait_ready(cut, timeout=20)  # healed: the host serves again without a restart
    assert judge(http.rest(base, "POST", "/message:send", {"message": message(SQUARE_SUM)}))[0] == "ok"


def test_every_process_and_namespace_is_the_topologys(topology: Any) -> None:
    """The helpers above touch only what the topology made: every process in its namespaces is its own."""
    for host in topology.hosts:
        for pid in topology.pids(host):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            assert any(word in cmdline for word in ("gunicorn", "redis-server", "nginx")), cmdline
