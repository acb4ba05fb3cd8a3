"""Long-poll GetTask (the protocol's draft 1.1 ``currentGeneration``; docs/decisions/0015-long-poll-gettask.md).

A GetTask with ``currentGeneration=N`` answers as soon as the task's generation is above ``N`` — at once if it
already is — or after at most ``seconds`` with the task as it is then. It waits on the task's event log (a
blocking read: XREAD BLOCK on Redis, the store's condition in memory), never by re-reading the task in a loop,
in slices so a client that went away or a stopping worker frees the waiter. A worker holds at most ``limit``
waiters at once; one more is answered at once, so waiting requests can never take every thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from quineling.a2a.errors import A2AError


@dataclass(slots=True)
class LongPoll:
    seconds: float = 30.0
    limit: int = 4
    slice_seconds: float = 1.0
    _waiting: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def waiting(self) -> int:
        return self._waiting

    def enter(self) -> Callable[[], None] | None:
        """A waiter's release function, or ``None`` when ``limit`` requests already wait on this worker."""
        with self._lock:
            if self._waiting >= self.limit or self.seconds <= 0:
                return None
            self._waiting += 1

        def release() -> None:
            with self._lock:
                self._waiting -= 1

        return release


class GenerationMismatchError(A2AError):
    """A send's ``configuration.ifGenerationMatch`` names another generation than the task's: the draft 1.1
    error, JSON-RPC -32010 and HTTP 409, ErrorInfo metadata ``taskId``, ``expectedGeneration`` and
    ``currentGeneration``. Nothing was executed or recorded."""

    code, http_status, status, reason = -32010, 409, "ABORTED", "TASK_GENERATION_MISMATCH"
    default_message = "The task's generation does not match ifGenerationMatch"

    def to_jsonrpc(self) -> dict[str, object]:
        return {**super().to_jsonrpc(), "data": [self.error_info()]}
