"""The command line against a live Quineling agent (gunicorn on loopback), through the same ``main()`` the
console script calls, in process with a clean environment (tests.cli.support.cli_in_process: a subprocess costs
about a second of start-up each); the tests of line-by-line flushing run ``python -m quineling`` as a real
subprocess, as a script does. Each test names the official CLI requirement IDs it backs (docs/cli.md, "Compliance")."""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from tests.cli.support import Run, clean_env, cli_in_process, spawn
from tests.client.proxy import Seen, proxy
from tests.support.live import LiveServer, live_server

pytestmark = pytest.mark.slow

SQUARE_SUM = "[2,3,4] | square | sum | report total"
INCOMPLETE = "[1,2,3] | sum"  # no report stage: the task waits for input
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
Q = Callable[..., Run]


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server() as live:
        yield live


@pytest.fixture
def q(server: LiveServer, tmp_path: Path) -> Q:
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(home)

    def run(*args: str, agent: str | None = server.base_url, stdin: str | None = None, **extra: str) -> Run:
        prefix = ["-a", agent] if agent else []
        return cli_in_process(*args, *prefix, cwd=tmp_path, env={**env, **extra}, stdin=stdin)

    return run


def test_card_get_from_a_host_a_url_and_a_file(q: Q, server: LiveServer, tmp_path: Path) -> None:
    """CARD_GET_001, TX_001, TX_002, TX_004, OUT_005."""
    host = server.base_url.removeprefix("http://")
    text = q("card", "get", agent=host)  # a bare host: loopback is http, the well-known path is appended
    fields = text.fields()
    assert text.code == 0 and fields["Name"] == "Quineling" and fields["Streaming"] == "yes"
    assert fields["Selected-Interface"] == f"JSONRPC 1.0 {server.base_url}/a2a/jsonrpc"  # the card's first
    assert text.out.count("Interface: ") == 4 and not CONTROL.search(text.out)
    card = q("card", "get", "-o", "json", agent=server.url("/.well-known/agent-card.json"))
    assert card.code == 0 and card.json()["name"] == "Quineling" and "supportedInterfaces" in card.json()
    path = tmp_path / "card.json"
    path.write_text(json.dumps(card.json()))
    for ref in (str(path), f"file://{path}"):
        assert q("card", "get", "--transport", "HTTP+JSON", agent=ref).fields()["Selected-Interface"] == (
            f"HTTP+JSON 1.0 {server.base_url}/a2a/rest"
        )
    # Preference order is the caller's; a binding the card lacks is skipped; none offered: the card's order.
    chosen = q("card", "get", "--transport", "GRPC", "--transport", "http+json", "--transport", "JSONRPC")
    assert chosen.fields()["Selected-Interface"].startswith("HTTP+JSON 1.0")
    assert q("card", "get", "--transport", "GRPC").fields()["Selected-Interface"].startswith("JSONRPC 1.0")


def test_card_validate_and_card_errors(q: Q, server: LiveServer, tmp_path: Path) -> None:
    """CARD_GET_002, EXIT_001, OUT_004."""
    good = q("card", "get", "--validate")
    assert good.code == 0 and good.fields()["Valid"] == "yes"
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "name": "x",
                "supportedInterfaces": [
                    {
                        "url": server.url("/a2a/jsonrpc"),
                        "protocolBinding": "JSONRPC",
                        "protocolVersion": "1.0",
                    }
                ],
            }
        )
    )
    invalid = q("card", "get", "--validate", "-o", "json", agent=str(bad))
    assert invalid.code == 1 and invalid.json()["error"]["code"] == "A2ACLI_ERR_CARD_INVALID"
    assert "skills: required" in invalid.json()["error"]["message"]
    missing = q("card", "get", "-o", "json", agent=server.url("/nothing/card.json"))
    assert missing.code == 3 and missing.json()["error"]["code"] == "A2ACLI_ERR_CARD_NOT_FOUND"
    gone = q("card", "get", "-o", "json", agent="http://127.0.0.1:9/")
    assert gone.code == 3 and gone.json()["error"]["code"] in (
        "A2ACLI_ERR_CARD_NOT_FOUND",
        "A2ACLI_ERR_UNREACHABLE",
    )
    none = q("card", "get", agent=None)
    assert none.code == 2 and "Error: A2ACLI_ERR_USAGE" in none.err


