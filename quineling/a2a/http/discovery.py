"""``GET /.well-known/agent-card.json`` with caching headers; header-less and 0.x discovery gets the v0.3
superset card (docs/decisions/0001-where-the-protocols-sources-disagree.md).

Validators (docs/decisions/0005-bindings.md): a strong ``ETag`` hashed from the card's bytes, and
``Last-Modified``, the time this module was loaded. A server's master process loads it (through
``quineling.settings``) before it forks its workers, so every worker of one server sends the same time. The card
is fixed by the settings, which only a restart changes, and a restart loads the module again: no card served
is newer than that time. ``If-None-Match`` wins over ``If-Modified-Since`` (RFC 9110, section 13.2.2).
"""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime

from flask import Blueprint, Response, request

from quineling.a2a.endpoints import CARD_PATH
from quineling.a2a.http.binding import requested_version, state
from quineling.a2a.http.sse import compact
from quineling.a2a.versions import is_legacy_request

blueprint = Blueprint("a2a_discovery", __name__)

# Whole seconds: an HTTP date has no finer resolution, and a client echoes it back in If-Modified-Since.
LOADED_AT = datetime.fromtimestamp(int(time.time()), UTC)


@blueprint.get(CARD_PATH)
def agent_card() -> Response:
    app_state = state()
    card = app_state.service.card("1.0")
    compat = app_state.compat()
    # Header-less and 0.x discovery gets the superset card (both generations can parse it); 1.x the pure one.
    if (
        compat is not None
        and app_state.card_superset
        and is_legacy_request(requested_version())  # the header, else the ?A2A-Version= query parameter
    ):
        card = compat.card(card, superset=True)
    body = compact(card)
    etag = hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]
    response = Response(body, mimetype="application/json")
    response.set_etag(etag)
    response.last_modified = LOADED_AT
    response.headers["Cache-Control"] = f"public, max-age={app_state.card_max_age}"
    if app_state.legacy_compat:
        response.headers["Vary"] = "A2A-Version"
    if _not_modified(etag):
        response.status_code = 304
        response.set_data(b"")
    return response


def _not_modified(etag: str) -> bool:
    """RFC 9110, section 13.2.2: If-None-Match (weak comparison, as for GET) decides when present; only
    without it does If-Modified-Since count, and an unparsable date is ignored."""
    if "If-None-Match" in request.headers:
        return request.if_none_match.contains_weak(etag)
    since = request.if_modified_since
    return since is not None and LOADED_AT <= since
