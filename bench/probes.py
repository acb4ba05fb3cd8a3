"""Stream-flood and slow-header probes of one server (``./dev bench --only probes``): what open streams and
clients that never finish their headers cost, and whether other requests are still answered.

Per configuration it starts ``gunicorn -c deploy/gunicorn.conf.py wsgi:app`` with the product defaults (plus
the worker class, workers and any settings named), creates a task waiting for input, then

1. opens ``slow`` connections that send part of a request line and nothing more;
2. opens ``streams`` SubscribeToTask streams on the task (each read up to its first event);
3. times GetTask on fresh connections meanwhile (each with a 5 s client timeout);
4. measures the workers' resident memory per stream and per slow connection, and their CPU while idle;
5. closes some streams and times until the server has let them go: on Redis, until that many fewer clients
   are blocked in XREAD; with a stream cap, until as many new streams are accepted.

Every loop is bounded in count and time; all traffic is on 127.0.0.1.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SLOW_LINE = b"GET /healthz HTTP/1.1\r\n"  # a request line, then never the headers' end


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def server(store_url: str, workers: int, worker_class: str, **settings: Any) -> Iterator[tuple[int, int]]:
    """(port, master pid) of a gunicorn server with the product's settings plus ``settings``."""
    port = free_port()
    env = dict(os.environ, QUINELING_STORE_URL=store_url, QUINELING_WORKERS=str(workers),
               QUINELING_WORKER_CLASS=worker_class, QUINELING_A2A_PORT=str(port),
               QUINELING_ACCESS_LOG="0", QUINELING_STORE_PREFIX=f"probe-{uuid.uuid4().hex[:8]}",
               PYTHONPATH=str(ROOT))  # fmt: skip
    env.update({f"QUINELING_{k.upper()}": str(v) for k, v in settings.items()})
    cmd = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy/gunicorn.conf.py"), "--log-level",
           "warning", "wsgi:app"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 30
        while not healthy(port):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the probed server did not start")
            time.sleep(0.1)
        time.sleep(0.3 * workers)  # every worker booted
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def healthy(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False


def rpc(port: int, method: str, params: dict[str, Any], timeout: float = 5) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        conn.request("POST", "/a2a/jsonrpc", body, {"Content-Type": "application/json", "A2A-Version": "1.0"})
        reply: dict[str, Any] = json.loads(conn.getresponse().read())
        return reply
    finally:
        conn.close()


def waiting_task(port: int) -> str:
    """A task in INPUT_REQUIRED (a blank thought asks for clarification)."""
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "   "}]}
    task = rpc(port, "SendMessage", {"message": message})["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
    task_id: str = task["id"]
    return task_id


def slow_header(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(SLOW_LINE)
    return sock


def open_stream(port: int, task_id: str, timeout: float = 10) -> tuple[socket.socket | None, int]:
    """A REST subscription read up to its first event: (socket, 200), or (None, status) when refused."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(f"GET /a2a/rest/tasks/{task_id}:subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "A2A-Version: 1.0\r\n\r\n".encode())  # fmt: skip
    received = b""
    while b"\r\n\r\n" not in received or (received.startswith(b"HTTP/1.1 200") and b"data:" not in received):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    status = int(received.split(b" ", 2)[1]) if received.startswith(b"HTTP/") else 0
    if status != 200:
        sock.close()
        return None, status
    return sock, status


def worker_pids(master: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def cpu_seconds(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return total


def get_task_latencies(port: int, task_id: str, count: int = 20) -> dict[str, Any]:
    """``count`` GetTasks, one fresh connection each; a timeout (5 s) counts as a failure."""
    times, failures = [], 0
    for _ in range(count):
        start = time.perf_counter()
        try:
            reply = rpc(port, "GetTask", {"id": task_id}, timeout=5)
            assert reply["result"]["id"] == task_id
            times.append(time.perf_counter() - start)
        except (OSError, AssertionError, KeyError):
            failures += 1
    times.sort()
    return {
        "answered": len(times),
        "failed": failures,
        "p50_ms": round(statistics.median(times) * 1000, 1) if times else None,
        "max_ms": round(times[-1] * 1000, 1) if times else None,
    }


def blocked_clients(redis_url: str) -> int:
    """Clients of ``redis_url``'s database blocked in XREAD (other databases' clients are not counted)."""
    import redis

    client = redis.Redis.from_url(redis_url)
    db = client.connection_pool.connection_kwargs.get("db", 0)
    return sum(
        1 for c in client.client_list() if int(c["db"]) == db and "b" in c["flags"] and c["cmd"] == "xread"
    )


def probe(store_url: str, workers: int, worker_class: str, streams: int = 200, slow: int = 50,
          close: int = 20, **settings: Any) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {}
    with server(store_url, workers, worker_class, **settings) as (port, master):
        task_id = waiting_task(port)
        pids = worker_pids(master)
        rss0 = rss_kib(pids)
        slow_socks = [slow_header(port) for _ in range(slow)]
        time.sleep(0.5)
        rss1 = rss_kib(pids)
        out["GetTask with slow-header clients"] = get_task_latencies(port, task_id, 10)
        start = time.monotonic()
        opened: list[socket.socket] = []
        refused: dict[int, int] = {}  # HTTP status (0: no answer) -> count
        for _ in range(streams):
            if time.monotonic() - start > 60:
                break
            try:
                sock, status = open_stream(port, task_id)
            except OSError:
                sock, status = None, 0
            if sock is None:
                refused[status] = refused.get(status, 0) + 1
            else:
                opened.append(sock)
        out["streams opened"] = len(opened)
        out["streams refused, by HTTP status (0: no answer)"] = refused
        out["seconds to open them"] = round(time.monotonic() - start, 2)
        time.sleep(1.0)
        rss2 = rss_kib(pids)
        out["GetTask with streams and slow-header clients"] = get_task_latencies(port, task_id)
        cpu = cpu_seconds(pids)
        time.sleep(5)
        out["worker CPU while idle, % of a core"] = round((cpu_seconds(pids) - cpu) / 5 * 100, 1)
        out["RSS per slow-header connection, KiB"] = round((rss1 - rss0) / max(1, slow), 1)
        out["RSS per open stream, KiB"] = round((rss2 - rss1) / max(1, len(opened)), 1)
        redis_url = store_url if store_url.startswith("redis") else None
        if redis_url and opened:
            closed = min(close, len(opened))
            before = blocked_clients(redis_url)
            out["XREADs blocked with the streams open"] = before
            for sock in opened[:closed]:
                sock.close()
            start = time.monotonic()
            while blocked_clients(redis_url) > before - closed and time.monotonic() - start < 20:
                time.sleep(0.02)
            out[f"seconds until {closed} closed streams' XREADs end"] = round(time.monotonic() - start, 2)
            opened = opened[closed:]
        if settings.get("max_streams") and opened and workers == 1:
            # At the cap: close some, then count how long until as many new streams are accepted.
            for sock in opened[:close]:
                sock.close()
            opened = opened[close:]
            start = time.monotonic()
            reopened = 0
            while reopened < close and time.monotonic() - start < 20:
                sock, _ = open_stream(port, task_id)
                if sock is None:
                    time.sleep(0.02)
                else:
                    opened.append(sock)
                    reopened += 1
            out[f"seconds until {close} closed slots are reused"] = round(time.monotonic() - start, 2)
        out["slow-header connections still open after 8 s"] = still_open_after(slow_socks, 8)
        for sock in opened + slow_socks:
            sock.close()
    return out


def still_open_after(socks: list[socket.socket], seconds: float) -> int:
    """How many of ``socks`` the server has not closed ``seconds`` after they were opened."""
    time.sleep(seconds)
    alive = 0
    for sock in socks:
        sock.settimeout(0.01)
        try:
            if sock.recv(1, socket.MSG_PEEK):
                alive += 1  # the server answered something (an error page) but kept it open
        except (TimeoutError, BlockingIOError):
            alive += 1
        except OSError:
            pass
    return alive
