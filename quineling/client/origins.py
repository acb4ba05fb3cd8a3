"""Where credentials may go: only to the origin the user named, or to origins the user explicitly allowed.

A card is the agent's own statement, so it cannot widen that set: a card fetched from ``https://a.example``
whose interface is at ``https://b.example`` gets its requests sent there *without* the bearer token or API key,
and a :class:`CredentialsNotSent` warning says so (once per origin). An origin is scheme, host and port
(``https://a.example`` and ``https://a.example:443`` are one origin; ``http://a.example`` is another).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


class CredentialsNotSent(UserWarning):  # noqa: N818 - a notice (warnings category), not an error
    """A request went to ``origin`` without the credentials, because the user did not name or allow it."""

    def __init__(self, origin: str, allowed: Iterable[str]) -> None:
        self.origin = origin
        self.allowed = tuple(sorted(allowed))
        named = ", ".join(self.allowed) or "no origin"
        super().__init__(
            f"credentials not sent to {origin}: the agent's card points there, but only {named} was named or "
            f"allowed (allow it explicitly to send them: allowed_origins / --allow-origin {origin})"
        )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL (lower-case, the port always explicit); None for anything else
    (a file path, another scheme, no host)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        return None
    host = parts.hostname.lower()
    return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"


def parse_origin(text: str) -> str:
    """An origin the user allows: ``https://host[:port]`` (a trailing ``/`` is fine), or a bare ``host[:port]``
    — https, or http for loopback hosts, the rule ``-a`` follows. Raises ValueError for anything with a path,
    query or user info, or that is not http(s)."""
    value = text.strip()
    if "://" not in value:
        host = urlsplit(f"//{value}").hostname or ""
        value = f"{'http' if _loopback(host) else 'https'}://{value}"
    parts = urlsplit(value)
    found = origin_of(value)
    if found is None or parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(f"{text!r} is not an origin (scheme://host[:port], e.g. https://agent.example)")
    return found


def named_origins(source: str, interface_urls: Iterable[str], allowed: Iterable[str] = ()) -> frozenset[str]:
    """The origins credentials may go to: the origin of ``source`` when the user named a URL; when the user
    handed over the card itself (a file, or a card object), the origins its interfaces name — the user chose
    that card; plus every explicitly ``allowed`` origin (see :func:`parse_origin`)."""
    own = origin_of(source)
    found = {own} if own else {o for o in map(origin_of, interface_urls) if o}
    return frozenset(found | {parse_origin(a) for a in allowed})
