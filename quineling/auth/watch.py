"""A file whose parsed contents follow its edits: every worker re-checks it at most once per ``interval``
seconds and re-reads it only when it changed (inode, size or modification time), so rotating or revoking a
credential takes effect everywhere within seconds, without a restart and without reading the file on every
request."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
CHECK_SECONDS = 1.0

Signature = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns
MISSING: Signature = (-1, -1, -1, -1)


class ParseError(ValueError):
    """The file's contents are not valid; the message says where and why (never the contents)."""


class WatchedFile(Generic[T]):
    """``current()`` is ``parse(text)`` of the file as it was at most ``interval`` seconds ago.

    The first read happens in the constructor and raises :class:`ParseError` or :class:`OSError`, so a bad
    file fails start-up. A later bad edit or a missing file keeps the last good value and logs why, once per
    change: a half-written file must not lock every caller out, nor an editor's rename let everyone in.
    """

    def __init__(
        self,
        path: str | Path,
        parse: Callable[[str], T],
        *,
        what: str,
        interval: float = CHECK_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self._parse = parse
        self._what = what
        self._interval = interval
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._signature = self._stat()
        self._value = parse(self.path.read_text(encoding="utf-8"))
        self._checked = monotonic()
        self._refused: Signature | None = None  # the last signature whose contents were refused

    def _stat(self) -> Signature:
        stat = os.stat(self.path)
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)

    def current(self) -> T:
        now = self._monotonic()
        if now - self._checked < self._interval:
            return self._value
        with self._lock:
            if now - self._checked >= self._interval:
                self._checked = now
                self._reload()
            return self._value

    def _reload(self) -> None:
        try:
            signature = self._stat()
        except OSError as exc:
            self._refuse(MISSING, exc.strerror or str(exc))
            return
        if signature in (self._signature, self._refused):
            return
        try:
            value = self._parse(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ParseError) as exc:
            self._refuse(signature, exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
            return
        self._value, self._signature, self._refused = value, signature, None
        log.info("%s %s reloaded", self._what, self.path)

    def _refuse(self, signature: Signature, reason: str) -> None:
        """Keep the last good value; say why once per refused version of the file."""
        if signature != self._refused:
            self._refused = signature
            log.warning("%s %s not reloaded, keeping the last good one: %s", self._what, self.path, reason)
