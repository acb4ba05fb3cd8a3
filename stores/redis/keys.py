"""Every Redis key and hash field the Redis backend uses, built here and nowhere else.

State keys carry one hash tag per scope (``q:{default}:doc``), so one scope's commit touches one cluster slot.
The task store is bounded *per tenant* (see :func:`stores.base.task_partition`): a tenant's task keys carry the
same tag as that tenant's state keys (``q:{default}:task:data``), so a save that evicts, and a state commit
together with a task save (``stores/redis/lua/commit_task.lua``), each run in one slot. A grouped scope
(``alice:acme``, see :func:`stores.base.scope_group`) has its group's tag (``q:{alice}/acme:doc``), so one
principal's tenants all live in one slot too.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import quote

from stores.base import GROUP_SEPARATOR, task_partition
from stores.changes import Key

_SAFE = "-_.~@+=,;!$*'()"
_PLAIN = re.compile(r"[A-Za-z0-9\-_.~@+=,;!$*'()]*")  # exactly what quote() below leaves as it is


def _escape(part: str) -> str:
    # Braces would break the hash tag and '/' separates field parts: percent-encode anything unusual. Most
    # parts (uuids, kinds, tenants) are plain, and checking that is several times cheaper than quote().
    return part if _PLAIN.fullmatch(part) else _quoted(part)


@lru_cache(maxsize=4096)
def _quoted(part: str) -> str:
    # The unusual parts are mostly a few scopes (a principal's id holds ':'): quote() walks the text each
    # time, a cache hit does not.
    return quote(part, safe=_SAFE)


@lru_cache(maxsize=4096)
def scope_tag(prefix: str, scope: str) -> str:
    """``q:{scope}``; a grouped scope ``group:rest`` (:func:`stores.base.scope_group`) is ``q:{group}/rest``,
    so all scopes of a group share one hash tag. ``/`` right after the tag marks the grouped form: no
    escaped part contains ``/`` or ``:``, so no two scopes build the same key."""
    group, grouped, rest = scope.partition(GROUP_SEPARATOR)
    if grouped:
        return f"{prefix}:{{{_escape(group)}}}/{_escape(rest)}"
    return f"{prefix}:{{{_escape(scope)}}}"


def documents(prefix: str, scope: str) -> str:
    """Hash: ``kind/id`` → document JSON."""
    return f"{scope_tag(prefix, scope)}:doc"


def versions(prefix: str, scope: str) -> str:
    """Hash: ``kind/id`` → version (absent = 0)."""
    return f"{scope_tag(prefix, scope)}:ver"


def counters(prefix: str, scope: str) -> str:
    """Hash: quota name → counter."""
    return f"{scope_tag(prefix, scope)}:cnt"


def retention(prefix: str, scope: str) -> list[str]:
    """A scope's retention keys (``stores/redis/lua/changes.lua``): the expiries sorted set (``kind/id`` → expiry
    time), the owners hash (``kind/id`` → owner's ``kind/id``), the dependents sorted set (``owner|kind/id``,
    ranged by lex) and the holds hash (``kind/id`` → JSON of the quota amounts it holds)."""
    tag = scope_tag(prefix, scope)
    return [f"{tag}:exp", f"{tag}:own", f"{tag}:deps", f"{tag}:hold"]


def rate_window(prefix: str, identity: str, window: str) -> str:
    """String: the request count of ``identity`` (a principal, or a client address) in one rate-limit window,
    ``q:rate:{identity}:window``; the tag keeps one identity's windows in one slot."""
    return f"{prefix}:rate:{{{_escape(identity)}}}:{_escape(window)}"


def document_field(key: Key) -> str:
    kind, ident = key
    return f"{_escape(kind)}/{_escape(ident)}"


def task_tag(prefix: str, partition: str) -> str:
    """The tag of one tenant's task keys: the same as that tenant's state keys (one slot for both)."""
    return f"{scope_tag(prefix, partition)}:task"


