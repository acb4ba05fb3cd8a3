"""Issue 26 item 5 (card fetches): a card fetch has a size cap and an overall deadline — in the CLI, the client
and the registry's health checks. A 300 MiB card took the CLI to 1.24 GiB; a card dripped at one byte per 2 s
kept ``--timeout 5`` running past 45 s (httpx's read timeout is per read)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quineling.client import (
    AgentRegistry,
    CardCache,
    CardError,
    ClientTimeout,
    RetryPolicy,
    Timeouts,
    load_card,
)
from quineling.client.discovery import MAX_CARD_BYTES
from quineling.client.http import Channel
from quineling.client.registry import CHECK_SECONDS, MAX_READINESS_BYTES
from quineling.client.shared import SharedState
from tests.attacks.hostile_agents import Exchange, card, serve
from tests.cli.support import clean_env, cli_in_process

pytestmark = pytest.mark.slow

MIB = 1024 * 1024


def _huge(ex: Exchange, *, declared: bool) -> None:
    """300 MiB of a JSON card, with or without saying so in Content-Length (then until the client hangs up)."""
    h = ex.handler
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    if declared:
        h.send_header("Content-Length", str(300 * MIB))
    else:
        h.send_header("Connection", "close")
        h.close_connection = True
    h.end_headers()
    h.wfile.write(b'{"name":"big","pad":"')
    chunk = b"a" * MIB
    for _ in range(300):
        h.wfile.write(chunk)


def _drip(ex: Exchange, *, head: bool = False) -> None:
    """A valid card, one byte every 2 s: in the body, or (``head``) already in the status line."""
    body = json.dumps(card("http://127.0.0.1:1/rpc")).encode()
    start = (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    if head:
        body = start + body
    else:
        ex.raw(start)
    for byte in body:
        ex.raw(bytes([byte]))
        time.sleep(2)


# A real process, so its peak memory is its own: main(), then its peak RSS (VmHWM, KiB) on stderr. Not
# getrusage's ru_maxrss: Linux carries the peak of the image a process replaced at exec into it, and a child
# spawned by a large test worker would report that worker's size.
_MEASURED = ("import re, sys; from quineling.cli_a2a import main; code = main(sys.argv[1:]); "
             "peak = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1); "
             "sys.stderr.write(f'\\nmaxrss={peak}\\n'); sys.exit(code)")  # fmt: skip


def test_a_300_mib_card_is_refused_quickly_with_bounded_memory(tmp_path: Path) -> None:
    with serve(lambda ex: _huge(ex, declared=False)) as agent:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", _MEASURED, "card", "get", "-a", f"{agent.origin}/card.json"],
                              cwd=tmp_path, env=clean_env(tmp_path), capture_output=True, text=True, timeout=60)  # fmt: skip
        took = time.monotonic() - started
    maxrss_mib = int(proc.stderr.rsplit("maxrss=", 1)[1]) / 1024
    assert proc.returncode == 1 and "A2ACLI_ERR_CARD_INVALID" in proc.stderr
    assert f"larger than {MAX_CARD_BYTES} bytes" in proc.stderr
    assert took < 10 and maxrss_mib < 150, (took, maxrss_mib)
    # Declared up front: refused before a byte of the body is read.
    with serve(lambda ex: _huge(ex, declared=True)) as agent:
        run = cli_in_process(
            "card", "get", "-a", f"{agent.origin}/card.json", cwd=tmp_path, env=clean_env(tmp_path)
        )
        assert run.code == 1 and f"larger than {MAX_CARD_BYTES} bytes" in run.err


def test_a_dripped_card_ends_at_the_cli_timeout(tmp_path: Path) -> None:
    with serve(_drip) as agent:
        started = time.monotonic()
        run = cli_in_process("card", "get", "-a", f"{agent.origin}/card.json", "--timeout", "5",
                             cwd=tmp_path, env=clean_env(tmp_path))  # fmt: skip
        took = time.monotonic() - started
    assert run.code == 5 and "A2ACLI_ERR_TIMEOUT" in run.err and "not complete within 5s" in run.err
    assert 4.5 < took < 6.5, took


def test_a_dripped_head_ends_at_the_client_deadline() -> None:
    with serve(lambda ex: _drip(ex, head=True)) as agent:
        started = time.monotonic()
        with pytest.raises(ClientTimeout, match="not complete within 1.5s"):
            load_card(f"{agent.origin}/card.json", cache=CardCache(),
                      channel=_channel(agent.origin, Timeouts(card=1.5)))  # fmt: skip
        assert time.monotonic() - started < 2.5


def _channel(origin: str, timeouts: Timeouts) -> Channel:
    return Channel(origin, timeouts=timeouts, retry=RetryPolicy(retries=2))


def test_registry_health_checks_are_bounded(tmp_path: Path) -> None:
    assert AgentRegistry(SharedState.from_url("memory://")).timeouts.card == CHECK_SECONDS == 10
    mode = ["good"]

    def route(ex: Exchange) -> None:
        if ex.seen.path.endswith("agent-card.json"):
            if mode[0] == "card-drip":
                _drip(ex)
            else:
                ex.json(200, card(f"http://{ex.seen.headers['host']}/rpc"))
        elif mode[0] == "huge-ready":
            _huge(ex, declared=False)
        else:
            _drip(ex, head=True)

    registry = AgentRegistry(SharedState.from_url("memory://"), timeouts=Timeouts(connect=1, read=1.5, card=1.5),
                             retry=RetryPolicy(retries=1))  # fmt: skip
    with serve(route) as agent:
        registry.register(agent.origin)
        for name, expected in (("huge-ready", "the readiness endpoint"), ("ready-drip", "the readiness endpoint"),
                               ("card-drip", "not complete within 1.5s")):  # fmt: skip
            mode[0] = name
            started = time.monotonic()
            (checked,) = registry.check(agent.origin)
            assert time.monotonic() - started < 2.5, name
            assert checked.health == "unhealthy" and expected in (checked.last_error or ""), (name, checked)
    assert MAX_READINESS_BYTES == 64 * 1024


def test_a_card_file_is_capped_too(tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    path.write_bytes(b'{"name":"big","pad":"' + b"a" * (MAX_CARD_BYTES + 10) + b'"}')
    with pytest.raises(CardError, match="larger than"):
        load_card(path)
