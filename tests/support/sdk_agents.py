"""The two fixture agents built on the official SDKs, as context managers yielding their base URL:

    with js_agent() as base: ...        # tests/interop/js/agent.mjs (@a2a-js/sdk server, express)
    with python_agent() as base: ...    # tests/interop/py_agent.py (a2a-sdk server, uvicorn)

Each picks its own free port and prints ``ready <port>``; both skip (or fail under QUINELING_REQUIRE_INTEROP)
when their SDK is not installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from tests.support.tools import NODE_HOW_TO_GET, REQUIRE_INTEROP, require_tool
from tests.support.tools import unavailable as tool_unavailable

ROOT = Path(__file__).resolve().parents[2]
JS_DIR = ROOT / "tests" / "interop" / "js"


def unavailable(reason: str) -> NoReturn:
    tool_unavailable(reason, REQUIRE_INTEROP)


@contextmanager
def _agent(command: list[str], cwd: Path, timeout: float = 30) -> Iterator[str]:
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    ready = threading.Event()
    port: list[int] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("ready ") and not port:
                port.append(int(line.split()[1]))
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while not ready.wait(0.1):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command} did not start in {timeout}s:\n{''.join(lines)}")
        if not port:
            raise RuntimeError(f"{command} exited with {proc.wait()}:\n{''.join(lines)}")
        yield f"http://127.0.0.1:{port[0]}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(5)
        if proc.stdout is not None:
            proc.stdout.close()


@contextmanager
def js_agent(mode: str = "full") -> Iterator[str]:
    """``mode``: ``full`` (JSON-RPC 1.0, HTTP+JSON 1.0, JSON-RPC 0.3) or ``v03`` (only JSON-RPC 0.3)."""
    node = require_tool("node", NODE_HOW_TO_GET, REQUIRE_INTEROP)
    if (
        not (JS_DIR / "node_modules" / "@a2a-js" / "sdk").exists()
        or not (JS_DIR / "node_modules" / "express").exists()
    ):
        unavailable(
            "the JS fixture agent's packages are not installed (run: bash tests/interop/js/install.sh)"
        )
    with _agent([str(node), "agent.mjs", "0", mode], JS_DIR) as base:
        yield base


@contextmanager
def python_agent() -> Iterator[str]:
    if importlib.util.find_spec("a2a") is None or importlib.util.find_spec("uvicorn") is None:
        unavailable("a2a-sdk[http-server] and uvicorn are not installed (pip install -e '.[interop]')")
    with _agent([sys.executable, "-m", "tests.interop.py_agent", "0"], ROOT) as base:
        yield base
