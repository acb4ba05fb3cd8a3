"""The check of a thread's Redis connection before each call: readable means closed by the peer or holding
unread bytes, never blocking, and under gevent the OS's poll (gevent's sets up a hub watcher per call)."""

from __future__ import annotations

import socket
import subprocess
import sys

from stores.redis_connection import socket_readable


def test_an_idle_open_socket_is_not_readable_and_unread_bytes_or_a_close_make_it_so() -> None:
    ours, peer = socket.socketpair()
    try:
        assert not socket_readable(ours)
        peer.sendall(b"+stray\r\n")
        assert socket_readable(ours)
        ours.recv(64)
        assert not socket_readable(ours)
        peer.close()
        assert socket_readable(ours)  # EOF: the server closed the connection
    finally:
        ours.close()
        peer.close()


def test_under_gevent_the_check_uses_the_unpatched_poll() -> None:
    program = """
from gevent import monkey
monkey.patch_all()
import select, socket
from stores import redis_connection
assert redis_connection._unpatched_poll() is monkey.get_original("select", "poll")
assert redis_connection._unpatched_poll() is not select.poll
a, b = socket.socketpair()
assert not redis_connection.socket_readable(a)
b.close()
assert redis_connection.socket_readable(a)
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr
