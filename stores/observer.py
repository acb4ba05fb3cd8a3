"""What a backend reports about its own traffic, for whoever watches it (the app wires it to its metrics).

A plain callback protocol, so the stores stay free of any metrics library: a backend calls
:meth:`StoreObserver.round_trip` once per server call it sends (a repeat after a dropped connection is a
second one) and :meth:`StoreObserver.error` once per call that failed, naming the driver's error class. An
in-process backend makes no round trips and reports nothing.
"""

from __future__ import annotations

from typing import Protocol


class StoreObserver(Protocol):
    def round_trip(self) -> None:
        """One call sent to the server (a command, a pipeline, a script, a blocking read)."""

    def error(self, kind: str) -> None:
        """A call failed; ``kind`` is the driver's exception class (``ConnectionError``, ``TimeoutError``,
        ``ReadOnlyError``, …): a bounded set, never a message."""


class Unobserved:
    """The observer of a backend nobody watches."""

    def round_trip(self) -> None:
        pass

    def error(self, kind: str) -> None:
        pass


UNOBSERVED: StoreObserver = Unobserved()
