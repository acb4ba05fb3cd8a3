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

Entries are JSON text (no caller of :meth:`AnswerMemo.remember` can change one afterwards), bounded by
entries and bytes (least recently used first out, ``stores/bounded_lru.py``), and safe across threads. The
answers hit most are also kept decoded, each with the very text it came from (``stores/shared_reads.py``), and
shared by their hits: a replay's outcome and reads are only read — the outcome becomes a new task's artifact,
which, as every task, is changed copy-on-write (``quineling/a2a/executor.py``), as the task store's shared
reads are. Decoding a created artifact's answer on every hit was a sixth of a retained create's CPU. The
decoded set is small (:data:`DECODED_ANSWERS`): decoded, every entry would be hundreds of objects the
collector walks, and a memo churning through a thousand of them made every request of the worker slower.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from stores import codec
from stores.bounded_lru import BoundedLru
from stores.changes import Key
from stores.jsontypes import JSON
from stores.shared_reads import SharedDecodes

Reads = dict[Key, tuple[JSON | None, int]]  # what an answer rested on: value (None: absent) and version
# The answers kept decoded, and the bytes of their JSON (decoded, a created artifact's answer takes about seven
# times as much: 4,259 → 29,045 bytes, measured with tracemalloc).
DECODED_ANSWERS = 32
DECODED_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Replay:
    """A remembered answer, shared by every hit (never change it): the outcome and the reads it rests on."""

    outcome: JSON
    reads: Reads


class AnswerMemo:
    def __init__(self, max_entries: int = 1024, max_bytes: int = 16 * 1024 * 1024) -> None:
        self._entries: BoundedLru[str, str] = BoundedLru(max_entries, max_bytes)
        self._decoded: SharedDecodes[str] = SharedDecodes(DECODED_ANSWERS, DECODED_BYTES)
        self._lock = threading.Lock()  # the counters'
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
        """The remembered answer, shared with the other hits of its entry (never change it)."""
        text = self._entries.get(key)
        with self._lock:
            if text is None:
                self.misses += 1
                return None
            self.hits += 1
        outcome, reads = self._decoded.decode(key, text)
        return Replay(outcome, {(kind, ident): (value, version) for kind, ident, value, version in reads})

    def remember(self, key: str, outcome: JSON, reads: Reads) -> None:
        text = codec.dumps([outcome, [[k[0], k[1], value, version] for k, (value, version) in reads.items()]])
        self._entries.put(key, text, len(text) + len(key))  # characters stand for bytes, as in the read cache

    def forget(self, key: str) -> None:
        self._entries.discard(key)


def _sorted(value: object) -> object:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value
