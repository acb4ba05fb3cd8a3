"""Agent card parsing, tolerant of every shape in use: A2A 1.0 cards, v0.3 cards, the superset card (v0.3
fields plus 1.0 ``supportedInterfaces``) and older ones (``name``, ``url``, ``version``, ``capabilities`` —
possibly a list of names — and ``authentication``). Unknown fields are ignored; the card is kept as ``raw``.

A card must have a name and at least one endpoint with a URL, or :class:`CardError` says which is missing.
Relative interface URLs are resolved against the card's own URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

from quineling.client.errors import CardError

JSONDict = dict[str, Any]

# Extensions the client acts on (docs/client.md, "Extensions"): Quineling's own, declared in the card's
# ``capabilities.extensions``. An agent that does not declare one gets the plain A2A 1.0 behaviour.
EXTENSION_BASE = "https://quineling.dev/a2a/extensions/"
IDEMPOTENCY = EXTENSION_BASE + "idempotency/v1"  # sends honour Idempotency-Key: keyed sends are retried
RESUMABLE_STREAMS = EXTENSION_BASE + "resumable-streams/v1"  # SubscribeToTask honours Last-Event-ID
LONG_POLL = EXTENSION_BASE + "long-poll/v1"  # GetTask honours currentGeneration


@dataclass(frozen=True)
class Interface:
    url: str
    protocol_binding: str  # JSONRPC, HTTP+JSON, GRPC or a custom URI
    protocol_version: str  # Major.Minor
    tenant: str = ""

    @property
    def legacy(self) -> bool:
        """A v0.3 (or older) interface: spoken with v0.3 method names and shapes."""
        return self.protocol_version.startswith("0.")


@dataclass(frozen=True)
class Skill:
    id: str
    name: str
    description: str
    tags: tuple[str, ...]
    examples: tuple[str, ...] = ()

    def matches(self, term: str) -> bool:
        """Case-insensitive: the id, the name or a tag equal to ``term``, or ``term`` in the description."""
        t = term.casefold()
        return (t in (self.id.casefold(), self.name.casefold()) or t in (x.casefold() for x in self.tags)
                or t in self.description.casefold())  # fmt: skip


@dataclass(frozen=True)
class SecurityScheme:
    """One declared scheme: ``kind`` is http, apiKey, oauth2, openIdConnect or mtls. For http ``scheme`` is the
    auth scheme (``bearer``); for apiKey ``location`` (header, query, cookie) and ``name`` say where the key
    goes."""

    kind: str
    scheme: str = ""
    location: str = ""
    name: str = ""


@dataclass(frozen=True)
class AgentCard:
    name: str
    description: str
    version: str
    interfaces: tuple[Interface, ...]
    streaming: bool
    push_notifications: bool
    extended_card: bool
    skills: tuple[Skill, ...]
    security_schemes: dict[str, SecurityScheme]
    generation: str  # "1.0" (incl. the superset card), "0.3" or "legacy"
    source: str = ""  # where it was read from
    raw: JSONDict = field(default_factory=dict, repr=False)
    extensions: frozenset[str] = frozenset()  # the URIs of capabilities.extensions

    def declares(self, uri: str) -> bool:
        return uri in self.extensions

    def find_skills(self, term: str) -> list[Skill]:
        return [s for s in self.skills if s.matches(term)]


def _s(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _version(value: object) -> str:
    """``0.3.0`` → ``0.3``; empty stays empty."""
    parts = _s(value).split(".")
    return ".".join(parts[:2]) if parts[0] else ""


def _interfaces(card: JSONDict, base: str) -> list[Interface]:
    found: list[Interface] = []

    def add(url: object, binding: object, version: object, tenant: object = "") -> None:
        if _s(url):
            found.append(Interface(urljoin(base, _s(url)) if base else _s(url), _s(binding) or "JSONRPC",
                                   _version(version) or "0.3", _s(tenant)))  # fmt: skip

    supported = card.get("supportedInterfaces")
    if isinstance(supported, list) and supported:
        for entry in supported:
            if isinstance(entry, dict):
                add(entry.get("url"), entry.get("protocolBinding") or entry.get("transport"),
                    entry.get("protocolVersion") or "1.0", entry.get("tenant"))  # fmt: skip
        return found
    # v0.3 and older: the main url, then additionalInterfaces, all spoken at the card's protocolVersion.
    version = _version(card.get("protocolVersion")) or "0.3"
    add(card.get("url"), card.get("preferredTransport"), version)
    extra = card.get("additionalInterfaces")
    for entry in extra if isinstance(extra, list) else []:
        if isinstance(entry, dict) and _s(entry.get("url")):
            url = urljoin(base, _s(entry["url"])) if base else _s(entry["url"])
            binding = _s(entry.get("transport")) or "JSONRPC"
            if all((i.url, i.protocol_binding) != (url, binding) for i in found):
                found.append(Interface(url, binding, version))
    return found


def _scheme(raw: object) -> SecurityScheme | None:
    if not isinstance(raw, dict):
        return None
    one_of = {"httpAuthSecurityScheme": "http", "apiKeySecurityScheme": "apiKey", "oauth2SecurityScheme": "oauth2",
              "openIdConnectSecurityScheme": "openIdConnect", "mtlsSecurityScheme": "mtls"}  # fmt: skip
    for member, kind in one_of.items():
        body = raw.get(member)
        if isinstance(body, dict):  # 1.0: one key per entry
            return SecurityScheme(kind, _s(body.get("scheme")).lower(), _s(body.get("location")).lower(),
                                  _s(body.get("name")))  # fmt: skip
    kind = _s(raw.get("type"))  # v0.3: OpenAPI style
    if kind:
        kind = {"mutualTLS": "mtls"}.get(kind, kind)
        return SecurityScheme(
            kind, _s(raw.get("scheme")).lower(), _s(raw.get("in")).lower(), _s(raw.get("name"))
        )
    return None


def _schemes(card: JSONDict) -> dict[str, SecurityScheme]:
    found: dict[str, SecurityScheme] = {}
    declared = card.get("securitySchemes")
    for name, raw in declared.items() if isinstance(declared, dict) else ():
        scheme = _scheme(raw)
        if scheme is not None:
            found[str(name)] = scheme
    legacy = card.get("authentication")  # pre-0.3: {"schemes": ["bearer", …]}
    if not found and isinstance(legacy, dict):
        for name in _strings(legacy.get("schemes")):
            low = name.lower()
            found[name] = (SecurityScheme("apiKey", location="header", name="X-API-Key") if low in ("apikey", "api_key")
                           else SecurityScheme("http", scheme=low))  # fmt: skip
    return found


def _skills(card: JSONDict) -> tuple[Skill, ...]:
    skills: list[Skill] = []
    for raw in card.get("skills") or []:
        if isinstance(raw, dict) and (_s(raw.get("id")) or _s(raw.get("name"))):
            sid = _s(raw.get("id")) or _s(raw.get("name"))
            skills.append(Skill(sid, _s(raw.get("name")) or sid, _s(raw.get("description")),
                                _strings(raw.get("tags")), _strings(raw.get("examples"))))  # fmt: skip
    caps = card.get("capabilities")
    for name in _strings(caps):  # an older card's capabilities list names what it can do
        skills.append(Skill(name, name, "", (name,)))
    return tuple(skills)


def _extensions(caps: JSONDict) -> frozenset[str]:
    declared = caps.get("extensions")
    entries = declared if isinstance(declared, list) else []
    return frozenset(_s(e.get("uri")) for e in entries if isinstance(e, dict) and _s(e.get("uri")))


def _generation(card: JSONDict) -> str:
    if isinstance(card.get("supportedInterfaces"), list) and card["supportedInterfaces"]:
        return "1.0"
    if any(
        k in card for k in ("preferredTransport", "additionalInterfaces", "supportsAuthenticatedExtendedCard")
    ):
        return "0.3"
    return "0.3" if _version(card.get("protocolVersion")).startswith("0.3") else "legacy"


def parse_card(raw: object, *, source: str = "") -> AgentCard:
    """An :class:`AgentCard` from a decoded card document; ``source`` (its URL) resolves relative URLs."""
    where = f" at {source}" if source else ""
    if not isinstance(raw, dict):
        raise CardError(
            f"the agent card{where} is not a JSON object", hint="is this an A2A agent's card URL?"
        )
    name = _s(raw.get("name"))
    if not name:
        raise CardError(f"the agent card{where} has no name", hint="an A2A card must have a non-empty name")
    base = source if source.startswith(("http://", "https://")) else ""
    interfaces = _interfaces(raw, base)
    if not interfaces:
        raise CardError(
            f"the agent card{where} ({name}) declares no endpoint: no supportedInterfaces and no url",
            hint="an A2A 1.0 card lists supportedInterfaces; a v0.3 card has a url",
        )
    caps = raw.get("capabilities")
    caps = caps if isinstance(caps, dict) else {}
    extended = caps.get("extendedAgentCard") is True or raw.get("supportsAuthenticatedExtendedCard") is True
    return AgentCard(
        name=name,
        description=_s(raw.get("description")),
        version=_s(raw.get("version")),
        interfaces=tuple(interfaces),
        streaming=caps.get("streaming") is True,
        push_notifications=caps.get("pushNotifications") is True,
        extended_card=extended,
        skills=_skills(raw),
        security_schemes=_schemes(raw),
        generation=_generation(raw),
        source=source,
        raw=raw,
        extensions=_extensions(caps),
    )
