"""How the Redis scripts take a change set and answer a refusal: shared by the state and task stores."""

from __future__ import annotations

from typing import Any

from stores import keys
from stores.changes import ChangeSet, merge_quotas
from stores.errors import ConflictError, QuotaExceeded
from stores.records import encode


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def change_args(changes: ChangeSet) -> list[Any]:
    """A change set as ``lua/changes.lua`` reads it from ARGV."""
    quotas = merge_quotas(changes.quotas)
    args: list[Any] = [len(changes.expect), len(changes.put), len(changes.delete), len(quotas)]
    for key, version in changes.expect.items():
        args += [keys.document_field(key), int(version)]
    for key, value in changes.put.items():
        args += [keys.document_field(key), encode(value)]
    args += [keys.document_field(key) for key in sorted(changes.delete)]
    for quota in quotas:
        args += [quota.name, int(quota.delta), int(quota.limit)]
    return args


def state_keys(prefix: str, scope: str) -> list[str]:
    """A scope's documents, versions and counters keys, in the order the scripts expect them."""
    return [keys.documents(prefix, scope), keys.versions(prefix, scope), keys.counters(prefix, scope)]


def raise_state_refusal(reply: Any) -> None:
    """Raise what a ``changes.lua`` refusal means; return quietly for any other reply."""
    outcome = text(reply[0])
    if outcome == "conflict":
        raise ConflictError(f"{text(reply[1])} changed since it was read")
    if outcome == "quota":
        raise QuotaExceeded(text(reply[1]), int(text(reply[2])))
