"""The Redis backend's state store: a read is one MULTI/EXEC pipeline of HMGETs, a commit one EVALSHA of
``lua/commit.lua`` (with a task attached, the task store's ``lua/commit_task.lua``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stores import keys
from stores.base import StateStore, Versioned
from stores.changes import ChangeSet, Key
from stores.errors import StoreError
from stores.records import decode
from stores.redis_changes import change_args, raise_state_refusal, state_keys, text
from stores.redis_connection import Connection


class RedisStateStore(StateStore):
    def __init__(self, conn: Connection, prefix: str) -> None:
        self._conn = conn
        self._prefix = prefix
        self._location = (conn, prefix)  # two stores over one connection and prefix commit together
        # Never repeated: a commit whose reply was lost may have been applied, and a repeat could apply its
        # quota deltas twice (or fail as a conflict with itself).
        self._commit = conn.script("changes", "commit", repeatable=False)

    def read(self, scope: str, keys_: Iterable[Key]) -> dict[Key, Versioned]:
        wanted = list(dict.fromkeys(keys_))
        if not wanted:
            return {}
        fields = [keys.document_field(key) for key in wanted]

        def fill(pipe: Any) -> None:
            pipe.hmget(keys.documents(self._prefix, scope), fields)
            pipe.hmget(keys.versions(self._prefix, scope), fields)

        # MULTI/EXEC: one consistent snapshot; a read, so safe to repeat.
        values, versions = self._conn.pipeline(fill, repeatable=True)
        return {
            key: Versioned(
                None if value is None else decode(value), int(version or 0) if value is not None else 0
            )
            for key, value, version in zip(wanted, values, versions, strict=True)
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

    def _commit_changes(self, scope: str, changes: ChangeSet) -> None:
        reply = self._commit(state_keys(self._prefix, scope), change_args(changes))
        raise_state_refusal(reply)
        if text(reply[0]) != "ok":  # pragma: no cover - a script/contract mismatch
            raise StoreError(f"unexpected commit reply {reply!r}")
