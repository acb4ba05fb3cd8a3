"""How the Redis scripts take a change set and answer a refusal: shared by the state and task stores."""

from __future__ import annotations

from typing import Any

from stores.changes import ChangeSet, Key, merge_quotas
from stores.errors import ConflictError, QuotaExceeded
from stores.records import encode
from stores.redis import keys


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def change_args(scope: str, changes: ChangeSet, now: float) -> list[Any]:
    """A change set as ``lua/changes.lua`` reads it from ARGV (times as exact decimal strings: Lua would round
    numbers it formats)."""
    quotas = merge_quotas(changes.quotas)
    args: list[Any] = [repr(float(now)), scope, len(changes.expect), len(changes.put), len(changes.delete),
                       len(quotas), len(changes.extend)]  # fmt: skip
    for key, version in changes.expect.items():
        args += [keys.document_field(key), int(version)]
    for key, value in changes.put.items():
        lease = changes.leases.get(key)
        if lease is None:
            args += [keys.document_field(key), encode(value), "", "", ""]
            continue
        expires = "" if lease.expires_at is None else repr(float(lease.expires_at))
        owner = "" if lease.owner is None else keys.document_field(lease.owner)
        holds = encode(dict(lease.holds)) if lease.holds else ""
        args += [keys.document_field(key), encode(value), expires, owner, holds]
    args += [keys.document_field(key) for key in sorted(changes.delete)]
    for quota in quotas:
        args += [quota.name, int(quota.delta), int(quota.limit)]
    for key, at in changes.extend.items():
        args += [keys.document_field(key), repr(float(at))]
    return args


def state_keys(prefix: str, scope: str) -> list[str]:
    """A scope's state keys in the order the scripts expect them (``lua/changes.lua``, ``state_keys``)."""
    return [
        keys.documents(prefix, scope),
        keys.versions(prefix, scope),
        keys.counters(prefix, scope),
        *keys.retention(prefix, scope),
    ]


def written_versions(changes: ChangeSet, versions: Any) -> dict[Key, int]:
    """The new versions of a change set's puts, from the part of an "ok" reply that lists them in order."""
    return {key: int(version) for key, version in zip(changes.put, versions, strict=True)}


def frees_at(value: Any) -> float | None:
    """A script's "frees at" time ("" when nothing holding the counter expires)."""
    value = text(value)
    return float(value) if value else None


def raise_state_refusal(reply: Any) -> None:
    """Raise what a ``changes.lua`` refusal means; return quietly for any other reply."""
    outcome = text(reply[0])
    if outcome == "conflict":
        raise ConflictError(f"{text(reply[1])} changed since it was read")
    if outcome == "quota":
        raise QuotaExceeded(text(reply[1]), int(text(reply[2])), frees_at(reply[3]))
