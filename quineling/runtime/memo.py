"""A per-process memo of the runtime's answers to identical requests, never trusted (like ``stores/cache.py``).

Re-creating a retained source is the commonest SendMessage, and most of its cost is recomputing an answer the
process has already given: parse the thought, check the intent, render and hash the source, only to find the
retained artifact. An operation whose answer is a pure function of its validated arguments and of the
documents it read (``Operation.memo``) and that wrote nothing can be answered again from here: the memo keeps,
per scope and canonical arguments, the outcome and the documents it rested on with their versions (as much
of them as the replay's commit needs: ``retention.replay_reads``). A replay
hands those reads to a fresh :class:`StateView` as *unconfirmed* (exactly as a read-cache hit), so the commit
the request makes anyway expects their versions; if any changed, the commit conflicts, the entry is dropped
and the request is computed afresh. Correctness never depends on the memo.

Entries are JSON text, decoded on every hit (no caller can change another's copy), bounded by entries and
bytes (least recently used first out), and safe across threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from stores import codec
from stores.changes import Key
from stores.jsontypes import JSON

Reads = dict[Key, tuple[JSON | None, int]]  # what an answer rested on: value (None: absent) and version


@dataclass(frozen=True, slots=True)
class Replay:
    """A remembered answer, decoded afresh: the outcome and the reads it rests on."""

    outcome: JSON
    reads: Reads


class AnswerMemo:
    def __init__(self, max_entries: int = 1024, max_bytes: int = 16 * 1024 * 1024) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("an answer memo needs room for at least one entry")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(scope: str, operation: str, args: JSON) -> str:
        """Canonical text of a validated request: JSON keeps 1, 1.0 and true apart, and sorting the members
        makes their order irrelevant, as it is to every operation's spec."""
        return codec.dumps([scope, operation, _sorted(args)])

    def get(self, key: str) -> Replay | None:
        with self._lock:
            text = self._entries.get(key)
            if text is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        outcome, reads = codec.loads(text)
        return Replay(outcome, {(kind, ident): (value, version) for kind, ident, value, version in reads})

    def remember(self, key: str, outcome: JSON, reads: Reads) -> None:
        text = codec.dumps([outcome, [[k[0], k[1], value, version] for k, (value, version) in reads.items()]])
        size = len(text) + len(key)  # characters stand for bytes, as in the read cache
        if size > self.max_bytes:
            return
        with self._lock:
            self._drop(key)
            self._entries[key] = text
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                old_key, old = self._entries.popitem(last=False)
                self._bytes -= len(old) + len(old_key)

    def forget(self, key: str) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: str) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= len(old) + len(key)


def _sorted(value: object) -> object:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value
