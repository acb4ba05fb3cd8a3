"""The Redis backend's task store: every call is one EVALSHA (list: two).

Capacity is per partition (tenant), and a partition's task keys share its state scope's hash tag (see
:mod:`stores.redis.keys`), so one script can save a task and commit that tenant's change set in one slot
(``lua/commit_task.lua``). Eviction, lazy expiry, admission sequences, version checks and event appends happen
inside ``lua/task_save.lua`` atomically; ``lua/task_load.lua`` returns a task with its version in the same
round trip. An evicted or expired task's event stream is deleted by the same script that removes the task
(``lua/expire_paused.lua``); an idle stream also ends at its own TTL, refreshed on every append.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from stores.base import (
    JSON,
    KeyClaim,
    TaskDescriber,
    TaskEvent,
    TaskEvents,
    TaskFacts,
    TaskLimits,
    TaskPage,
    TaskQuery,
    TaskStore,
    TaskWrite,
    Versioned,
    task_partition,
)
from stores.changes import ChangeSet, Key
from stores.errors import ClaimsFull, KeyClaimed, StoreError, TaskConflict, TaskStoreFull, TaskTooLarge
from stores.listing import CursorSigner, Row, select_page
from stores.records import decode, encode, expected_version, first_event_number
from stores.redis import keys
from stores.redis.changes import change_args, raise_state_refusal, state_keys, text, written_versions
from stores.redis.connection import Connection
from stores.shared_reads import SharedValues

_PRELUDE = "expire_paused"


@dataclass(frozen=True, slots=True)
class EventLogSettings:
    """How much of each task's event stream Redis keeps: entries, and seconds since the last append."""

    maxlen: int = 1000
    ttl_seconds: float = 24 * 3600


def listing_info(facts: TaskFacts) -> JSON:
    """What the listing script returns for a task besides its field and sequence."""
    return {"ts": facts.status_time, "ctx": facts.context_id, "state": facts.state}


