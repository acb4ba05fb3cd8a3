"""Choosing the interface to speak from the card's ``supportedInterfaces``.

Native first: JSON-RPC 1.0 and HTTP+JSON 1.0 (any 1.x), in the card's order — or in the caller's preference
order when one is given, skipping bindings the card lacks and falling back to the card's order when none
matches. v0.3 JSON-RPC comes after every native interface, so it is used only when the agent offers nothing
newer (and not at all with ``allow_v03=False``). The rest of the list stays as fallbacks for a card that lies.
"""

from __future__ import annotations

from collections.abc import Sequence

from quineling.client.card import AgentCard, Interface
from quineling.client.errors import CardError

NATIVE = ("JSONRPC", "HTTP+JSON")


def _binding(interface: Interface) -> str:
    return interface.protocol_binding.upper()


def speakable(interface: Interface) -> bool:
    binding = _binding(interface)
    if interface.legacy:
        return binding == "JSONRPC" and interface.protocol_version == "0.3"
    return binding in NATIVE and interface.protocol_version.split(".")[0] == "1"


def candidates(
    card: AgentCard, preference: Sequence[str] | None = None, *, allow_v03: bool = True
) -> list[Interface]:
    usable = [i for i in card.interfaces if speakable(i) and (allow_v03 or not i.legacy)]
    wanted = [p.upper() for p in preference or ()]
    if wanted and any(_binding(i) in wanted for i in usable):
        usable = sorted((i for i in usable if _binding(i) in wanted), key=lambda i: wanted.index(_binding(i)))
    native = [i for i in usable if not i.legacy]
    ordered = native + [i for i in usable if i.legacy]
    if not ordered:
        offered = (
            ", ".join(f"{i.protocol_binding} {i.protocol_version}" for i in card.interfaces) or "nothing"
        )
        raise CardError(
            f"agent {card.name!r} offers no interface this client speaks (it offers {offered})",
            hint="this client speaks JSON-RPC and HTTP+JSON at A2A 1.0, and JSON-RPC at v0.3"
            + ("" if allow_v03 else " (v0.3 was not allowed)"),
        )
    return ordered
