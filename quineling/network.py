"""The syntax of hosts, origins and addresses: a ``Host`` header or an origin's authority, a browser origin, a
``QUINELING_ALLOWED_HOSTS`` entry, a loopback address. Read by the settings' validation
(:mod:`quineling.settings`), the origin guard (quineling/a2a/http/origin_guard.py) and the gunicorn master's exposure
check (:mod:`quineling.server.options`); standard library only."""

from __future__ import annotations

import ipaddress
import re

DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]  # scheme, host, port (the scheme's default when the text names none)
_HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")  # ASCII names (IDNs as xn--…) and IPv4 addresses
_PORT = re.compile(r":[0-9]{1,5}")


def split_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def split_host(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (a ``Host`` header, an origin's authority) as its lowercase host — an IPv6 address
    without its brackets, a name without a trailing dot — and port; ``None`` if it is not that."""
    text = value.strip().lower()
    if text.startswith("["):
        name, bracket, rest = text[1:].partition("]")
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
        if not bracket:
            return None
    else:
        name, colon, port = text.partition(":")
        name, rest = name.removesuffix("."), colon + port
        if not _HOST_NAME.fullmatch(name):
            return None
    if not rest:
        return name, None
    if not _PORT.fullmatch(rest) or not 0 < int(rest[1:]) < 65536:
        return None
    return name, int(rest[1:])


def parse_origin(text: str) -> Origin | None:
    """A browser origin ``scheme://host[:port]`` (http or https, no path); ``None`` if it is not one."""
    scheme, separator, authority = text.strip().lower().partition("://")
    host = split_host(authority) if separator and scheme in DEFAULT_PORTS else None
    if host is None:
        return None
    return scheme, host[0], DEFAULT_PORTS[scheme] if host[1] is None else host[1]


def host_pattern(entry: str) -> str | None:
    """A ``QUINELING_ALLOWED_HOSTS`` entry, normalised: ``*``, ``.domain`` or one host (an IPv6 address in
    brackets), without a port — the port is not checked; ``None`` if it is none of these."""
    text = entry.strip().lower()
    if text == "*":
        return text
    dot = "." if text.startswith(".") else ""
    host = split_host(text.removeprefix("."))
    return dot + host[0] if host is not None and host[1] is None else None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable only from this machine."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
