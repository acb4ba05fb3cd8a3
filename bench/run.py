#!/usr/bin/env python3
"""Quineling benchmark: the A2A server side by side with the official JS SDK and a Flask baseline (bench/peer.py,
docs/performance.md), store round trips per request, and the older in-process and baseline-only sections.

It is a script, not a test. Redis figures use database --redis-db (12) of --redis-url, which the script flushes
before and after: never point it at a database anything else uses. A Redis Cluster (--cluster-url) is taken to be
shared: the script deletes the keys under its own prefixes on every primary and nothing else.

    ./dev bench                 # side by side with the official JS SDK (bench/peer.py), plus round trips
    ./dev bench --quick         # shorter runs, fewer setups
    ./dev bench --only rss      # resident memory after 100,000 sends, this server and the JS SDK
    ./dev bench --compare /path/to/older/checkout   # also that tree's server, in the same rounds
    ./dev bench --only classes --setups redis:2:gevent,redis:2:gthread:4 --scenarios get,run
                                # layouts of this server against each other, interleaved
    ./dev bench --only peer --setups redis:2:gevent,cluster:2:gevent --scenarios create,run,get --clients 8
                                # a Redis Cluster row beside single Redis (--cluster-url; keys deleted by prefix)
    ./dev bench --only roundtrips --cluster   # round trips per request on memory, Redis and the cluster
    ./dev bench --only dispatch # or: http (against the Flask baseline only), probes (bench/probes.py)
    ./dev bench --worker-class both   # http and probes under gevent and gthread (default: gevent)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import peer, probes  # noqa: E402 - needs the repository root on the path
from tests.support.redis_cluster import LocalCluster  # noqa: E402 - the test cluster's ports

CLUSTER_URL = LocalCluster().url  # started if missing when a run needs it (tests/support/redis_cluster.py)

SQUARES = "[2,3,4] | square | sum | report total"
RECONNECT_EVERY = 20  # requests per HTTP connection in the load generator
WARMUP_SECONDS = 1.0


# ---------------------------------------------------------------- runtime dispatch


def dispatch_bench(store_url: str, seconds: float) -> dict[str, Any]:
    from quineling.runtime.context import Env, RuntimeLimits
    from quineling.runtime.runtime import Runtime
    from stores import backend_from_url

    backend = backend_from_url(store_url)
    limits = RuntimeLimits(max_artifacts=1_000_000, max_artifact_bytes=1 << 40, max_records=1_000_000)
    rt = Runtime(store=backend.state_store(), env=Env(limits=limits))
    artifact = rt.dispatch({"operation": "create", "thought": SQUARES})["result"]["artifact"]
    counter = iter(range(10**9))
    requests: dict[str, Callable[[], dict[str, Any]]] = {
        "create": lambda: {"operation": "create", "thought": f"[{next(counter)}, 2] | sum | report t"},
        "run": lambda: {"operation": "run", "artifactId": artifact["id"]},
        "frame": lambda: {"operation": "frame", "artifactId": artifact["id"], "phase": 0.25},
        "inspect": lambda: {"operation": "inspect", "artifactId": artifact["id"]},
    }
    out = in_process(backend, requests, rt.dispatch, seconds)
    backend.close()
    return out


def in_process(backend: Any, scenarios: dict[str, Callable[[], Any]], call: Callable[[Any], Any],
               seconds: float) -> dict[str, Any]:  # fmt: skip
    """Per scenario, ``call(make())`` for ``seconds``: latency summary and store round trips per call."""
    out = {}
    for name, make in scenarios.items():
        latencies: list[float] = []
        trips = backend.round_trips()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            argument = make()  # built outside the timed call
            start = time.perf_counter()
            call(argument)
            latencies.append(time.perf_counter() - start)
        out[name] = summarize(latencies, sum(latencies)) | {
            "round_trips_per_op": (backend.round_trips() - trips) / len(latencies)
        }
    return out


# ---------------------------------------------------------------- HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def gunicorn(app: str, store_url: str, workers: int, threads: int, worker_class: str):  # type: ignore[no-untyped-def]
    port = free_port()
    env = dict(os.environ, QUINELING_STORE_URL=store_url, QUINELING_WORKERS=str(workers),
               QUINELING_THREADS=str(threads), QUINELING_A2A_PORT=str(port),
               QUINELING_WORKER_CLASS=worker_class,
               QUINELING_BASE_URL=f"http://127.0.0.1:{port}", QUINELING_ACCESS_LOG="0",
               QUINELING_MAX_RECORDS="100000", PYTHONPATH=str(ROOT))  # fmt: skip
    cmd = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy/gunicorn.conf.py"),
           "--bind", f"127.0.0.1:{port}", "--log-level", "warning", app]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    try:
        wait_healthy(port)
        MASTERS[port] = proc.pid
        yield port
    finally:
        MASTERS.pop(port, None)
        proc.terminate()
        proc.wait(timeout=30)


MASTERS: dict[int, int] = {}  # port -> gunicorn master pid, for the workers' CPU time


def wait_healthy(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server on port {port} did not become healthy")


def rpc(method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def send(data: Any) -> bytes:
    part = {"mediaType": "application/json", "data": data}
    return rpc(
        "SendMessage", {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [part]}}
    )


def call(conn: http.client.HTTPConnection, body: bytes) -> dict[str, Any]:
    conn.request("POST", "/a2a/jsonrpc", body, {"Content-Type": "application/json", "A2A-Version": "1.0"})
    response = conn.getresponse()
    payload = orjson.loads(response.read())  # the load generator shares the cores: keep it light
    if response.status != 200 or "error" in payload:
        raise RuntimeError(f"request failed: {response.status} {payload}")
    return payload


def load(port: int, make_body: Callable[[int], bytes], concurrency: int, seconds: float) -> dict[str, Any]:
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    errors: list[BaseException] = []
    # An unmeasured warm-up first (script loading, connection pools, filling the task store to capacity), so
    # a short window measures the steady state for the baseline and the server alike.
    measure_from = time.perf_counter() + WARMUP_SECONDS
    stop = measure_from + seconds

    def worker(index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        n = 0
        try:
            while time.perf_counter() < stop:
                if n and n % RECONNECT_EVERY == 0:
                    # A keep-alive connection stays with the worker that accepted it; reconnecting now and
                    # then spreads the load over every worker, as many independent clients would.
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                body = make_body(index * 1_000_000 + n)
                n += 1
                start = time.perf_counter()
                call(conn, body)
                if start >= measure_from:
                    latencies[index].append(time.perf_counter() - start)
        except BaseException as exc:  # noqa: BLE001 - reported below; the run is then not trusted
            errors.append(exc)
        finally:
            conn.close()

    # The workers' CPU time over the measured window: unlike requests/s, it barely moves when other
    # processes load the machine, so it compares worker classes fairly.
    pids = probes.worker_pids(MASTERS[port]) if port in MASTERS else []
    cpu: list[float] = []
    sampler = threading.Timer(
        measure_from - time.perf_counter(), lambda: cpu.append(probes.cpu_seconds(pids))
    )
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    sampler.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sampler.join()
    if errors:
        raise RuntimeError(f"{len(errors)} load workers failed, first: {errors[0]!r}")
    measured = [x for xs in latencies for x in xs]
    out = summarize(measured, time.perf_counter() - measure_from)
    if pids and cpu and measured:
        out["cpu_ms_per_req"] = round((probes.cpu_seconds(pids) - cpu[0]) * 1000 / len(measured), 3)
    return out


def summarize(latencies: list[float], elapsed: float) -> dict[str, Any]:
    latencies = sorted(latencies)
    if not latencies:
        return {"n": 0}
    q = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else latencies * 99
    return {"n": len(latencies), "per_s": round(len(latencies) / elapsed, 1),
            "p50_ms": round(q[49] * 1000, 2), "p99_ms": round(q[98] * 1000, 2)}  # fmt: skip


def http_bench(store_url: str, workers: int, concurrencies: list[int], seconds: float,
               worker_class: str) -> dict[str, Any]:  # fmt: skip
    threads = 8  # gthread only
    results: dict[str, Any] = {}
    with gunicorn("bench.baseline_app:app", store_url, workers, threads, worker_class) as port:
        for c in concurrencies:
            results[f"baseline c={c}"] = load(port, lambda i: send({"operation": "noop"}), c, seconds)
    with gunicorn("wsgi:app", store_url, workers, threads, worker_class) as port:
        artifact_id = new_task(port)["artifacts"][0]["parts"][0]["data"]["result"]["artifact"]["id"]
        scenarios = {
            # Distinct thoughts would fill the 128-artifact library; re-creating a retained source is the
            # same request path (read, stage, commit) with an idempotent outcome.
            "SendMessage(create)": lambda i: send({"operation": "create", "thought": SQUARES}),
            "SendMessage(run)": lambda i: send({"operation": "run", "artifactId": artifact_id}),
        }
        for name, make in scenarios.items():
            for c in concurrencies:
                results[f"{name} c={c}"] = load(port, make, c, seconds)
        # Created after the send loads, which evict older completed tasks at the 128-task capacity.
        polled = new_task(port)["id"]
        for c in concurrencies:
            results[f"GetTask c={c}"] = load(port, lambda i: rpc("GetTask", {"id": polled}), c, seconds)
    return results


def new_task(port: int) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    try:
        return call(conn, send({"operation": "create", "thought": SQUARES}))["result"]["task"]
    finally:
        conn.close()


def send_bench(store_url: str, seconds: float) -> dict[str, Any]:
    """SendMessage in-process through the Flask app (no HTTP): the runtime dispatch plus its task commit."""
    from quineling.app import create_app

    app = create_app(config={"store_url": store_url, "store_prefix": f"bench-{uuid.uuid4().hex[:8]}",
                             "max_artifacts": 1_000_000, "max_records": 1_000_000})  # fmt: skip
    backend = app.extensions["quineling"].extras["backend"]
    client = app.test_client()
    headers = {"A2A-Version": "1.0"}

    def post(body: bytes) -> dict[str, Any]:
        return client.post(
            "/a2a/jsonrpc", data=body, content_type="application/json", headers=headers
        ).get_json()

    task = post(send({"operation": "create", "thought": SQUARES}))["result"]["task"]
    artifact_id = task["artifacts"][0]["parts"][0]["data"]["result"]["artifact"]["id"]
    counter = iter(range(10**9))
    scenarios: dict[str, Callable[[], bytes]] = {
        "SendMessage(create, new artifact)": lambda: send(
            {"operation": "create", "thought": f"[{next(counter)}, 2] | sum | report t"}
        ),
        "SendMessage(run)": lambda: send({"operation": "run", "artifactId": artifact_id}),
    }
    out = in_process(backend, scenarios, post, seconds)
    backend.close()
    return out


def round_trips_per_request(store_url: str) -> dict[str, float]:
    """Store round trips of one request on the happy path, counted in-process through the Flask app."""
    from quineling.app import create_app

    app = create_app(config={"store_url": store_url, "store_prefix": f"bench-{uuid.uuid4().hex[:8]}"})
    backend = app.extensions["quineling"].extras["backend"]
    client = app.test_client()
    headers = {"A2A-Version": "1.0"}

    def count(body: bytes) -> tuple[float, dict[str, Any]]:
        before = backend.round_trips()
        reply = client.post(
            "/a2a/jsonrpc", data=body, content_type="application/json", headers=headers
        ).get_json()
        return backend.round_trips() - before, reply

    _, first = count(send({"operation": "create", "thought": SQUARES}))
    task = first["result"]["task"]
    artifact_id = task["artifacts"][0]["parts"][0]["data"]["result"]["artifact"]["id"]
    return {
        "SendMessage(create, new artifact)": count(
            send({"operation": "create", "thought": "[7] | sum | report s"})
        )[0],
        "SendMessage(create, retained)": count(send({"operation": "create", "thought": SQUARES}))[0],
        "SendMessage(run)": count(send({"operation": "run", "artifactId": artifact_id}))[0],
        "GetTask": count(rpc("GetTask", {"id": task["id"]}))[0],
    }


def flush(redis_url: str) -> None:
    import redis

    redis.Redis.from_url(redis_url).flushdb()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379")
    parser.add_argument("--redis-db", type=int, default=12, help="the database to use and flush (12)")
    parser.add_argument(
        "--cluster-url",
        default=os.environ.get("QUINELING_TEST_REDIS_CLUSTER_URL") or CLUSTER_URL,
        help="the Redis Cluster of `cluster` setups and round trips; shared, so only the bench's own keys "
        "are deleted, by prefix (QUINELING_TEST_REDIS_CLUSTER_URL, else %(default)s)",
    )
    parser.add_argument(
        "--cluster", action="store_true", help="--only roundtrips: count on the Redis Cluster too"
    )
    parser.add_argument("--quick", action="store_true", help="short runs, one concurrency level")
    parser.add_argument(
        "--only", choices=["peer", "classes", "rss", "roundtrips", "dispatch", "http", "probes"]
    )
    parser.add_argument(
        "--setups",
        default="memory:1:gevent,redis:2:gevent,redis:2:gthread:4",
        help="side-by-side layouts, STORE:WORKERS:CLASS[:THREADS],…; STORE is memory, redis or cluster "
        "(%(default)s)",
    )
    parser.add_argument(
        "--scenarios", default=",".join(peer.SCENARIOS), help="side-by-side scenarios (%(default)s)"
    )
    parser.add_argument("--clients", default="8,32", help="side-by-side connections (%(default)s)")
    parser.add_argument("--seconds", type=float, help="per measured run (side by side: 3; --quick: 1.5)")
    parser.add_argument(
        "--compare",
        type=Path,
        action="append",
        default=[],
        help="side by side: also this server from another checkout (e.g. an older commit's tree)",
    )
    parser.add_argument("--sends", type=int, default=100_000, help="--only rss: sends per server (100000)")
    parser.add_argument("--worker-class", choices=["gevent", "gthread", "both"], default="gevent")
    parser.add_argument("--rounds", type=int, default=3, help="runs to take the median of (3; --quick: 1)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    redis_url = args.redis_url.rstrip("/") + f"/{args.redis_db}"
    uses_cluster = args.cluster or "cluster:" in args.setups
    if uses_cluster and args.cluster_url == CLUSTER_URL:
        LocalCluster().ensure()  # the tests' own cluster, on its fixed ports: start it if it is not up
    seconds = 1.0 if args.quick else 3.0
    concurrencies = [4] if args.quick else [1, 4, 16]
    report: dict[str, Any] = {}
    flush(redis_url)
    try:
        if args.only in (None, "peer", "rss"):
            missing = peer.available()
            if missing:
                sys.exit(f"./dev bench: {missing}")
        if args.only in (None, "peer"):
            setups = [parse_setup(text) for text in args.setups.split(",")]
            if args.quick:
                setups = setups[:2]
            side = peer.side_by_side(setups, args.scenarios.split(","), [int(c) for c in args.clients.split(",")],
                                     args.seconds or (1.5 if args.quick else 3.0),
                                     1 if args.quick else args.rounds, redis_url,
                                     [path.resolve() for path in args.compare], args.cluster_url)  # fmt: skip
            peer.print_side_by_side(side)
            report["side by side"] = side
        if args.only == "classes":  # the layouts of --setups side by side, without the peer
            setups = [parse_setup(text) for text in args.setups.split(",")]
            classes_report = peer.worker_classes(setups, args.scenarios.split(","),
                                                 [int(c) for c in args.clients.split(",")], args.seconds or 3.0,
                                                 args.rounds, redis_url, args.cluster_url)  # fmt: skip
            peer.print_side_by_side(classes_report)
            report.update(classes_report)
            flush(redis_url)
        if args.only in (None, "roundtrips"):
            stores = [("memory", "memory://"), ("redis", redis_url)]
            stores += [("cluster", args.cluster_url)] if args.cluster else []
            for label, url in stores:
                report[f"round trips {label} (auth on)"] = peer.round_trips(url)
                flush(redis_url)
        if args.only == "rss":
            report["rss after sends"] = peer.rss_after_sends(redis_url, 2, args.worker_class, args.sends, 32)
            flush(redis_url)
        if args.only == "dispatch":
            for label, url in (("memory", "memory://"), ("redis", redis_url)):
                report[f"dispatch {label}"] = dispatch_bench(url, seconds)
                flush(redis_url)
            for label, url in (("memory", "memory://"), ("redis", redis_url)):
                report[f"send in-process {label}"] = send_bench(url, seconds)
                flush(redis_url)
            for label, url in (("memory", "memory://"), ("redis", redis_url)):
                report[f"round trips {label}"] = round_trips_per_request(url)
                flush(redis_url)
        classes = ["gevent", "gthread"] if args.worker_class == "both" else [args.worker_class]
        if args.only == "http":
            setups = (("memory, 1 worker", "memory://", 1), ("redis, 1 worker", redis_url, 1),
                      ("redis, 2 workers", redis_url, 2))  # fmt: skip
            # Rounds alternate the worker classes, so a machine that gets busier or quieter during the run
            # does not favour one of them; each figure is the median over the rounds.
            runs: dict[str, list[dict[str, Any]]] = {}
            for _ in range(args.rounds):
                for label, url, workers in setups:
                    for worker_class in classes:
                        result = http_bench(url, workers, concurrencies, seconds, worker_class)
                        runs.setdefault(f"http {worker_class}, {label}", []).append(result)
                        flush(redis_url)
            report.update({section: median_rows(results) for section, results in runs.items()})
        if args.only == "probes":
            for worker_class in classes:
                for label, url, workers in (
                    ("memory, 1 worker", "memory://", 1),
                    ("redis, 4 workers", redis_url, 4),
                ):
                    report[f"probes {worker_class}, {label}"] = probes.probe(url, workers, worker_class)
                    flush(redis_url)
                # With a cap the stream count reaches: how soon a closed stream's slot is taken again.
                report[f"probes {worker_class}, memory, 1 worker, cap 200"] = probes.probe(
                    "memory://", 1, worker_class, max_streams=200, threads=256
                )
    finally:
        flush(redis_url)
    print_report({k: v for k, v in report.items() if k != "side by side"})
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def parse_setup(text: str) -> dict[str, Any]:
    """``STORE:WORKERS:CLASS[:THREADS]`` (threads: gthread only, default 8)."""
    store, workers, worker_class, *rest = text.split(":")
    if store not in ("memory", "redis", "cluster") or worker_class not in ("gevent", "gthread"):
        raise SystemExit(f"--setups: not STORE:WORKERS:CLASS[:THREADS]: {text!r}")
    return {
        "store": store,
        "workers": int(workers),
        "class": worker_class,
        "threads": int((rest or ["8"])[0]),
    }


def median_rows(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per row, the median of each figure over several runs of the same section."""
    rows: dict[str, Any] = {}
    for name in results[0]:
        figures = [r[name] for r in results if r.get(name, {}).get("n")]
        rows[name] = (
            {k: statistics.median(f[k] for f in figures) for k in figures[0]} if figures else {"n": 0}
        )
        if len(results) > 1:
            rows[name]["runs"] = len(figures)
    return rows


def print_report(report: dict[str, Any]) -> None:
    for section, rows in report.items():
        print(f"\n== {section}")
        baseline = {k.split(" c=")[1]: v for k, v in rows.items() if k.startswith("baseline")}
        for name, row in rows.items():
            if section.startswith("probes"):
                print(f"  {name:<50} {row}")
                continue
            if not isinstance(row, dict):
                print(f"  {name:<38} {row:g} round trips")
                continue
            line = "  ".join(f"{k}={v}" for k, v in row.items())
            if " c=" in name and not name.startswith("baseline"):
                base = baseline.get(name.split(" c=")[1])
                if base and base.get("per_s"):
                    line += f"  ({row['per_s'] / base['per_s']:.2f}x baseline)"
            print(f"  {name:<38} {line}")


if __name__ == "__main__":
    main()
