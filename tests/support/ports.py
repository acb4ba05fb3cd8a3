"""Loopback ports for test servers that nothing else will take before the server binds it.

A port the kernel picks (bind to port 0, then close) is free only at that instant: under pytest-xdist another
worker can be handed the same port before this one's server binds it, and any outgoing connection can take it
as its source port meanwhile (a private Redis restarted on its old port is exposed the same way). So each
session process gets a block of its own below the kernel's ephemeral range, which outgoing connections never
use, and walks through it in turn, skipping ports something is bound to. Two sessions of one machine start at
random places in their blocks, so they do not march in step.
"""

from __future__ import annotations

import os
import random
import socket
import threading
from pathlib import Path

FIRST = 10_000
BLOCK = 800  # ports per session process: far more than one process starts before it wraps around

_lock = threading.Lock()
_next: int | None = None


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _worker_index() -> int:
    """0 for a plain session (or xdist's controller), n + 1 for xdist worker ``gw<n>``."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) + 1 if name.startswith("gw") else 0


def bindable(port: int) -> bool:
    """Whether ``port`` on 127.0.0.1 can be bound right now."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _kernel_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def free_port() -> int:
    """A loopback port nothing is bound to now, which no other worker of this session is ever given."""
    global _next
    start = FIRST + _worker_index() * BLOCK
    if start + BLOCK > _ephemeral_start():  # more workers than blocks fit: the kernel's choice, as before
        return _kernel_port()
    with _lock:
        if _next is None:
            _next = random.randrange(BLOCK)
        for _ in range(BLOCK):
            port = start + _next
            _next = (_next + 1) % BLOCK
            if bindable(port):
                return port
    raise RuntimeError(f"no free port in {start}-{start + BLOCK - 1}")
