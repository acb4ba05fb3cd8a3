"""Who a caller is when it has no principal: its address, from the peer or, behind trusted proxies, from
``X-Forwarded-For`` (docs/deployment.md, "Rate limits").

Every proxy appends the address it received the request from, so the list reads client, proxy, proxy, … and
only the entries appended by proxies we trust are true. Walking from the right, past the trusted proxies, the
first address that is not one is the client; anything further left is whatever the client chose to send. With
no trusted proxies (the default) the header is never read.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Sequence

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# IPv6 clients are counted per /64: one end site gets a /64 (or more) and can pick any address in it.
IPV6_CLIENT_PREFIX = 64


@functools.lru_cache(maxsize=4096)  # the same few peers over and over: parsing is most of the limiter's CPU
def parse_address(text: str) -> Address | None:
    """An address as a peer or ``X-Forwarded-For`` gives it; an IPv4-mapped IPv6 one as IPv4."""
    try:
        address = ipaddress.ip_address(text.strip().removeprefix("[").removesuffix("]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def client_address(peer: str, forwarded_for: Iterable[str], trusted: Sequence[Network]) -> str:
    """The client's address: ``peer`` unless it is a trusted proxy, then the right-most untrusted entry of
    the ``X-Forwarded-For`` headers (``forwarded_for``, in order). An entry that is no address ends the walk
    at the last trusted hop, which is then taken for the client (never the client's own text)."""
    address = parse_address(peer)
    if address is None:
        return peer or "unknown"  # a Unix socket: no address to tell callers apart
    if not _trusted(address, trusted):
        return str(address)
    hops = [hop for header in forwarded_for for hop in header.split(",")]
    for hop in reversed(hops):
        candidate = parse_address(hop)
        if candidate is None:
            break
        address = candidate
        if not _trusted(address, trusted):
            break
    return str(address)


@functools.lru_cache(maxsize=4096)
def client_key(address: str) -> str:
    """What counts as one anonymous client: the address, or its /64 for IPv6."""
    parsed = parse_address(address)
    if isinstance(parsed, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network(f"{parsed}/{IPV6_CLIENT_PREFIX}", strict=False))
    return address


def _trusted(address: Address, trusted: Sequence[Network]) -> bool:
    return any(address.version == network.version and address in network for network in trusted)