def task_keys(prefix: str, partition: str) -> dict[str, str]:
    """One tenant's task keys, in the order the Lua scripts expect them as ``KEYS[1..7]``."""
    tag = task_tag(prefix, partition)
    return {
        "data": f"{tag}:data",  # hash: task field → task JSON
        "info": f"{tag}:info",  # hash: task field → listing info JSON {ts, ctx, state}
        "seq": f"{tag}:seq",  # hash: task field → immutable admission sequence
        "evictable": f"{tag}:evictable",  # zset: terminal/paused task fields by their last save's version
        "paused": f"{tag}:paused",  # zset: paused task fields by last update (lazy expiry)
        "stats": f"{tag}:stats",  # hash: count, bytes, next_seq, next_ver
        "version": f"{tag}:ver",  # hash: task field → version (from stats next_ver; absent task = 0)
    }


def task_claims(prefix: str, partition: str) -> list[str]:
    """One tenant's idempotency claims (``stores.base.KeyClaim``), in its tasks' slot: the hash ``claim
    field`` → record JSON and the sorted set ``claim field`` → expiry time (lazy expiry, O(lapsed))."""
    tag = task_tag(prefix, partition)
    return [f"{tag}:claims", f"{tag}:claim_exp"]


def claim_field(scope: str, key: str) -> str:
    return f"{_escape(scope)}/{_escape(key)}"


def task_identity(prefix: str, partition: str) -> str:
    """Hash: ``id`` and ``secret`` shared by every worker, so any worker accepts any worker's cursor.

    One per tenant, because the listing script that creates it must stay in the tenant's slot."""
    return f"{task_tag(prefix, partition)}:identity"


def task_field(scope: str, task_id: str) -> str:
    return f"{_escape(scope)}/{_escape(task_id)}"


def task_field_prefix(scope: str) -> str:
    return f"{_escape(scope)}/"


def task_events(prefix: str, scope: str, task_id: str) -> str:
    """Stream: the task's event log (in its tenant's slot)."""
    return task_events_prefix(prefix, task_partition(scope)) + task_field(scope, task_id)


def task_events_prefix(prefix: str, partition: str) -> str:
    """What every event stream key of a partition starts with: the rest is the task's field."""
    return f"{task_tag(prefix, partition)}:events:"


def partition_keys(prefix: str, partition: str) -> list[str]:
    """Every fixed key a partition's writes create: its state scope's (with its retention keys) and its tasks'
    (not the per-task event streams, which go with their task or on their own TTL, nor the writes' recorded
    replies (:func:`operation`), which go on their TTL of two minutes, nor the :func:`scope_registry`, which
    names the partition as a member). Deleting these deletes the partition."""
    return [
        documents(prefix, partition),
        versions(prefix, partition),
        counters(prefix, partition),
        *retention(prefix, partition),
        *task_keys(prefix, partition).values(),
        task_identity(prefix, partition),
        *task_claims(prefix, partition),
    ]


def retired_keys(prefix: str, partition: str) -> list[str]:
    """Keys the earlier release wrote in a partition and this one no longer does: the write scripts' recorded
    replies, then a hash and a sorted set per first key (now a key per call with a TTL, :func:`operation`).
    They hold at most the two minutes of writes before an upgrade; a reclaim deletes them with the partition."""
    firsts = (documents(prefix, partition), task_keys(prefix, partition)["data"])
    return [f"{first}:{suffix}" for first in firsts for suffix in ("ops", "ops-at")]


def scope_registry(prefix: str) -> str:
    """Sorted set: live scope (partition) → lease, seconds since the epoch (stores/scopes.py); the one registry
    of scopes, for the bound on live scopes and for operators (``Backend.scopes``). Its tag holds a ``#``,
    which every scope's tag escapes, so it is nobody's scope. No script writes it together with a scope's
    keys: it is in a slot of its own (see stores/redis/scopes.py)."""
    return f"{prefix}:{{#scopes}}:live"


def operation(key: str, operation_id: str) -> str:
    """String, with a TTL: the recorded reply of one write script call whose first key is ``key``
    (``stores/redis/lua/once.lua``). Its name starts with ``key``, so it carries its hash tag and lies in its slot."""
    return f"{key}:op:{operation_id}"


def all_keys_pattern(prefix: str) -> str:
    """A SCAN pattern matching every key under ``prefix`` (tests use it to clean up)."""
    return f"{prefix}:*"
