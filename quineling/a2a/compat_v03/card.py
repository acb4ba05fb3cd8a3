"""The 1.0 Agent Card rendered for v0.3 clients (docs/compat-v03.md, "Agent Card"), optionally as the superset card.

The superset card (JS ``embedV1Interfaces``) is the v0.3 card plus the 1.0 ``supportedInterfaces`` array:
v0.3 parsers ignore the array and 1.0 parsers classify any card with it as 1.0, so one document serves
header-less discovery by either generation.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from quineling.a2a.errors import VersionNotSupportedError
from quineling.a2a.versions import speaks_v03
from stores.jsontypes import JSON as Json

V03_DEFAULT_VERSION = "0.3"


def _interface_to_v03(interface: Json) -> Json:
    return {"url": interface.get("url", ""), "transport": interface.get("protocolBinding", "")}


def _capabilities_to_v03(capabilities: Json) -> Json:
    out: Json = {}
    for name in ("streaming", "pushNotifications"):
        if capabilities.get(name) is not None:
            out[name] = capabilities[name]
    if capabilities.get("extensions"):
        out["extensions"] = copy.deepcopy(capabilities["extensions"])  # AgentExtension is unchanged
    return out  # `extendedAgentCard` moves to the card's top level


def security_requirement_to_v03(requirement: Json) -> Json:
    """``{schemes: {name: {list: [scope…]}}}`` → ``{name: [scope…]}``."""
    schemes = requirement.get("schemes") or {}
    return {name: list((entry or {}).get("list") or []) for name, entry in schemes.items()}


_FLOW_FIELDS = {
    "authorizationCode": ("authorizationUrl", "tokenUrl", "refreshUrl", "scopes"),
    "clientCredentials": ("tokenUrl", "refreshUrl", "scopes"),
    "implicit": ("authorizationUrl", "refreshUrl", "scopes"),
    "password": ("tokenUrl", "refreshUrl", "scopes"),
}  # `deviceCode` has no v0.3 form and is dropped; so is `pkceRequired`


def _flows_to_v03(flows: Json) -> Json:
    out: Json = {}
    for flow, fields in _FLOW_FIELDS.items():
        if flows.get(flow):
            out[flow] = {f: copy.deepcopy(flows[flow][f]) for f in fields if flows[flow].get(f) is not None}
    return out


def _api_key(body: Json) -> Json:
    return {"type": "apiKey", "in": body.get("location", ""), "name": body.get("name", "")}


def _http(body: Json) -> Json:
    out = {"type": "http", "scheme": body.get("scheme", "")}
    if body.get("bearerFormat"):
        out["bearerFormat"] = body["bearerFormat"]
    return out


def _oauth2(body: Json) -> Json:
    out = {"type": "oauth2", "flows": _flows_to_v03(body.get("flows") or {})}
    if body.get("oauth2MetadataUrl"):
        out["oauth2MetadataUrl"] = body["oauth2MetadataUrl"]
    return out


_SCHEMES: dict[str, Callable[[Json], Json]] = {
    "apiKeySecurityScheme": _api_key,
    "httpAuthSecurityScheme": _http,
    "oauth2SecurityScheme": _oauth2,
    "openIdConnectSecurityScheme": lambda b: {
        "type": "openIdConnect",
        "openIdConnectUrl": b.get("openIdConnectUrl", ""),
    },
    "mtlsSecurityScheme": lambda b: {"type": "mutualTLS"},
}


def security_scheme_to_v03(scheme: Json) -> Json | None:
    """A 1.0 oneof SecurityScheme → the OpenAPI-style v0.3 one (``None`` for an unknown kind)."""
    for member, translate in _SCHEMES.items():
        body = scheme.get(member)
        if body is not None:
            out: Json = translate(body)
            if body.get("description"):
                out["description"] = body["description"]
            return out
    return None


def _skill_to_v03(skill: Json) -> Json:
    out: Json = {k: copy.deepcopy(skill.get(k, "")) for k in ("id", "name", "description")}
    out["tags"] = list(skill.get("tags") or [])
    for name in ("examples", "inputModes", "outputModes"):
        if skill.get(name):
            out[name] = list(skill[name])
    if skill.get("securityRequirements"):
        out["security"] = [security_requirement_to_v03(r) for r in skill["securityRequirements"]]
    return out


def _security_to_v03(card: Json, out: Json) -> None:
    schemes = {name: security_scheme_to_v03(s) for name, s in (card.get("securitySchemes") or {}).items()}
    schemes = {name: s for name, s in schemes.items() if s is not None}
    if schemes:
        out["securitySchemes"] = schemes
    if card.get("securityRequirements"):
        out["security"] = [security_requirement_to_v03(r) for r in card["securityRequirements"]]


def card_to_v03(card: Json, *, superset: bool) -> Json:
    """Render a 1.0 AgentCard for v0.3 clients; ``superset`` also embeds ``supportedInterfaces``.

    Only interfaces with an empty version or one in [0.3, 1.0) are offered to v0.3 clients (a v0.3 client
    would speak v0.3 to every URL it is given); none ⇒ VersionNotSupportedError. The first one gives
    ``url``/``preferredTransport``/``protocolVersion`` (its own value, else "0.3", as JS and PY do).
    """
    interfaces = card.get("supportedInterfaces") or []
    legacy = [i for i in interfaces if speaks_v03(i.get("protocolVersion"))]
    if not legacy:
        raise VersionNotSupportedError("The agent declares no interface for protocol version 0.3")
    primary = legacy[0]
    capabilities = card.get("capabilities") or {}
    out: Json = {
        "protocolVersion": primary.get("protocolVersion") or V03_DEFAULT_VERSION,
        "name": card.get("name", ""),
        "description": card.get("description", ""),
        "url": primary.get("url", ""),
        "preferredTransport": primary.get("protocolBinding") or "JSONRPC",
    }
    if len(legacy) > 1:
        out["additionalInterfaces"] = [_interface_to_v03(i) for i in legacy[1:]]
    for name in ("iconUrl", "provider", "documentationUrl"):
        if card.get(name):
            out[name] = copy.deepcopy(card[name])
    out["version"] = card.get("version", "")
    out["capabilities"] = _capabilities_to_v03(capabilities)
    _security_to_v03(card, out)
    out["defaultInputModes"] = list(card.get("defaultInputModes") or [])
    out["defaultOutputModes"] = list(card.get("defaultOutputModes") or [])
    out["skills"] = [_skill_to_v03(s) for s in card.get("skills") or []]
    if capabilities.get("extendedAgentCard") is not None:
        out["supportsAuthenticatedExtendedCard"] = bool(capabilities["extendedAgentCard"])
    if card.get("signatures"):
        # Copied as JS does; note they were computed over the 1.0 payload, so they will not verify here.
        out["signatures"] = copy.deepcopy(card["signatures"])
    if superset:
        out["supportedInterfaces"] = copy.deepcopy(interfaces)
        _security_superset(card, out)
    return out


def _security_superset(card: Json, out: Json) -> None:
    """The superset card's security in both generations' shapes: each scheme is the v0.3 object with the 1.0
    oneof member beside it (``type`` for v0.3 readers, ``httpAuthSecurityScheme`` etc. for 1.0 ones; each
    ignores the other's keys), and the 1.0 ``securityRequirements`` sit beside v0.3's ``security``."""
    schemes = card.get("securitySchemes") or {}
    for name, v03 in (out.get("securitySchemes") or {}).items():
        v03.update(copy.deepcopy(schemes[name]))
    if card.get("securityRequirements"):
        out["securityRequirements"] = copy.deepcopy(card["securityRequirements"])
