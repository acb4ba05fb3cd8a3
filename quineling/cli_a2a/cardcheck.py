"""``card get --validate``: the A2A 1.0 AgentCard's shape — required fields present and non-empty, the right
JSON types, every interface usable (absolute http(s) URL, a known binding or a URI, a Major.Minor version)
and each security scheme one of the defined kinds. Unknown fields are allowed, as the protocol says."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

_VERSION = re.compile(r"^\d+\.\d+$")
_BINDINGS = {"JSONRPC", "HTTP+JSON", "GRPC"}
_KIND_NAMES: dict[type, str] = {str: "string", list: "array", dict: "object"}
_SCHEMES = {
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
}


def problems(card: object) -> list[str]:
    """Every way ``card`` differs from the 1.0 AgentCard shape, as ``path: what`` (empty: valid)."""
    if not isinstance(card, dict):
        return ["card: not a JSON object"]
    found: list[str] = []
    for name in ("name", "description", "version"):
        _need(card, name, str, found)
    for name in ("defaultInputModes", "defaultOutputModes"):
        if _need(card, name, list, found, nonempty=True):
            found += [
                f"{name}[{i}]: not a string" for i, m in enumerate(card[name]) if not isinstance(m, str)
            ]
    if _need(card, "capabilities", dict, found, nonempty=False):
        for flag in ("streaming", "pushNotifications", "extendedAgentCard"):
            if flag in card["capabilities"] and not isinstance(card["capabilities"][flag], bool):
                found.append(f"capabilities.{flag}: not a boolean")
    if _need(card, "supportedInterfaces", list, found, nonempty=True):
        for index, interface in enumerate(card["supportedInterfaces"]):
            found += _interface(interface, f"supportedInterfaces[{index}]")
    if _need(card, "skills", list, found, nonempty=True):
        for index, skill in enumerate(card["skills"]):
            where = f"skills[{index}]"
            if not isinstance(skill, dict):
                found.append(f"{where}: not an object")
                continue
            for name in ("id", "name", "description"):
                _need(skill, name, str, found, where=where)
            _need(skill, "tags", list, found, nonempty=True, where=where)
    schemes = card.get("securitySchemes")
    if schemes is not None:
        if not isinstance(schemes, dict):
            found.append("securitySchemes: not an object")
        else:
            for name, scheme in schemes.items():
                if not isinstance(scheme, dict) or len(scheme) != 1 or next(iter(scheme)) not in _SCHEMES:
                    found.append(f"securitySchemes.{name}: not exactly one of {', '.join(sorted(_SCHEMES))}")
    provider = card.get("provider")
    if provider is not None:
        if not isinstance(provider, dict):
            found.append("provider: not an object")
        else:
            for name in ("url", "organization"):
                _need(provider, name, str, found, where="provider")
    return found


def _need(
    obj: dict[str, Any], name: str, kind: type, found: list[str], *, nonempty: bool = True, where: str = ""
) -> bool:
    path = f"{where}.{name}" if where else name
    if name not in obj:
        found.append(f"{path}: required")
        return False
    value = obj[name]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        found.append(
            f"{path}: must be a{'n' if kind in (list, dict) else ''} {_KIND_NAMES.get(kind, kind.__name__)}"
        )
        return False
    if nonempty and kind in (str, list) and not value:
        found.append(f"{path}: must not be empty")
        return False
    return True


def _interface(interface: object, where: str) -> list[str]:
    if not isinstance(interface, dict):
        return [f"{where}: not an object"]
    found: list[str] = []
    if _need(interface, "url", str, found, where=where):
        parts = urlsplit(interface["url"])
        if parts.scheme not in ("http", "https") or not parts.netloc:
            found.append(f"{where}.url: not an absolute http(s) URL")
    if _need(interface, "protocolBinding", str, found, where=where):
        binding = interface["protocolBinding"]
        if binding not in _BINDINGS and ":" not in binding:
            found.append(
                f"{where}.protocolBinding: {binding!r} is neither JSONRPC, HTTP+JSON, GRPC nor a URI"
            )
    if _need(interface, "protocolVersion", str, found, where=where) and not _VERSION.match(
        interface["protocolVersion"]
    ):
        found.append(f"{where}.protocolVersion: not Major.Minor")
    if "tenant" in interface and not isinstance(interface["tenant"], str):
        found.append(f"{where}.tenant: must be a string")
    return found
