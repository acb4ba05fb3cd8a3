"""Open subscription streams, whatever the binding: the per-process cap (``QUINELING_MAX_STREAMS`` for an HTTP
worker, half of ``QUINELING_GRPC_THREADS`` for the gRPC server) and the error that refuses one more."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from quineling.a2a.errors import InternalError

RETRY_AFTER_SECONDS = 5  # a refused subscriber may try again after this (a slot frees as any stream ends)


class StreamLimitError(InternalError):
    """A new stream refused because this worker already holds its cap: HTTP 503 with ``Retry-After`` on every
    binding, so other requests keep being served. Unlike the protocol's own errors it is a server condition,
    not one of the A2A error table (so it is not in ``errors.ALL_ERRORS``); JSON-RPC carries it as -32603 with
    ``data`` saying it is retryable."""

    http_status, status, reason = 503, "UNAVAILABLE", "STREAM_LIMIT_REACHED"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"This server holds its limit of {limit} open streams per worker; "
            f"retry after {RETRY_AFTER_SECONDS} seconds",
            metadata={"retryable": "true", "retryAfterSeconds": str(RETRY_AFTER_SECONDS)},
        )

    def error_info(self) -> dict[str, Any]:
        return {**super().error_info(), "domain": "quineling"}  # the protocol defines no such reason

    def to_jsonrpc(self) -> dict[str, Any]:
        return {**super().to_jsonrpc(), "data": [self.error_info()]}


class StreamSlots:
    """How many subscription streams this worker process holds open, at most ``limit``; ``watch`` hears the new
    count after every change (the ``quineling_streams_open`` gauge)."""

    def __init__(self, limit: int, watch: Callable[[int], None] | None = None) -> None:
        self.limit = limit
        self._open = 0
        self._lock = threading.Lock()  # gthread: threads; gevent: patched, and never held across a switch
        self._watch = watch

    @property
    def open(self) -> int:
        return self._open

    def acquire(self) -> Callable[[], None] | None:
        """A slot's release function (safe to call twice), or ``None`` when all ``limit`` slots are taken."""
        with self._lock:
            if self._open >= self.limit:
                return None
            self._open += 1
            self._changed()
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if not released:
                    released = True
                    self._open -= 1
                    self._changed()

        return release

    def _changed(self) -> None:
        if self._watch is not None:
            self._watch(self._open)