def test_send_blocks_and_renders_the_artifact(q: Q) -> None:
    """SEND_001, SEND_002 (blocking), SEND_004, OUT_001, OUT_002, OUT_005, INTERACT_004."""
    done = q("send", SQUARE_SUM, "-o", "json")
    document = done.json()  # exactly one document: SendMessageResponse with its task
    task = document["task"]
    assert done.code == 0 and set(document) == {"task"} and task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["id"] and task["contextId"] and task["artifacts"][0]["artifactId"] == "quineling-result"
    text = q("send", "--text", SQUARE_SUM)
    fields = text.fields()
    assert (
        text.code == 0
        and fields["State"] == "TASK_STATE_COMPLETED"
        and fields["Task-Id"]
        and fields["Context-Id"]
    )
    # By default what a person reads: the result's status and artifact id, not the lifeform's genome.
    assert fields["Result-Status"] == "created" and fields["Result-Artifact-Id"].startswith("sha256:")
    assert len(text.out.splitlines()) < 15 and not CONTROL.search(text.out)
    assert text.err == ""  # a completed task: nothing to warn about
    whole = q("send", "--text", SQUARE_SUM, "--verbose")
    assert (
        "Artifact-Data:\n{\n" in whole.out and '"status": "created"' in whole.out and '"genomes"' in whole.out
    )


def test_an_interrupted_task_stops_the_wait_and_is_continued_by_task_id(q: Q) -> None:
    """TASK_POLL_003, EXIT_002, INTERACT_002, INTERACT_004, SEND_006 (--data -), OUT_001."""
    waiting = q("send", INCOMPLETE)
    fields = waiting.fields()
    assert waiting.code == 0 and fields["State"] == "TASK_STATE_INPUT_REQUIRED"  # exit 0: the CLI did its job
    assert f'send --task-id {fields["Task-Id"]} "<reply>"' in fields["Resume"]
    assert "TASK_STATE_INPUT_REQUIRED" in waiting.err  # the paused outcome is named on stderr
    reply = json.dumps({"operation": "create", "thought": SQUARE_SUM})
    done = q("send", "--task-id", fields["Task-Id"], "--data", "-", "-o", "json", stdin=reply)
    assert done.code == 0 and done.json()["task"]["id"] == fields["Task-Id"]
    assert done.json()["task"]["contextId"] == fields["Context-Id"]
    assert done.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_rejected_task_id_fails_and_starts_no_task(q: Q) -> None:
    """INTERACT_002, INTERACT_003, OUT_004."""
    before = q("task", "list", "-o", "json").json()["totalSize"]
    rejected = q("send", "--task-id", "no-such-task", SQUARE_SUM, "-o", "json")
    error = rejected.json()["error"]
    assert rejected.code == 1 and error["code"] == "TaskNotFoundError" and "--debug" in error["hint"]
    assert q("task", "list", "-o", "json").json()["totalSize"] == before


def test_context_id_groups_a_new_task(q: Q) -> None:
    """INTERACT_001, INTERACT_003."""
    first = q("send", SQUARE_SUM, "-o", "json").json()["task"]
    second = q("send", SQUARE_SUM, "--context-id", first["contextId"], "-o", "json").json()["task"]
    assert second["contextId"] == first["contextId"] and second["id"] != first["id"]
    listed = q("task", "list", "--context-id", first["contextId"], "-o", "json").json()
    assert {t["id"] for t in listed["tasks"]} == {first["id"], second["id"]}


def test_async_returns_the_identifiers(q: Q) -> None:
    """SEND_002 (--async and its aliases), OUT_006."""
    for flag in ("--async", "--return-immediately", "--no-wait"):
        result = q("send", SQUARE_SUM, flag, "-o", "json")
        assert result.code == 0 and result.json()["task"]["id"] and result.json()["task"]["contextId"]
    contradiction = q("send", SQUARE_SUM, "--async", "--wait")
    assert contradiction.code == 2