class RedisTaskStore(TaskStore):
    def __init__(
        self,
        conn: Connection,
        prefix: str,
        location: object,
        limits: TaskLimits,
        describe: TaskDescriber,
        clock: Callable[[], float] | None,
        events: EventLogSettings,
        max_block_seconds: float = 15.0,
    ) -> None:
        self.limits = limits
        self.describe = describe
        self._conn = conn
        self._prefix = prefix
        self._location = location
        self._events = events
        self._clock = clock or time.time
        self._max_block = max_block_seconds
        self._shared: SharedValues[str] = SharedValues()  # by task field: the scope is part of it
        # A load or a listing may be sent twice: besides reading, each only drops paused tasks that expired
        # by the cutoff it was given and creates the cursor identity if missing, and a second run with the
        # same arguments finds nothing more to do.
        self._load = self._conn.script(_PRELUDE, "task_load", repeatable=True)
        self._list = self._conn.script(_PRELUDE, "task_list", repeatable=True)
        self._page = self._conn.script("task_page", repeatable=True)  # reads only
        self._claim = self._conn.script("claim_load", repeatable=True)  # reads only
        # Saves are sent once=True. A save whose reply was lost may have been applied: a plain repeat of an
        # unconditional save would append its events twice, a conditional one would fail as a conflict
        # with itself (reported as a concurrent change), and one that commits a change set could apply
        # its quota deltas twice; a repeat of the call answers the first run's reply instead.
        self._save = self._conn.script(_PRELUDE, "task_write", "task_save", repeatable=True, once=True)
        self._commit_task = self._conn.script(
            _PRELUDE, "task_write", "changes", "commit_task", repeatable=True, once=True
        )

    @property
    def location(self) -> object:
        return self._location

    def _keys(self, scope: str) -> list[str]:
        return list(keys.task_keys(self._prefix, task_partition(scope)).values())

    def _claim_keys(self, scope: str) -> list[str]:
        return keys.task_claims(self._prefix, task_partition(scope))

    def _times(self) -> tuple[str, str]:
        """``now`` and the expiry cutoff as exact decimal strings (Lua would round numbers it formats)."""
        now = float(self._clock())
        return repr(now), repr(now - float(self.limits.paused_ttl_seconds))

    def _read(self, scope: str, field: str, held: str = "") -> Any:
        """``lua/task_load.lua``'s reply for a task field (``held``: the version already decoded here)."""
        _, cutoff = self._times()
        return self._load(self._keys(scope), [field, cutoff, held])

    def load_versioned(self, scope: str, task_id: str) -> Versioned:
        reply = self._read(scope, keys.task_field(scope, task_id))
        if not reply:
            return Versioned(None, 0)
        body, version = reply
        return Versioned(decode(body), int(version))

    def load_shared(self, scope: str, task_id: str) -> Versioned:
        """The same one EVALSHA, told the version this worker already holds decoded: when that is still the
        stored version the script answers it alone, and neither the body's bytes nor its decoding are
        spent again (a polled task, :mod:`stores.shared_reads`)."""
        field = keys.task_field(scope, task_id)
        kept = self._shared.get(field)
        reply = self._read(scope, field, "" if kept is None else str(kept[0]))
        if not reply:
            self._shared.discard(field)
            return Versioned(None, 0)
        if len(reply) == 1:
            assert kept is not None and int(reply[0]) == kept[0], "the script confirms only the held version"
            return Versioned(kept[1], kept[0])
        body, version = reply
        value, number = decode(body), int(version)
        self._shared.put(field, (number, value), len(body))
        return Versioned(value, number)

    def save(
        self,
        scope: str,
        task: JSON,
        events: Iterable[JSON] = (),
        *,
        expect_version: int | None = None,
        claim: KeyClaim | None = None,
    ) -> int:
        task_id, expect, args = self._write_args(scope, task, events, expect_version, claim)
        size = len(str(args[1]).encode())  # the task's JSON body
        if size > self.limits.max_task_bytes:  # cheap early refusal; the script checks again
            raise TaskTooLarge(f"task {task_id} is {size} bytes; the limit is {self.limits.max_task_bytes}")
        stream = keys.task_events(self._prefix, scope, task_id)
        reply = self._save([*self._keys(scope), stream, *self._claim_keys(scope)], args)
        return self._saved(task_id, expect, reply, claim)

    def save_with_changes(
        self, scope: str, changes: ChangeSet, write: TaskWrite, now: float
    ) -> tuple[int, dict[Key, int]]:
        """One EVALSHA of ``lua/commit_task.lua``: the change set and the save, all or nothing.

        No early size refusal here: a state conflict or quota must be reported first (see
        ``StateStore.commit``), and only the script knows those."""
        task_id, expect, args = self._write_args(
            write.scope, write.task, write.events, write.expect_version, write.claim
        )
        stream = keys.task_events(self._prefix, write.scope, task_id)
        script_keys = [
            *self._keys(write.scope),
            stream,
            *state_keys(self._prefix, scope),
            *self._claim_keys(write.scope),
        ]
        reply = self._commit_task(script_keys, [*change_args(scope, changes, now), *args])
        raise_state_refusal(reply)
        return self._saved(task_id, expect, reply, write.claim), written_versions(changes, reply[3:])

    def _write_args(
        self,
        scope: str,
        task: JSON,
        events: Iterable[JSON],
        expect_version: int | None,
        claim: KeyClaim | None,
    ) -> tuple[str, int | None, list[str | int | float]]:
        """The task save as ``lua/task_write.lua`` reads it from ARGV (its JSON body is ``args[1]``)."""
        expect = expected_version(expect_version)
        facts = self.describe(task)
        encoded = [encode(event) for event in events]
        first = first_event_number(facts.generation, len(encoded))
        now, cutoff = self._times()
        claim_args: list[str | int | float] = ["", "", "", self.limits.max_claims]
        if claim is not None:
            expires = repr(float(now) + float(claim.ttl_seconds))
            claim_args = [keys.claim_field(scope, claim.key), encode(claim.record), expires, claim_args[3]]
        args: list[str | int | float] = [
            keys.task_field(scope, facts.task_id),
            encode(task),
            encode(listing_info(facts)),
            facts.lifecycle.value,
            now,
            cutoff,
            self.limits.max_tasks,
            self.limits.max_total_bytes,
            self.limits.max_task_bytes,
            self._events.maxlen,
            int(self._events.ttl_seconds * 1000),
            "" if expect is None else str(expect),
            "" if first is None else str(first),
            *claim_args,
            *encoded,
        ]
        return facts.task_id, expect, args

    def _saved(self, task_id: str, expect: int | None, reply: Any, claim: KeyClaim | None = None) -> int:
        """The new version from a ``task_write.lua`` reply, or the error its refusal means."""
        outcome = text(reply[0])
        if outcome == "claimed" and claim is not None:
            raise KeyClaimed(claim.key, decode(reply[1]))
        if outcome == "claims_full":
            raise ClaimsFull(f"the partition holds its limit of {self.limits.max_claims} idempotency keys")
        if outcome == "too_large":
            raise TaskTooLarge(f"task {task_id} is larger than {self.limits.max_task_bytes} bytes")
        if outcome == "task_conflict":
            raise TaskConflict(task_id, expect or 0, int(reply[1]))
        if outcome == "full":
            raise TaskStoreFull("no terminal or paused task can be evicted to make room")
        if outcome != "ok":  # pragma: no cover - a script/contract mismatch
            raise StoreError(f"unexpected save reply {reply!r}")
        return int(reply[2])

    def list(self, scope: str, query: TaskQuery) -> TaskPage:
        """Two round trips: the scope's index (``lua/task_list.lua``), then the page's bodies together with
        their listing info as they are now (``lua/task_page.lua``). The page is settled by what the second read saw
        (:meth:`~stores.listing.PagePlan.settle`), so a task updated between the two reads is placed by
        its new timestamp or left to the page it now belongs to, and every page is newest first."""
        _, cutoff = self._times()
        prefix = keys.task_field_prefix(scope)
        identity = keys.task_identity(self._prefix, task_partition(scope))
        candidate = [secrets.token_hex(8), secrets.token_hex(32)]
        task_keys = self._keys(scope)
        reply = self._list([*task_keys, identity], [cutoff, prefix, *candidate])
        # No identity: the partition holds no task, and a signer nobody shares refuses every token.
        store_id, secret = (reply[0], reply[1]) if reply[0] is not None else candidate
        signer = CursorSigner(text(store_id), bytes.fromhex(text(secret)))
        rows = [_row(reply[i], reply[i + 1], reply[i + 2]) for i in range(2, len(reply), 3)]
        plan = select_page(rows, scope, query, signer)
        if not plan.task_ids:
            return TaskPage([], plan.next_page_token, plan.total_size)
        reply = self._page(task_keys[:3], plan.task_ids)
        now: dict[str, Row] = {}
        body_of: dict[str, Any] = {}
        for field, at in zip(plan.task_ids, range(0, len(reply), 3), strict=True):
            body, info, sequence = reply[at : at + 3]
            if body and info:  # evicted meanwhile: left out (a live listing)
                now[field] = _row(field, info, sequence or 0)
                body_of[field] = body
        settled = plan.settle(now.values(), query)
        return TaskPage([decode(body_of[field]) for field in settled], plan.next_page_token, plan.total_size)

    def read_events(self, scope: str, task_id: str, after: str | None, timeout: float) -> TaskEvents:
        stream = keys.task_events(self._prefix, scope, task_id)
        if timeout > 0:  # blocks on the server: the blocking pool's read timeout outlasts the block
            block = max(1, int(min(timeout, self._max_block) * 1000))
            reply = self._conn.blocking_command("xread", {stream: after or "0-0"}, block=block)
        else:
            reply = self._conn.command("xread", {stream: after or "0-0"}, repeatable=True)  # a read
        if isinstance(reply, dict):  # RESP3 answers with a mapping
            reply = list(reply.items())
        events: list[TaskEvent] = []
        for _, entries in reply or []:
            for event_id, fields in entries:
                events.append(TaskEvent(text(event_id), decode(fields.get(b"e", fields.get("e")))))
        return events

    def load_claim(self, scope: str, key: str) -> JSON | None:
        record = self._claim(
            self._claim_keys(scope), [keys.claim_field(scope, key), repr(float(self._clock()))]
        )
        return None if not record else decode(record)

    def last_event_id(self, scope: str, task_id: str) -> str | None:
        stream = keys.task_events(self._prefix, scope, task_id)
        newest = self._conn.command("xrevrange", stream, "+", "-", count=1, repeatable=True)  # a read
        return text(newest[0][0]) if newest else None


def _row(field: Any, info: Any, sequence: Any) -> Row:
    """A listing row from a task's field, listing info JSON and admission sequence as Redis returns them."""
    facts = decode(info)
    return Row(text(field), facts["ts"], int(sequence), facts["ctx"], facts["state"])
