"""Log records as one JSON object per line (``QUINELING_LOG_FORMAT=json``) or as readable text (``text``), for
the app's loggers and gunicorn's alike (docs/deployment.md, "Logs").

Both formats carry the same fields: ``time``, ``level``, ``logger``, ``pid`` (which worker), ``event`` (the
message), and whatever the record was given as ``extra`` (a request's ``request_id``, ``binding``, ``method``,
…). Every record logged while a request is served gets that request's ``request_id``
(:class:`RequestIdFilter`), so a request's warnings can be found by the id its response echoed. JSON comes
from python-json-logger, encoded by orjson.

No code logs a token, a message's contents or a thought at info level: the request line carries labels, ids
and numbers only (tests/e2e/test_observability_live.py sends a secret and looks for it in a live server's logs).
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.orjson import OrjsonFormatter

from quineling.observe import notes

_OURS = "_quineling"  # marks the handler configure() installed, so a second call replaces it


def resolve_format(setting: str, stream: TextIO | None = None) -> str:
    """``auto``: text on a terminal, JSON otherwise (a file, a pipe, a container's log collector)."""
    if setting != "auto":
        return setting
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return "text" if isatty is not None and isatty() else "json"


class RequestIdFilter(logging.Filter):
    """Adds the request being served's ``request_id`` to every record that has none."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            current = notes.current()
            if current is not None:
                record.request_id = current.request_id
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
    handler.setFormatter(formatter(log_format))
    if not any(isinstance(f, RequestIdFilter) for f in handler.filters):
        handler.addFilter(RequestIdFilter())


def configure(log_format: str, level: str = "info", stream: TextIO | None = None) -> None:
    """Send the root logger (the app's loggers propagate to it) to ``stream`` (stderr) in ``log_format``."""
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, _OURS, False):
            root.removeHandler(old)
    handler: Any = logging.StreamHandler(sys.stderr if stream is None else stream)
    setattr(handler, _OURS, True)
    dress(handler, resolve_format(log_format, stream))
    root.addHandler(handler)
    root.setLevel(level.upper())