def test_stream_is_jsonl_ending_with_the_terminal_event(q: Q) -> None:
    """SEND_003, OUT_003, OUT_005 (text under --stream restates ids and state)."""
    streamed = q("send", INCOMPLETE, "--stream", "-o", "json")
    lines = streamed.lines()
    assert streamed.code == 0 and len(lines) >= 2 and all(len(line) == 1 for line in lines)
    assert set(lines[0]) == {"task"}  # the first event is the Task
    assert lines[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert all("\n" not in line for line in streamed.out.splitlines())
    text = q("send", SQUARE_SUM, "--stream")
    tail = text.out.rstrip("\n").split("\n\n")[-1]
    assert text.code == 0 and "Task-Id: " in tail and "State: TASK_STATE_COMPLETED" in tail
    # --stream is a typed flag only: the variable is ignored and the output stays one document.
    one = q("send", SQUARE_SUM, "-o", "json", A2ACLI_STREAM="1")
    assert set(one.json()) == {"task"}


def test_task_get_wait_history_and_download(q: Q, tmp_path: Path) -> None:
    """TASK_GET_001, TASK_POLL_001, DOWNLOAD_001, DEFAULT_001 (concise detail)."""
    task = q("send", SQUARE_SUM, "-o", "json").json()["task"]
    got = q("task", "get", task["id"], "-o", "json").json()
    assert got["id"] == task["id"] and got["artifacts"] == task["artifacts"] and got["history"]
    assert "history" not in q("task", "get", task["id"], "--history", "0", "-o", "json").json()
    waited = q("task", "get", "--wait", task["id"])
    assert (
        waited.code == 0
        and waited.fields()["State"] == "TASK_STATE_COMPLETED"
        and waited.fields()["Result-Status"] == "created"
    )
    folder = tmp_path / "out"
    folder.mkdir()
    saved = q("task", "download", task["id"], "--dir", str(folder))
    assert saved.code == 0 and saved.fields()["Files"] == "1"
    data = json.loads((folder / "quineling-result-0.json").read_text())
    assert data["result"]["status"] == "created"
    again = q("task", "download", task["id"], "--dir", str(folder))
    assert again.code == 2 and "--force" in again.err  # never overwrites silently


def test_cancel_is_idempotent_and_errors_match_across_bindings(q: Q) -> None:
    """TASK_CANCEL_001, OUT_004, TX_004."""
    task = q("send", INCOMPLETE, "-o", "json").json()["task"]
    for _ in range(2):
        canceled = q("task", "cancel", task["id"])
        assert canceled.code == 0 and canceled.fields()["State"] == "TASK_STATE_CANCELED"
    done = q("send", SQUARE_SUM, "-o", "json").json()["task"]
    results = [
        q("task", op, ident, "--transport", binding, "-o", "json")
        for binding in ("JSONRPC", "HTTP+JSON")
        for op, ident in (("cancel", done["id"]), ("get", "nope"))
    ]
    codes = [(r.code, r.json()["error"]["code"], r.json()["error"]["a2aCode"]) for r in results]
    assert codes == [(1, "TaskNotCancelableError", -32002), (1, "TaskNotFoundError", -32001)] * 2


def test_task_list_pages_and_filters(q: Q) -> None:
    """TASK_LIST_001."""
    context = q("send", INCOMPLETE, "-o", "json").json()["task"]["contextId"]
    for _ in range(2):
        q("send", INCOMPLETE, "--context-id", context)
    q("send", SQUARE_SUM, "--context-id", context)
    page = q(
        "task",
        "list",
        "--context-id",
        context,
        "--status",
        "input-required",
        "--page-size",
        "2",
        "-o",
        "json",
    )
    first = page.json()
    assert len(first["tasks"]) == 2 and first["nextPageToken"]
    assert {t["status"]["state"] for t in first["tasks"]} == {"TASK_STATE_INPUT_REQUIRED"}
    rest = q(
        "task",
        "list",
        "--context-id",
        context,
        "--status",
        "TASK_STATE_INPUT_REQUIRED",
        "--page-token",
        first["nextPageToken"],
        "-o",
        "json",
    ).json()
    assert len(rest["tasks"]) == 1 and not rest["nextPageToken"]
    every = q("task", "list", "--context-id", context, "--all", "--page-size", "1", "--stream", "-o", "json")
    assert len(every.lines()) == 4  # one Task per line, over every page
    text = q("task", "list", "--context-id", context, "--page-size", "1")
    assert text.fields()["Next-Page-Token"] and "--page-token" in text.fields()["Next-Page"]
    # The printed Next-Page command, run as printed, continues the same filtered listing.
    filtered = q("task", "list", "--context-id", context, "--status", "input-required", "--page-size", "2")
    printed = shlex.split(filtered.fields()["Next-Page"])
    assert printed[0] == "quineling"
    following = q(*printed[1:], agent=None)
    assert following.code == 0, following.err
    assert following.out.count("State: TASK_STATE_INPUT_REQUIRED") == 1 and "COMPLETED" not in following.out


def test_subscribe_follows_a_task_to_its_end(q: Q, server: LiveServer, tmp_path: Path) -> None:
    """TASK_SUBSCRIBE_001, VER_003 (capability read first), OUT_003 (flushed line by line)."""
    task = q("send", INCOMPLETE, "-o", "json").json()["task"]
    command = ["task", "subscribe", task["id"], "--stream", "-o", "json", "-a", server.base_url]
    with spawn(*command, cwd=tmp_path, env=clean_env(tmp_path)) as follower:
        assert follower.stdout is not None
        first = json.loads(follower.stdout.readline())  # arrives before the task changes: flushed at once
        assert first["task"]["id"] == task["id"]
        requests.post(
            server.url(f"/a2a/rest/tasks/{task['id']}:cancel"), headers={"A2A-Version": "1.0"}, timeout=5
        )
        rest = [json.loads(line) for line in follower.stdout.read().splitlines()]
        assert follower.wait(timeout=30) == 0
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    ended = q("task", "subscribe", task["id"], "-o", "json")
    assert ended.code == 1 and ended.json()["error"]["code"] == "UnsupportedOperationError"


def test_push_config_is_refused_from_the_card(q: Q) -> None:
    """PUSH_001 (the not-supported path), VER_003: no request leaves for an agent without push."""
    for args in (
        ["create", "t", "--url", "https://example.com/hook"],
        ["get", "t", "c"],
        ["list", "t"],
        ["delete", "t", "c"],
    ):
        refused = q("task", "push-config", *args, "-o", "json")
        assert refused.code == 1 and refused.json()["error"]["code"] == "PushNotificationNotSupportedError"


def test_v03_only_by_explicit_opt_in(q: Q, server: LiveServer, tmp_path: Path) -> None:
    """VER_001 (never below 1.0 without opt-in), TX_002."""
    card = q("card", "get", "-o", "json").json()
    legacy = dict(
        card, supportedInterfaces=[i for i in card["supportedInterfaces"] if i["protocolVersion"] == "0.3"]
    )
    path = tmp_path / "v03.json"
    path.write_text(json.dumps(legacy))
    refused = q("send", SQUARE_SUM, "-o", "json", agent=str(path))
    assert refused.code == 1 and refused.json()["error"]["code"] == "A2ACLI_ERR_CARD_INVALID"
    spoken = q("send", SQUARE_SUM, "--a2a-version", "0.3", "-o", "json", agent=str(path))
    assert spoken.code == 0 and spoken.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    mismatch = q(
        "send", SQUARE_SUM, "--a2a-version", "0.3", "-o", "json"
    )  # the card offers 1.0: not silently
    assert mismatch.code == 1 and mismatch.json()["error"]["code"] == "VersionNotSupportedError"


def test_the_interfaces_tenant_goes_into_every_request(q: Q, server: LiveServer, tmp_path: Path) -> None:
    """TX_003."""
    card = q("card", "get", "-o", "json").json()
    card["supportedInterfaces"] = [dict(i, tenant="acme") for i in card["supportedInterfaces"][:2]]
    path = tmp_path / "tenant.json"
    path.write_text(json.dumps(card))
    for binding in ("JSONRPC", "HTTP+JSON"):
        task = q("send", SQUARE_SUM, "--transport", binding, "-o", "json", agent=str(path)).json()["task"]
        in_tenant = requests.get(
            server.url(f"/a2a/rest/acme/tasks/{task['id']}"), headers={"A2A-Version": "1.0"}
        )
        untenanted = requests.get(server.url(f"/a2a/rest/tasks/{task['id']}"), headers={"A2A-Version": "1.0"})
        assert in_tenant.status_code == 200 and untenanted.status_code == 404


def test_conformance_smoke_check(q: Q) -> None:
    """CONFORM_001."""
    checked = q("conformance", "-o", "json")
    results = {c["check"]: c["result"] for c in checked.json()["checks"]}
    assert checked.code == 0 and checked.json()["passed"] is True
    assert results == {
        "card": "pass",
        "version": "pass",
        "send": "pass",
        "get": "pass",
        "list": "pass",
        "get-unknown": "pass",
        "cancel-unknown": "pass",
        "stream": "pass",
    }


def test_quineling_shortcuts_print_the_result(q: Q, tmp_path: Path) -> None:
    """Quineling extras: create and op."""
    created = q("create", SQUARE_SUM, "-o", "json").json()
    assert created["status"] == "created" and created["artifact"]["id"].startswith("sha256:")
    ran = q("op", "run", "--field", f"artifactId={created['artifact']['id']}", "-o", "json")
    assert ran.code == 0 and ran.json()["outputs"] == {"total": 29}
    request = tmp_path / "req.json"
    request.write_text(json.dumps({"artifactId": created["artifact"]["id"]}))
    text = q("op", "run", "--data", str(request))
    assert text.code == 0 and text.fields()["State"] == "TASK_STATE_COMPLETED"
    assert text.fields()["Outputs"] == '{"total": 29}' and "trace" not in text.out  # the concise view
    made = q("create", SQUARE_SUM)
    assert made.fields()["Result-Status"] == "created" and len(made.out.splitlines()) < 15
    assert '"genomes"' in q("create", SQUARE_SUM, "--verbose").out  # the whole result on request
    missing = q("op", "inspect", "--field", "artifactId=sha256:" + "0" * 64, "-o", "json")
    assert missing.code == 1 and missing.json()["error"]["code"] == "QUINELING_NOT_FOUND"


def test_agents_registry_in_the_shared_store(q: Q, server: LiveServer, redis_store_url: str) -> None:
    """Quineling extras: agents add|list|check|remove, kept in Redis or a Redis Cluster (QUINELING_STORE_URL)."""
    store = {"QUINELING_STORE_URL": redis_store_url}
    refused = q("agents", "list", agent=None)
    assert refused.code == 2 and "QUINELING_STORE_URL" in refused.err
    added = q("agents", "add", server.base_url, agent=None, **store)
    assert added.code == 0 and added.fields()["Name"] == "Quineling", added.err
    try:
        by_name = q("card", "get", agent="Quineling", **store)  # a registered agent's name works with -a
        assert by_name.code == 0 and by_name.fields()["Name"] == "Quineling", by_name.err
        listed = q("agents", "list", "--skill", "ranch", "-o", "json", agent=None, **store).json()["agents"]
        assert server.base_url in [a["url"] for a in listed]
        assert (
            q("agents", "list", "--skill", "no-such-skill", "-o", "json", agent=None, **store).json()[
                "agents"
            ]
            == []
        )
        checked = q("agents", "check", server.base_url, "-o", "json", agent=None, **store).json()["agents"]
        assert (
            checked[0]["health"] == "healthy"
            and checked[0]["lastSeen"]
            and checked[0]["latencyMs"] is not None
        )
    finally:
        removed = q("agents", "remove", server.base_url, agent=None, **store)
    assert removed.code == 0
    assert q("agents", "remove", server.base_url, agent=None, **store).code == 3


def test_send_with_an_idempotency_key_runs_once(q: Q) -> None:
    """Beyond the official CLI: --idempotency-key (docs/cli.md, "Retries")."""
    key = f"cli-{os.getpid()}-{time.monotonic_ns()}"
    first = q("send", SQUARE_SUM, "--idempotency-key", key, "-o", "json")
    again = q("send", SQUARE_SUM, "--idempotency-key", key, "-o", "json")
    assert first.code == 0 and again.code == 0
    assert again.json()["task"]["id"] == first.json()["task"]["id"]  # answered from the key, nothing re-run
    other = q("send", INCOMPLETE, "--idempotency-key", key, "-o", "json")
    assert other.code == 1 and "IDEMPOTENCY_KEY_REUSED" in other.out
    fresh = q("send", SQUARE_SUM, "-o", "json")  # no flag: a key of its own, never the previous one
    assert fresh.code == 0 and fresh.json()["task"]["id"] != first.json()["task"]["id"]


def test_subscribe_resumes_a_cut_stream_with_last_event_id(q: Q, server: LiveServer, tmp_path: Path) -> None:
    """Beyond the official CLI: ``task subscribe`` resumes by id on this server (docs/cli.md)."""
    task = q("send", INCOMPLETE, "-o", "json").json()["task"]
    cut: list[int] = []

    def cut_first(n: int, seen: Seen) -> int | None:  # the first subscription breaks after its first event
        if seen.path.endswith(":subscribe") and not cut:
            cut.append(n)
            return 1
        return None

    with proxy(server.base_url, cut_first) as front:
        card = requests.get(
            server.url("/.well-known/agent-card.json"), headers={"A2A-Version": "1.0"}, timeout=5
        )
        raw = card.json()
        raw["supportedInterfaces"] = [{**i, "url": i["url"].replace(server.base_url, front.base)}
                                      for i in raw["supportedInterfaces"]]  # fmt: skip
        path = tmp_path / "proxied-card.json"
        path.write_text(json.dumps(raw))
        command = ["task", "subscribe", task["id"], "--stream", "-o", "json", "--transport", "HTTP+JSON", "-a",
                   str(path)]  # fmt: skip
        with spawn(*command, cwd=tmp_path, env=clean_env(tmp_path)) as follower:
            assert follower.stdout is not None
            first = json.loads(follower.stdout.readline())
            deadline = time.monotonic() + 15
            while (
                len([s for s in front.seen if s.path.endswith(":subscribe")]) < 2
                and time.monotonic() < deadline
            ):
                time.sleep(0.05)
            requests.post(server.url(f"/a2a/rest/tasks/{task['id']}:cancel"), headers={"A2A-Version": "1.0"},
                          timeout=5)  # fmt: skip
            rest = [json.loads(line) for line in follower.stdout.read().splitlines()]
            assert follower.wait(timeout=30) == 0
        resumed = [s for s in front.seen if s.path.endswith(":subscribe")]
    assert first["task"]["id"] == task["id"]
    assert len(resumed) == 2 and resumed[1].header("Last-Event-ID") and not resumed[0].header("Last-Event-ID")
    assert [line["statusUpdate"]["status"]["state"] for line in rest] == ["TASK_STATE_CANCELED"]  # no repeat


def test_op_frame_svg_writes_the_viewers_picture(q: Q, tmp_path: Path) -> None:
    """Quineling extras: op frame --svg draws the frame it printed, path for path as frame_svg (and the console's
    viewer) draw it; only the frame operations take --svg."""
    from quineling.runtime.frame_svg import ridge_paths

    lifeform = q("create", SQUARE_SUM, "-o", "json").json()["artifact"]["id"]
    picture = tmp_path / "body.svg"
    drawn = q(
        "op",
        "frame",
        "--field",
        f"artifactId={lifeform}",
        "--field",
        "phase=0.25",
        "--svg",
        str(picture),
        "-o",
        "json",
    )
    assert drawn.code == 0, drawn.err
    svg = picture.read_text()
    assert svg.startswith("<svg") and f"{lifeform} at phase 0.25" in svg
    paths = dict(re.findall(r'<path id="([^"]+)" d="([^"]+)"', svg))
    assert paths == ridge_paths(drawn.json()) and len(paths) == len(drawn.json()["nodeIds"]) + 1
    refused = q("op", "run", "--field", f"artifactId={lifeform}", "--svg", str(tmp_path / "no.svg"))
    assert refused.code == 2 and "--svg" in refused.err and not (tmp_path / "no.svg").exists()
