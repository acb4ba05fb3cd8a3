"""``GET /.well-known/agent-card.json`` with caching headers; header-less and 0.x discovery gets the v0.3
superset card (docs/decisions-a2a.md, "Where the protocol's sources disagree")."""

from __future__ import annotations

import hashlib

from flask import Blueprint, Response, request

from quineling.a2a.binding import state
from quineling.a2a.endpoints import CARD_PATH
from quineling.a2a.sse import compact
from quineling.a2a.versions import is_legacy_request

blueprint = Blueprint("a2a_discovery", __name__)


@blueprint.get(CARD_PATH)
def agent_card() -> Response:
    app_state = state()
    card = app_state.service.card("1.0")
    compat = app_state.compat()
    # Header-less and 0.x discovery gets the superset card (both generations can parse it); 1.x the pure one.
    if (
        compat is not None
        and app_state.card_superset
        and is_legacy_request(request.headers.get("A2A-Version"))
    ):
        card = compat.card(card, superset=True)
    body = compact(card)
    etag = hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]
    response = Response(body, mimetype="application/json")
    response.set_etag(etag)
    response.headers["Cache-Control"] = f"public, max-age={app_state.card_max_age}"
    if app_state.legacy_compat:
        response.headers["Vary"] = "A2A-Version"
    if request.if_none_match.contains(etag):
        response.status_code = 304
        response.set_data(b"")
    return response
