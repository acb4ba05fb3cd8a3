"""One answered call's metrics and log line, whatever its binding: the HTTP edge's observation hook
(:mod:`quineling.a2a.http.observation`), the lean JSON-RPC path and the gRPC edge all record here, so every
call is counted, timed and logged alike (docs/deployment.md, "Metrics" and "Logs")."""

from __future__ import annotations

import logging
import os
import re

from quineling.auth import Principal
from quineling.observe import logs, metrics, notes

log = logging.getLogger("quineling.request")

_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
A2A_BINDINGS = frozenset({"jsonrpc", "v03", "rest", "grpc"})  # what the rate limit guards


def request_id(header: str | None) -> str:
    """The caller's id when it is sane, else a fresh one (32 hex digits)."""
    if header and _SANE_REQUEST_ID.fullmatch(header):
        return header
    return os.urandom(16).hex()  # what uuid4 draws, without building a UUID (a few microseconds less)


def record(
    current: notes.RequestNotes,
    *,
    status: int,
    seconds: float,
    client: str | None,
    principal: Principal | None,
    http_method: str,
    path: str,
) -> None:
    """Count, time and log one answered request (the Flask hook's and the lean JSON-RPC path's one place)."""
    outcome = current.outcome or ("ok" if status < 400 else f"HTTP_{status}")
    metrics.record_request(current.binding, current.method, outcome, seconds)
    if status == 429 and current.binding in A2A_BINDINGS:
        metrics.record_rate_limited(current.binding)
    quiet = current.binding in ("health", "metrics") and status < 400
    fields = {
        "request_id": current.request_id,
        "client": client,
        "principal": None if principal is None else principal.scope_id,
        "binding": current.binding,
        "method": current.method,
        "outcome": outcome,
        "status": status,
        "task_id": current.task_id,
        "operation": current.operation,
        "http_method": http_method,
        "path": path,
        "duration_seconds": round(seconds, 6),
    }
    extra = {key: value for key, value in fields.items() if value is not None}
    logs.log_fields(log, logging.DEBUG if quiet else logging.INFO, "request", extra)
