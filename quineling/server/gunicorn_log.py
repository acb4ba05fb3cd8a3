"""gunicorn's logger class for ``quineling serve`` and ``deploy/gunicorn.conf.py``: its error log, its access
log and the app's own loggers in one format (``QUINELING_LOG_FORMAT``, :mod:`quineling.observe.logs`).

In JSON the access log is one object per response, written when the response has been sent (a stream: when it
ended), with the ``request_id`` the app echoed in ``X-Request-ID``; in text gunicorn's error and access lines
keep their usual formats (the access line ends with the request id) and only the app's lines are the text
format's. Loaded by the gunicorn master, so it imports no Flask and no prometheus-client."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from gunicorn.glogging import Logger

from quineling.observe import logs
from quineling.settings import load_settings

REQUEST_ID_HEADER = "X-Request-ID"


class QuinelingLogger(Logger):
    log_format = "text"

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        settings = load_settings()
        self.log_format = logs.resolve_format(settings.log_format)
        # Text keeps gunicorn's own line formats (operators and tools know them); JSON replaces them.
        if self.log_format == "json":
            for log in (self.error_log, self.access_log):
                for handler in log.handlers:
                    logs.dress(handler, self.log_format)
        logs.configure(self.log_format, settings.log_level, flush_seconds=settings.log_flush_seconds)

    def access(self, resp: Any, req: Any, environ: MutableMapping[str, Any], request_time: Any) -> None:
        if self.log_format != "json":
            super().access(resp, req, environ, request_time)
            return
        if not self.cfg.accesslog:
            return
        headers = {name.lower(): value for name, value in (getattr(resp, "headers", None) or [])}
        try:
            self.access_log.info(
                "access",
                extra={
                    "request_id": headers.get(REQUEST_ID_HEADER.lower()),
                    "client": environ.get("REMOTE_ADDR"),
                    "http_method": environ.get("REQUEST_METHOD"),
                    "path": environ.get("PATH_INFO"),
                    "status": getattr(resp, "status_code", None),
                    "bytes": getattr(resp, "sent", None),
                    "duration_seconds": round(request_time.total_seconds(), 6),
                    "user_agent": environ.get("HTTP_USER_AGENT"),
                },
            )
        except Exception:  # noqa: BLE001 - a log line must never fail a request
            self.exception("access log line failed")
