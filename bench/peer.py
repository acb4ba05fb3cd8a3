"""Side by side with the official JS SDK (``./dev bench``, ``--only peer`` / ``--only rss``).

Next to this server it starts ``bench/js_agent.mjs`` — the official ``@a2a-js/sdk`` 1.3.0 with
DefaultRequestHandler, InMemoryTaskStore, its express JSON-RPC handler and an executor that returns one
fixed artifact — and the minimal Flask baseline (bench/baseline_app.py), all with a bearer token required
(this server: an API keys file, as users deploy it). The same load generator drives all of them: wrk
(Debian's package) with bench/wrk.lua, keep-alive connections, every reply checked. Rounds interleave the
servers (A, B, baseline, A, B, …) per scenario, so a machine that gets busier or quieter favours none.

Per scenario and server: requests/s, p50/p99 latency, server CPU per request (the process tree's utime +
stime from /proc over the measured window ÷ requests), the load generator's own CPU per request (so it can be
seen not to be the bottleneck) and the ratio to the JS SDK from the same round. Store round trips per
request are counted in-process (the store's own counter, no MONITOR) for the same requests.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import probes  # noqa: E402 - needs the repository root on the path

JS_MODULES = ROOT / "tests" / "interop" / "js" / "node_modules"
WRK_SCRIPT = ROOT / "bench" / "wrk.lua"
SQUARES = "[2,3,4] | square | sum | report total"
TOKEN = "qk_bench" + "x" * 40  # a fixed bearer token for every server under test, loopback only

# scenario -> (wrk scenario, label); the JS SDK and the baseline get the same bytes and ignore the operation.
SCENARIOS = {
    "create": "SendMessage(create, retained)",
    "create_new": "SendMessage(create, new sources)",
    "run": "SendMessage(run)",
    "get": "GetTask",
    "list": "ListTasks(page 50)",
    "stream": "SendStreamingMessage",
    "mix": "mix 70% get/20% run/10% create",
}


@dataclass
class Server:
    name: str
    port: int
    pid: int  # the process whose tree is measured
    task_id: str = ""
    artifact_id: str = ""
    notes: dict[str, Any] = field(default_factory=dict)
    prefix: str = ""  # this server's store key prefix (a shared cluster is cleaned by prefix, never flushed)
    store_pids: list[int] = field(default_factory=list)  # the local Redis servers it uses (their CPU too)


def local_store_pids(store_url: str) -> list[int]:
    """The processes of the Redis server(s) behind ``store_url`` when they run on this machine (their
    ``INFO server`` process id is a live process here), so a row can say what the store spent on it; none
    for the memory store or a remote Redis."""
    import redis

    from stores.redis.cluster_url import cluster_auth, cluster_hosts

    if store_url.startswith(("redis+cluster://", "rediss+cluster://")):
        auth = cluster_auth(store_url)
        clients = [redis.Redis(host=host, port=port, **auth) for host, port in cluster_hosts(store_url)]
    elif store_url.startswith(("redis://", "rediss://", "unix://")):
        clients = [redis.Redis.from_url(store_url)]
    else:
        return []
    pids = []
    for client in clients:
        with client:
            pid = int(client.info("server")["process_id"])
        if Path(f"/proc/{pid}/stat").exists() and pid not in pids:
            pids.append(pid)
    return pids


def tree_pids(pid: int) -> list[int]:
    return [pid, *probes.worker_pids(pid)]


def wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not probes.healthy(port):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"the server on port {port} did not start")
        time.sleep(0.1)


def call(port: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        headers = {
            "Content-Type": "application/json",
            "A2A-Version": "1.0",
            "Authorization": f"Bearer {TOKEN}",
        }
        conn.request("POST", "/a2a/jsonrpc", body, headers)
        reply: dict[str, Any] = json.loads(conn.getresponse().read())
        if "error" in reply:
            raise RuntimeError(f"{method} failed: {reply['error']}")
        return reply["result"]
    finally:
        conn.close()


def send(port: int, data: Any) -> dict[str, Any]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
               "parts": [{"mediaType": "application/json", "data": data}]}  # fmt: skip
    task: dict[str, Any] = call(port, "SendMessage", {"message": message})["task"]
    return task


def prime(server: Server) -> None:
    """A task to poll and an artifact to run, made before any load."""
    task = send(server.port, {"operation": "create", "thought": SQUARES})
    server.task_id = task["id"]
    data = task["artifacts"][0]["parts"][0]["data"]
    server.artifact_id = data.get("result", {}).get("artifact", {}).get("id", "none")


@contextmanager
def quineling(store_url: str, workers: int, worker_class: str, threads: int, keys: Path, root: Path = ROOT,
              **settings: Any) -> Iterator[Server]:  # fmt: skip
    """This server from the checkout at ``root`` (another one: --compare, e.g. an older commit's tree)."""
    port = probes.free_port()
    env = dict(os.environ, QUINELING_STORE_URL=store_url, QUINELING_WORKERS=str(workers),
               QUINELING_WORKER_CLASS=worker_class, QUINELING_THREADS=str(threads),
               QUINELING_A2A_PORT=str(port), QUINELING_BASE_URL=f"http://127.0.0.1:{port}",
               QUINELING_ACCESS_LOG="0", QUINELING_AUTH_KEYS_FILE=str(keys),
               QUINELING_STORE_PREFIX=f"bench-{uuid.uuid4().hex[:8]}", PYTHONPATH=str(root))  # fmt: skip
    prefix = env["QUINELING_STORE_PREFIX"]
    env.update({f"QUINELING_{k.upper()}": str(v) for k, v in settings.items()})
    cmd = [sys.executable, "-m", "gunicorn", "-c", str(root / "deploy/gunicorn.conf.py"),
           "--log-level", "warning", "wsgi:app"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=root, env=env)
    try:
        wait_healthy(port, proc)
        time.sleep(0.3 * workers)  # every worker booted
        name = "quineling" if root == ROOT else f"quineling@{root.name}"
        server = Server(name, port, proc.pid, prefix=prefix, store_pids=local_store_pids(store_url))
        prime(server)
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if store_url.startswith(("redis+cluster://", "rediss+cluster://")):
            forget(store_url, prefix)


@contextmanager
def js_sdk() -> Iterator[Server]:
    if not (JS_MODULES / "@a2a-js" / "sdk").is_dir() or not (JS_MODULES / "express").is_dir():
        raise RuntimeError("the JS SDK is not installed: run tests/interop/js/install.sh")
    port = probes.free_port()
    proc = subprocess.Popen(["node", str(ROOT / "bench" / "js_agent.mjs"), str(port), TOKEN], cwd=ROOT)
    try:
        wait_healthy(port, proc)
        server = Server("js-sdk 1.3.0", port, proc.pid)
        prime(server)
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextmanager
def baseline(worker_class: str, workers: int) -> Iterator[Server]:
    port = probes.free_port()
    cmd = [sys.executable, "-m", "gunicorn", "--worker-class", worker_class, "--workers", str(workers),
           "--bind", f"127.0.0.1:{port}", "--log-level", "warning", "bench.baseline_app:app"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        wait_healthy(port, proc)
        time.sleep(0.3 * workers)
        yield Server(f"flask baseline {worker_class}", port, proc.pid, "t-1", "a-1")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def wrk(server: Server, scenario: str, clients: int, seconds: float) -> dict[str, Any]:
    """One measured wrk run (after an unmeasured warm-up of a second): figures of the server and of wrk."""
    if scenario in ("get", "run", "mix") and not server.name.startswith("flask"):
        prime(server)  # the previous scenario's sends may have evicted the polled task
    env = dict(os.environ, BENCH_SCENARIO=scenario, BENCH_TOKEN=TOKEN, BENCH_TASK=server.task_id,
               BENCH_ARTIFACT=server.artifact_id)  # fmt: skip
    base = ["wrk", "-t", "2", "-c", str(clients), "-s", str(WRK_SCRIPT), "--timeout", "10s"]
    url = f"http://127.0.0.1:{server.port}"
    subprocess.run([*base, "-d", "1s", url], env=env, capture_output=True, check=True)
    if scenario in ("get", "run", "mix") and not server.name.startswith("flask"):
        prime(server)  # and again after the warm-up's sends
        env.update(BENCH_TASK=server.task_id, BENCH_ARTIFACT=server.artifact_id)
    pids = tree_pids(server.pid)
    cpu_before, store_before = probes.cpu_seconds(pids), probes.cpu_seconds(server.store_pids)
    proc = subprocess.Popen([*base, "-d", f"{seconds:g}s", url], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    generator = 0.0
    while proc.poll() is None:  # wrk's own CPU, read just before it exits
        try:
            generator = probes.cpu_seconds([proc.pid])
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.05)
    out, err = proc.communicate()
    cpu = probes.cpu_seconds(pids) - cpu_before
    store_cpu = probes.cpu_seconds(server.store_pids) - store_before  # only this server is loaded meanwhile
    lines = [line for line in out.decode().splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"wrk failed: {err.decode()[-500:]}")
    result = json.loads(lines[-1])
    failed = result["errors"] + result["socket_errors"] + result["status_errors"]
    if failed:  # reported with the row, not trusted; the run goes on
        print(
            f"  ! {server.name} {scenario} c={clients}: {failed} failed, first: {result['first_error'][:200]}"
        )
    n = result["requests"]
    if not n:  # not one answer within the run (the JS SDK's ListTasks once its store holds every task sent)
        print(f"  ! {server.name} {scenario} c={clients}: no request answered in {seconds:g} s")

    def per_request(seconds_used: float) -> float:
        return round(seconds_used * 1000 / n, 3) if n else math.inf

    return {"per_s": round(n / (result["duration_us"] / 1e6), 1), "p50_ms": round(result["p50_us"] / 1000, 2),
            "p99_ms": round(result["p99_us"] / 1000, 2), "cpu_ms": per_request(cpu),
            "store_cpu_ms": per_request(store_cpu), "wrk_cpu_ms": per_request(generator),
            "failed": failed}  # fmt: skip


def median(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}


def store_url_of(setup: dict[str, Any], redis_url: str, cluster_url: str) -> str:
    return {"redis": redis_url, "cluster": cluster_url}.get(setup["store"], "memory://")


def forget(cluster_url: str, prefix: str) -> None:
    """Delete every key under ``prefix`` on every primary of a cluster that other users share (no FLUSHALL)."""
    from stores.redis import keys
    from stores.redis.connection import make_client

    client = make_client(cluster_url, socket_timeout=10.0)
    try:  # a cluster client's scan_iter walks every primary
        for key in client.scan_iter(match=keys.all_keys_pattern(prefix), count=1000):
            client.delete(key)
    finally:
        client.close()


def side_by_side(setups: list[dict[str, Any]], scenarios: list[str], clients: list[int], seconds: float,
                 rounds: int, redis_url: str, compare: list[Path] | None = None,
                 cluster_url: str = "") -> dict[str, Any]:  # fmt: skip
    """Per setup (a store, workers, worker class): every scenario × clients over interleaved rounds. A
    cluster setup's keys are deleted by prefix when its server stops (the cluster is shared, never flushed)."""
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "keys"
        keys.write_text(f"bench sha256:{_digest(TOKEN)}\n")
        keys.chmod(0o600)
        for setup in setups:
            store = store_url_of(setup, redis_url, cluster_url)
            label = f"{setup['store']} x{setup['workers']} {setup['class']}" + (
                f" t{setup['threads']}" if setup["class"] == "gthread" else ""
            )
            # "create of new sources" needs the library's limits raised for the run; retention stays default.
            settings = {"max_artifacts": 1_000_000, "max_records": 1_000_000}
            runs: dict[str, list[dict[str, Any]]] = {}
            with contextlib.ExitStack() as stack:
                args = (store, setup["workers"], setup["class"], setup["threads"], keys)
                ours = stack.enter_context(quineling(*args, **settings))
                others = [
                    stack.enter_context(quineling(*args, root=root, **settings)) for root in compare or []
                ]
                peer = stack.enter_context(js_sdk())
                flask = stack.enter_context(baseline(setup["class"], setup["workers"]))
                for _ in range(rounds):
                    for scenario in scenarios:
                        for c in clients:
                            for server in (ours, *others, peer, flask):
                                if server is flask and scenario not in ("create", "get"):
                                    continue
                                row = wrk(server, scenario, c, seconds)
                                runs.setdefault(f"{scenario}|{c}|{server.name}", []).append(row)
            rows: dict[str, Any] = {}
            for key, figures in runs.items():
                scenario, c, name = key.split("|")
                rows[key] = {"scenario": SCENARIOS[scenario], "clients": int(c), "server": name,
                             **median(figures)}  # fmt: skip
            for key, row in rows.items():
                scenario, c, name = key.split("|")
                # The peer's SendMessage is the yardstick for every send, its GetTask/ListTasks for those.
                peer_scenario = "create" if scenario in ("create", "create_new", "run") else scenario
                peer_row = rows.get(f"{peer_scenario}|{c}|js-sdk 1.3.0")
                if peer_row and not name.startswith("js-sdk"):
                    row["x_js"] = (
                        round(row["per_s"] / peer_row["per_s"], 2) if peer_row["per_s"] else math.inf
                    )
            report[label] = rows
            if setup["store"] == "redis":
                _flush(redis_url)
    return report


def worker_classes(setups: list[dict[str, Any]], scenarios: list[str], clients: list[int], seconds: float,
                   rounds: int, redis_url: str, cluster_url: str = "") -> dict[str, Any]:  # fmt: skip
    """This server in several layouts (e.g. gevent and gthread on Redis × 2) running at once, driven in
    interleaved rounds (layout A, B, A, B …, per scenario and client count), so a machine that gets busier
    or quieter during the run favours none of them: the comparison a default worker class needs."""
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        keys = Path(tmp) / "keys"
        keys.write_text(f"bench sha256:{_digest(TOKEN)}\n")
        keys.chmod(0o600)
        servers = []
        for setup in setups:
            store = store_url_of(setup, redis_url, cluster_url)
            server = stack.enter_context(
                quineling(store, setup["workers"], setup["class"], setup["threads"], keys)
            )
            server.name = f"{setup['store']} x{setup['workers']} {setup['class']}" + (
                f" t{setup['threads']}" if setup["class"] == "gthread" else ""
            )
            servers.append(server)
        for _ in range(rounds):
            for scenario in scenarios:
                for c in clients:
                    for server in servers:
                        runs.setdefault(f"{scenario}|{c}|{server.name}", []).append(
                            wrk(server, scenario, c, seconds)
                        )
    rows: dict[str, Any] = {}
    for key, figures in runs.items():
        scenario, c, name = key.split("|")
        rows[key] = {"scenario": SCENARIOS[scenario], "clients": int(c), "server": name, **median(figures)}
    return {"worker classes, interleaved": rows}


def _digest(token: str) -> str:
    import hashlib

    return hashlib.sha256(token.encode()).hexdigest()


def _flush(redis_url: str) -> None:
    import redis

    redis.Redis.from_url(redis_url).flushdb()


def round_trips(store_url: str) -> dict[str, float]:
    """Store round trips per request on the happy path, by the store's own counter, with auth on."""
    from quineling.app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "keys"
        keys.write_text(f"bench sha256:{_digest(TOKEN)}\n")
        keys.chmod(0o600)
        prefix = f"bench-{uuid.uuid4().hex[:8]}"
        app = create_app(config={"store_url": store_url, "store_prefix": prefix,
                                 "auth_keys_file": str(keys)})  # fmt: skip
        backend = app.extensions["quineling"].extras["backend"]
        client = app.test_client()
        headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {TOKEN}"}

        def body(method: str, params: dict[str, Any]) -> bytes:
            return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()

        def message(data: Any) -> dict[str, Any]:
            return {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                                "parts": [{"mediaType": "application/json", "data": data}]}}  # fmt: skip

        def count(method: str, params: dict[str, Any], times: int = 5) -> tuple[float, Any]:
            before = backend.round_trips()
            reply = None
            for _ in range(times):
                reply = client.post("/a2a/jsonrpc", data=body(method, params), content_type="application/json",
                                    headers=headers).get_json()  # fmt: skip
                assert "error" not in reply, reply
            return (backend.round_trips() - before) / times, reply

        _, first = count("SendMessage", message({"operation": "create", "thought": SQUARES}), 1)
        task = first["result"]["task"]
        artifact_id = task["artifacts"][0]["parts"][0]["data"]["result"]["artifact"]["id"]
        out = {
            "SendMessage(create, retained)": count("SendMessage", message({"operation": "create",
                                                                           "thought": SQUARES}))[0],
            "SendMessage(create, new source)": count("SendMessage", message({"operation": "create",
                                                                             "thought": "[7] | sum | report s"}),
                                                     1)[0],
            "SendMessage(run)": count("SendMessage", message({"operation": "run", "artifactId": artifact_id}))[0],
            "GetTask": count("GetTask", {"id": task["id"]})[0],
            "ListTasks(page 50)": count("ListTasks", {"pageSize": 50})[0],
        }  # fmt: skip
        backend.close()
    if store_url.startswith(("redis+cluster://", "rediss+cluster://")):
        forget(store_url, prefix)
    return out


def rss_after_sends(
    store_url: str, workers: int, worker_class: str, sends: int, clients: int
) -> dict[str, Any]:
    """Resident memory of each server's process tree idle (after its first request) and after ``sends``
    SendMessage(create, retained), driven by wrk until the count is reached."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "keys"
        keys.write_text(f"bench sha256:{_digest(TOKEN)}\n")
        keys.chmod(0o600)
        for make in (lambda: quineling(store_url, workers, worker_class, 8, keys), js_sdk):
            with make() as server:
                pids = tree_pids(server.pid)
                workers_only = pids[1:] or pids
                idle = probes.rss_kib(workers_only)
                done = 0
                while done < sends:
                    row = wrk(server, "create", clients, 5)
                    done += int(row["per_s"] * 5) + int(row["per_s"])  # the measured window and its warm-up
                after = probes.rss_kib(workers_only)
                out[server.name] = {"processes": len(workers_only), "sends": done,
                                    "idle_mib": round(idle / 1024, 1), "after_mib": round(after / 1024, 1),
                                    "growth_mib_per_process": round((after - idle) / 1024 / len(workers_only), 1)}  # fmt: skip
    return out


def print_side_by_side(report: dict[str, Any]) -> None:
    for label, rows in report.items():
        print(
            f"\n== {label} (auth on; medians over the rounds; cpu = server process tree ms/request,"
            " redis = the local Redis servers' ms/request)"
        )
        print(f"  {'scenario':<34}{'c':>4}  {'server':<24}{'req/s':>9}{'p50':>8}{'p99':>8}{'cpu':>8}"
              f"{'redis':>7}{'wrk':>7}{'x JS':>7}")  # fmt: skip
        for row in rows.values():
            ratio = f"{row['x_js']:.2f}" if "x_js" in row else ""
            ratio += f"  ({row['failed']:g} FAILED)" if row.get("failed") else ""
            print(f"  {row['scenario']:<34}{row['clients']:>4}  {row['server']:<24}{row['per_s']:>9.0f}"
                  f"{row['p50_ms']:>8.2f}{row['p99_ms']:>8.2f}{row['cpu_ms']:>8.3f}"
                  f"{row['store_cpu_ms']:>7.3f}{row['wrk_cpu_ms']:>7.3f}"
                  f"{ratio:>7}")  # fmt: skip


def available() -> str | None:
    """Why the side-by-side benchmark cannot run here, or None."""
    if shutil.which("wrk") is None:
        return "wrk is not installed (apt-get install wrk)"
    if shutil.which("node") is None:
        return "node is not installed"
    if not (JS_MODULES / "express").is_dir():
        return "the JS SDK is not installed: run tests/interop/js/install.sh"
    return None
