"""Which gunicorn worker served each request, for the end-to-end tests over real HTTP.

The clients (``tests/support/http_bindings.py``) open a fresh connection per request, so consecutive requests
are accepted by whichever worker process wins the listening socket, and tag every request with an
``X-Test-Request`` header. :func:`traced_server` starts gunicorn with an access-log format of ``<pid> <tag>``
(through gunicorn's own ``GUNICORN_CMD_ARGS``; the production code is untouched), so :meth:`WorkerTrace.pid`
maps a tag to the worker that served it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.support.http_bindings import TAG_HEADER
from tests.support.live import LiveServer, live_server

_LOG_LINE = re.compile(r"^<(\d+)> ([0-9a-f]{32})$", re.MULTILINE)


@contextmanager
def traced_server(**kwargs: Any) -> Iterator[LiveServer]:
    """``live_server`` with an access log of ``<worker pid> <X-Test-Request tag>`` lines."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GUNICORN_CMD_ARGS", f"--access-logformat='%(p)s %({{{TAG_HEADER.lower()}}}i)s'")
        starting = live_server(access_log=1, log_format="text", **kwargs)  # the format above is text
        server = starting.__enter__()
    try:
        yield server
    finally:
        starting.__exit__(None, None, None)


class WorkerTrace:
    """Reads the traced access log: which worker pid served the request with a given tag."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server

    def pids(self) -> dict[str, int]:
        return {tag: int(pid) for pid, tag in _LOG_LINE.findall(self.server.log_text())}

    def pid(self, tag: str, wait: float = 5.0) -> int:
        """The pid that served ``tag`` (gunicorn logs a request when its response is finished)."""
        deadline = time.monotonic() + wait
        while True:
            found = self.pids().get(tag)
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"request {tag} is not in the access log")
            time.sleep(0.05)
