"""The HTTP+JSON binding's OpenAPI document, made to say what the server does, and its interactive page.

flask-smorest generates the document from the views in :mod:`quineling.a2a.http.rest`, which carry their summaries,
descriptions, examples and own failures (docstrings, ``@blp.doc``, ``@blp.arguments``); the marshmallow
schemas in :mod:`quineling.a2a.http.schemas` carry their fields' descriptions. This module sets up the document
(its introduction, the security scheme, the components of :mod:`quineling.a2a.http.error_answers` and
:mod:`quineling.a2a.http.openapi_schemas`) and the plugin that completes each operation
(:mod:`quineling.a2a.http.openapi_plugin`).

The page at ``/a2a/rest/docs`` is Swagger UI, its script and style served by this app from the files of the
``flask-swagger-ui`` package: it loads nothing from elsewhere (Swagger UI's validator badge, which would call
out, is off).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from flask import Blueprint, Flask, Response, redirect, request, send_from_directory
from flask_smorest import Api
from flask_smorest import Blueprint as SmorestBlueprint

from quineling.a2a.card import BEARER_SCHEME
from quineling.a2a.http.binding import EXTENSION_NAME
from quineling.a2a.http.error_answers import error_components
from quineling.a2a.http.openapi_plugin import Documenter, Facts
from quineling.a2a.http.openapi_schemas import request_components, response_components

DOCS_PATH = "docs"  # the page, under the binding's prefix
ASSETS_PATH = "docs/assets"  # Swagger UI's files, under the binding's prefix


# --- registration --------------------------------------------------------------------------------------


def _assets_dir() -> str:
    return str(resources.files("flask_swagger_ui") / "dist")


def _info_description(facts: Facts) -> str:
    routes = facts.prefix + "/{tenant}/…"
    if facts.tenants is None:
        tenants = f"every tenant is served (`QUINELING_TENANTS=*`), at `{routes}`."
    elif facts.tenants:
        names = ", ".join(f"`{t}`" for t in sorted(facts.tenants))
        tenants = f"besides the default one, this agent serves {names} at `{routes}`."
    else:
        tenants = f"this agent serves only the default tenant, so the `{routes}` routes are left out."
    return "\n".join(
        [
            "The A2A 1.0 HTTP+JSON binding of the Quineling agent. Its agent card is "
            "`/.well-known/agent-card.json`; the same operations are served over JSON-RPC at `/a2a/jsonrpc`.",
            "",
            f"- Every request carries the header `A2A-Version: {facts.newest}`: without it a request is taken "
            "as v0.3, which this binding does not serve.",
            f"- Request bodies are JSON (`application/json` or `application/a2a+json`), at most "
            f"{facts.request_limit_bytes} bytes; field names may be camelCase or snake_case, and `null` counts "
            "as absent.",
            "- Answers are `application/a2a+json`, or `application/json` when `Accept` prefers it (or names "
            "only it); error answers are `application/json`.",
            "- Every error answer is an `ErrorResponse`: a google.rpc.Status whose `code` is the HTTP status "
            "and whose one `ErrorInfo` detail names the A2A reason. An unknown route is 404 "
            "`METHOD_NOT_FOUND`; a method a route does not serve is 405 with an `Allow` header.",
            f"- Tenants: {tenants}",
        ]
    )


def register(app: Flask, blueprint: SmorestBlueprint) -> Api:
    """Register the HTTP+JSON ``blueprint`` with its OpenAPI document at ``<prefix>/openapi.json`` and the
    Swagger UI page at ``<prefix>/docs``. Needs the app's :class:`A2AState` already in place."""
    prefix = blueprint.url_prefix or ""
    facts = Facts.of(prefix, app.extensions[EXTENSION_NAME])
    documenter = Documenter(facts)
    app.config.setdefault("OPENAPI_SWAGGER_UI_PATH", DOCS_PATH)
    # Relative to the page (<prefix>/docs), so it holds under any mount point.
    app.config.setdefault("OPENAPI_SWAGGER_UI_URL", ASSETS_PATH + "/")
    app.config.setdefault(
        "OPENAPI_SWAGGER_UI_CONFIG",
        # validatorUrl: Swagger UI would otherwise send the document to an online validator.
        {"validatorUrl": None, "deepLinking": True, "displayOperationId": True, "tryItOutEnabled": True},
    )
    docs_url = f"{facts.base_url}{prefix}/{DOCS_PATH}"
    spec_kwargs: dict[str, Any] = {
        "extra_plugins": [documenter],
        "info": {"description": _info_description(facts)},
        "externalDocs": {"description": "Interactive API page (Swagger UI)", "url": docs_url},
    }
    if facts.bearer is not None:
        spec_kwargs["security"] = [{BEARER_SCHEME: []}]  # every operation; the scheme is declared below
    api = Api(app, spec_kwargs=spec_kwargs)
    for name, schema in {**error_components(), **request_components(), **response_components()}.items():
        api.spec.components.schema(name, component=schema)
    if facts.bearer is not None:
        # The card's scheme in OpenAPI's words, so the docs page's "Authorize" sends the token on "Try it out".
        scheme = {"type": "http", "scheme": "bearer", "description": facts.bearer.get("description", "")}
        if "bearerFormat" in facts.bearer:
            scheme["bearerFormat"] = facts.bearer["bearerFormat"]
        api.spec.components.security_scheme(BEARER_SCHEME, scheme)
    api.register_blueprint(blueprint)
    documenter.finish()
    app.register_blueprint(_assets_blueprint(prefix))
    # The page with a trailing slash, as people type it: a permanent redirect to the page (under the mount
    # point the request came through, if any).
    app.add_url_rule(
        f"{prefix}/{DOCS_PATH}/",
        "a2a_rest_docs_slash",
        lambda: redirect(f"{request.script_root}{prefix}/{DOCS_PATH}", code=308),
        methods=["GET"],
    )
    return api


def _assets_blueprint(prefix: str) -> Blueprint:
    assets = Blueprint("a2a_rest_docs_assets", __name__, url_prefix=f"{prefix}/{ASSETS_PATH}")
    directory = _assets_dir()

    @assets.get("/<path:filename>")
    def asset(filename: str) -> Response:
        return send_from_directory(directory, filename, max_age=24 * 3600)

    return assets
