"""The Redis backend's state store: a read is one EVALSHA of ``lua/read.lua`` (which leaves lapsed documents
out), a commit one EVALSHA of ``lua/commit.lua`` (with a task attached, the task store's
``lua/commit_task.lua``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from stores.base import StateStore, Versioned
from stores.changes import ChangeSet, Key
from stores.errors import StoreError
from stores.records import decode
from stores.redis import keys
from stores.redis.changes import change_args, raise_state_refusal, state_keys, text, written_versions
from stores.redis.connection import Connection


class RedisStateStore(StateStore):
    def __init__(self, conn: Connection, prefix: str, clock: Callable[[], float] | None = None) -> None:
        self._conn = conn
        self._prefix = prefix
        self._clock = clock or time.time
        self._location = (conn, prefix)  # two stores over one connection and prefix commit together
        # A read script changes nothing but lapsed documents (dropped again by a repeat): safe to repeat.
        self._read = conn.script("read", repeatable=True)
        # Sent once=True: a commit whose reply was lost may have been applied, and a plain repeat could apply
        # its quota deltas twice (or fail as a conflict with itself); a repeat of the call answers its reply.
        self._commit = conn.script("changes", "commit", repeatable=True, once=True)

    def now(self) -> float:
        return float(self._clock())

    def with_clock(self, clock: Callable[[], float]) -> RedisStateStore:
        return RedisStateStore(self._conn, self._prefix, clock)

    def read(self, scope: str, keys_: Iterable[Key]) -> dict[Key, Versioned]:
        wanted = list(dict.fromkeys(keys_))
        if not wanted:
            return {}
        fields = [keys.document_field(key) for key in wanted]
        script_keys = [
            keys.documents(self._prefix, scope),
            keys.versions(self._prefix, scope),
            *keys.retention(self._prefix, scope)[:2],  # expiries, owners
        ]
        reply: Any = self._read(script_keys, [repr(self.now()), *fields])
        return {
            key: Versioned(None, 0) if value is None else Versioned(decode(value), int(version))
            for key, value, version in zip(wanted, reply[0::2], reply[1::2], strict=True)
        }

    def counters(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        values = self._conn.command("hmget", keys.counters(self._prefix, scope), wanted, repeatable=True)
        return {name: int(value or 0) for name, value in zip(wanted, values, strict=True)}

    @property
    def location(self) -> object:
        return self._location

    def _commit_changes(self, scope: str, changes: ChangeSet) -> dict[Key, int]:
        reply = self._commit(state_keys(self._prefix, scope), change_args(scope, changes, self.now()))
        raise_state_refusal(reply)
        if text(reply[0]) != "ok":  # pragma: no cover - a script/contract mismatch
            raise StoreError(f"unexpected commit reply {reply!r}")
        return written_versions(changes, reply[1:])
