"""The embedded backend: every store in one process's memory (``memory://``), with the same contracts and
atomic commit as Redis, for one worker and for tests."""

from stores.memory.store import MemoryBackend

__all__ = ["MemoryBackend"]
