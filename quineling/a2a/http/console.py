"""The operator console at ``/ui`` (docs/console.md): a static page, its script and style, shipped in the package,
and the one view of its own, ``GET /ui/api/operator``, for the principals ``QUINELING_OPERATORS`` names.

The page calls only the public API, same-origin, with the caller's own bearer token, so it shows what that
principal may see. Everything it serves carries a strict Content-Security-Policy (its own origin only, no inline
script or style) and refuses to be framed; the Host/Origin guard and the authentication hook sit in front of it
as in front of every other route.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, jsonify

from quineling.a2a.endpoints import CONSOLE_PATH, OPERATOR_PATH
from quineling.a2a.http.authentication import authenticated_principal
from quineling.auth.keyfile import ANONYMOUS
from quineling.network import split_list

STATIC = Path(__file__).with_name("console_static")
# The files the page is made of, by name; nothing else of the directory is served.
MEDIA_TYPES = {
    "index.html": "text/html; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "viewer.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

Report = Callable[[], dict[str, Any]]


def blueprint(operators: str, report: Report) -> Blueprint:
    """The console's routes. ``operators``: the ``QUINELING_OPERATORS`` setting; ``report``: what the operator
    view shows (store usage and limits, readiness, the agent registry), asked afresh on each request."""
    allowed = frozenset(split_list(operators))
    files = {name: (STATIC / name).read_bytes() for name in MEDIA_TYPES}  # a few kB, read once per app
    console = Blueprint("console", __name__)

    def serve(name: str) -> Response:
        return _hardened(Response(files[name], content_type=MEDIA_TYPES[name]))

    @console.get(CONSOLE_PATH)
    @console.get(CONSOLE_PATH + "/")
    def page() -> Response:
        return serve("index.html")

    @console.get(CONSOLE_PATH + "/<name>")
    def asset(name: str) -> Response:
        if name not in MEDIA_TYPES or name == "index.html":
            return _hardened(_json({"error": {"code": 404, "message": "not a file of the console"}}, 404))
        return serve(name)

    @console.get(OPERATOR_PATH)
    def operator() -> Response:
        principal = authenticated_principal()
        caller = principal.scope_id if principal is not None else ANONYMOUS
        if caller not in allowed:
            message = "this principal is not an operator: QUINELING_OPERATORS lists who may read this view"
            return _hardened(
                _json({"error": {"code": 403, "status": "PERMISSION_DENIED", "message": message}}, 403)
            )
        return _hardened(_json(report(), 200))

    return console


def _json(body: dict[str, Any], status: int) -> Response:
    response = jsonify(body)
    response.status_code = status
    return response


def _hardened(response: Response) -> Response:
    response.headers.update(HEADERS)
    return response
