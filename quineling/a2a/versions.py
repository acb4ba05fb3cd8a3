"""The one parser of A2A protocol versions: the ``A2A-Version`` header and interfaces' ``protocolVersion``.

An absent or empty version means ``0.3``: clients that predate the header speak v0.3.
"""

from __future__ import annotations

from quineling.a2a.errors import VersionNotSupportedError

LEGACY_DEFAULT = "0.3"


def normalize_version(value: str | None) -> str:
    """``Major.Minor`` of a version string (``1`` → ``1.0``, ``0.3.2`` → ``0.3``); absent or empty → ``0.3``."""
    text = (value or "").strip()
    if not text:
        return LEGACY_DEFAULT
    parts = text.split(".")
    if len(parts) == 1:
        parts.append("0")
    return ".".join(p.strip() for p in parts[:2])


def version_numbers(value: str | None) -> tuple[int, int] | None:
    """``(major, minor)``, or ``None`` for a version that is not two decimal numbers."""
    major, _, minor = normalize_version(value).partition(".")
    if not (major.isdecimal() and minor.isdecimal()):
        return None
    return int(major), int(minor)


def is_legacy_request(value: str | None) -> bool:
    """A request with no version or a 0.x one (header-less discovery gets the superset card)."""
    return normalize_version(value).split(".")[0] == "0"


def speaks_v03(value: str | None) -> bool:
    """Whether an interface of this ``protocolVersion`` serves v0.3 clients: empty, or in [0.3, 1.0)."""
    numbers = version_numbers(value)
    return numbers is not None and (0, 3) <= numbers < (1, 0)


def check_supported(binding: str, version: str, supported: frozenset[str]) -> None:
    """Refuse a ``version`` the ``binding`` does not serve, naming the versions it does and the header to send."""
    if version not in supported:
        newest = max(supported, key=lambda v: [int(n) for n in v.split(".")], default="1.0")
        raise VersionNotSupportedError(
            f"A2A-Version {version} is not supported by the {binding} binding "
            f"(supported: {', '.join(sorted(supported))}); send the header 'A2A-Version: {newest}'",
            metadata={"requestedVersion": version},
        )
