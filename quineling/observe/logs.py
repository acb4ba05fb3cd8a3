"""Log records as one JSON object per line (``QUINELING_LOG_FORMAT=json``) or as readable text (``text``), for
the app's loggers and gunicorn's alike (docs/deployment.md, "Logs").

Both formats carry the same fields: ``time``, ``level``, ``logger``, ``pid`` (which worker), ``event`` (the
message), and whatever the record was given as ``extra`` (a request's ``request_id``, ``binding``, ``method``,
…). Every record logged while a request is served gets that request's ``request_id``
(:class:`RequestIdFilter`), so a request's warnings can be found by the id its response echoed. JSON comes
from python-json-logger, encoded by orjson.

Lines of level INFO and below are written in batches (:class:`BatchedStreamHandler`): at most
``QUINELING_LOG_FLUSH_SECONDS`` late (1 s; 0 writes each line at once) or when 64 KiB are waiting, and at once
with any WARNING or worse, which also writes what waited before it. One write per request was a tenth of a
request's CPU on a busy worker (the system call and the wake-up of whatever reads the stream).

No code logs a token, a message's contents or a thought at info level: the request line carries labels, ids
and numbers only (tests/e2e/test_observability_live.py sends a secret and looks for it in a live server's logs).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import weakref
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.orjson import OrjsonFormatter

from quineling.observe import notes

_OURS = "_quineling"  # marks the handler configure() installed, so a second call replaces it
_JSON = "_quineling_json"  # the JSON formatter dress() gave a handler (None: text)


def resolve_format(setting: str, stream: TextIO | None = None) -> str:
    """``auto``: text on a terminal, JSON otherwise (a file, a pipe, a container's log collector)."""
    if setting != "auto":
        return setting
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return "text" if isatty is not None and isatty() else "json"


def _served_request_id() -> str | None:
    current = notes.current()
    return None if current is None else current.request_id


class RequestIdFilter(logging.Filter):
    """Adds the request being served's ``request_id`` to every record that has none."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id") and (request_id := _served_request_id()) is not None:
            record.request_id = request_id
        return True


def json_formatter() -> logging.Formatter:
    return OrjsonFormatter(
        ["levelname", "name", "process", "message"],
        rename_fields={"levelname": "level", "name": "logger", "process": "pid", "message": "event"},
        timestamp="time",
    )


class TextFormatter(logging.Formatter):
    """``time level logger event key=value …``: the JSON format's fields, for a person at a terminal."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s pid=%(process)d %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = " ".join(
            f"{key}={value}"
            for key, value in record.__dict__.items()
            if key not in RESERVED_ATTRS and not key.startswith("_") and value is not None
        )
        return f"{line} {extras}" if extras else line


def formatter(log_format: str) -> logging.Formatter:
    return json_formatter() if log_format == "json" else TextFormatter()


def dress(handler: logging.Handler, log_format: str) -> None:
    """Give ``handler`` the format's formatter and the request-id filter (once)."""
    made = formatter(log_format)
    handler.setFormatter(made)
    setattr(handler, _JSON, made if log_format == "json" else None)
    if not any(isinstance(f, RequestIdFilter) for f in handler.filters):
        handler.addFilter(RequestIdFilter())


BATCH_BYTES = 64 * 1024
_batching: weakref.WeakSet[BatchedStreamHandler] = weakref.WeakSet()


class BatchedStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that writes lines in batches: when ``flush_seconds`` have passed since the first line
    waiting, when :data:`BATCH_BYTES` wait, when a WARNING or worse arrives (written with what waited, so the
    order holds), and at exit (``logging.shutdown`` flushes every handler). A process that is killed loses
    what waits, at most ``flush_seconds`` of lines. A forked child starts with nothing waiting (the parent
    writes its own lines before the fork), and each process runs its own flusher (a thread, a greenlet
    under gevent), started with its first waiting line."""

    def __init__(self, stream: TextIO, flush_seconds: float) -> None:
        super().__init__(stream)
        self.flush_seconds = flush_seconds
        self._waiting: list[str] = []
        self._size = 0
        self._flusher_pid = 0
        _batching.add(self)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except Exception:  # noqa: BLE001 - logging's own rule: a bad record is reported, never raised
            self.handleError(record)
            return
        self.add_line(line, record.levelno, record)

    def add_line(self, line: str, level: int, record: logging.LogRecord | None = None) -> None:
        """Write ``line`` (formatted, newline included) as a record of ``level`` would be."""
        with self.lock:  # type: ignore[union-attr]
            self._waiting.append(line)
            self._size += len(line)
            if level < logging.WARNING and self._size < BATCH_BYTES and self.flush_seconds > 0:
                self._start_flusher()
                return
            self._write_waiting(record)

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._write_waiting(None)
            super().flush()

    def close(self) -> None:
        self.flush()
        super().close()

    def _write_waiting(self, record: logging.LogRecord | None) -> None:
        if not self._waiting:
            return
        text, self._waiting, self._size = "".join(self._waiting), [], 0
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:  # noqa: BLE001 - as StreamHandler: a stream that fails never fails the caller
            if record is not None:
                self.handleError(record)

    def _start_flusher(self) -> None:
        pid = os.getpid()
        if self._flusher_pid == pid:
            return
        self._flusher_pid = pid
        ref = weakref.ref(self)

        def run() -> None:
            while (handler := ref()) is not None and handler._flusher_pid == pid:
                interval = handler.flush_seconds
                del handler  # a closed, dropped handler ends its flusher
                time.sleep(interval)
                if (handler := ref()) is not None:
                    handler.flush()

        threading.Thread(target=run, name="log-flusher", daemon=True).start()

    def _forget_waiting(self) -> None:
        self._waiting, self._size, self._flusher_pid = [], 0, 0


def _before_fork() -> None:
    for handler in list(_batching):
        handler.flush()


def _after_fork_in_child() -> None:
    for handler in list(_batching):
        handler._forget_waiting()


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def configure(
    log_format: str, level: str = "info", stream: TextIO | None = None, flush_seconds: float = 0.0
) -> None:
    """Send the root logger (the app's loggers propagate to it) to ``stream`` (stderr) in ``log_format``,
    lines below WARNING in batches at most ``flush_seconds`` late (0: each at once)."""
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, _OURS, False):
            root.removeHandler(old)
            old.close()
    out = sys.stderr if stream is None else stream
    handler = BatchedStreamHandler(out, flush_seconds)  # 0: each line written at once
    setattr(handler, _OURS, True)
    dress(handler, resolve_format(log_format, stream))
    root.addHandler(handler)
    root.setLevel(level.upper())


def log_fields(logger: logging.Logger, level: int, event: str, fields: dict[str, Any]) -> None:
    """``logger.log(level, event, extra=fields)``, written as the same line. When the record would reach only
    the JSON handler :func:`configure` installs — no other handler and no filter on the way, its formatter
    unchanged — the line is made here in one orjson call, without a LogRecord and the formatter's passes over
    it (about a tenth of a small request's CPU). ``fields`` holds no key of the line's own (``level``,
    ``logger``, ``pid``, ``event``, ``time``)."""
    if not logger.isEnabledFor(level):
        return
    handler = _sole_json_handler(logger)
    if handler is None or level < handler.level:
        logger.log(level, event, extra=fields)
        return
    line = {"level": logging.getLevelName(level), "logger": logger.name, "pid": os.getpid(), "event": event}
    line.update(fields)
    if "request_id" not in line and (request_id := _served_request_id()) is not None:  # as RequestIdFilter
        line["request_id"] = request_id
    line["time"] = datetime.now(UTC)
    text = orjson.dumps(line, option=orjson.OPT_NON_STR_KEYS).decode()
    handler.add_line(text + handler.terminator, level)


def _sole_json_handler(logger: logging.Logger) -> BatchedStreamHandler | None:
    """The one handler a record of ``logger`` reaches, when it is ours, in JSON, with nothing else on the way."""
    found: BatchedStreamHandler | None = None
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters:
            return None
        for handler in current.handlers:
            if found is not None or not isinstance(handler, BatchedStreamHandler):
                return None
            json_formatter = getattr(handler, _JSON, None)
            if json_formatter is None or handler.formatter is not json_formatter:
                return None
            if any(not isinstance(f, RequestIdFilter) for f in handler.filters):
                return None
            found = handler
        if not current.propagate:
            break
        current = current.parent
    return found
