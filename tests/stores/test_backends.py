"""Backend selection, key layout and script headers: the parts of stores/ that are not per-backend behaviour."""

from __future__ import annotations

import re
from importlib import resources
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stores import (
    ChangeSet,
    MemoryBackend,
    RedisBackend,
    StoreUnavailable,
    TaskLimits,
    backend_from_url,
)
from stores.redis import keys


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("memory://", MemoryBackend),
        ("redis://127.0.0.1:6379/0", RedisBackend),
        ("rediss://cache.example:6380/1", RedisBackend),
        ("unix:///tmp/redis.sock?db=2", RedisBackend),
    ],
)
def test_url_scheme_picks_the_backend(url: str, kind: type) -> None:
    backend = backend_from_url(url)  # Redis clients connect lazily: nothing is contacted here
    assert isinstance(backend, kind)


def test_unknown_scheme_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="memory, redis"):
        backend_from_url("postgres://localhost/db")


@pytest.mark.parametrize(
    "limits",
    [{"max_tasks": 0}, {"max_total_bytes": -1}, {"max_task_bytes": 1.5}, {"paused_ttl_seconds": 0}],
)
def test_task_limits_must_be_positive(limits: dict) -> None:
    with pytest.raises(ValueError):
        TaskLimits(**limits)


def test_unreachable_redis_is_store_unavailable() -> None:
    backend = RedisBackend("redis://127.0.0.1:1/0", socket_connect_timeout=0.5)
    with pytest.raises(StoreUnavailable):
        backend.state_store().read("s", [("a", "b")])


def hash_tag(key: str) -> str:
    return re.search(r"\{([^}]*)\}", key).group(1)  # type: ignore[union-attr]


def test_a_scope_keeps_all_its_keys_on_one_hash_tag() -> None:
    assert keys.documents("q", "default") == "q:{default}:doc"
    for scope in ("default", "tenant/user", "{evil}", "a:b"):
        tags = {hash_tag(build("q", scope)) for build in (keys.documents, keys.versions, keys.counters)}
        assert len(tags) == 1
        assert "{" not in tags.pop()
    assert hash_tag(keys.documents("q", "{a}")) != hash_tag(keys.documents("q", "a"))


@given(st.text())
def test_key_parts_are_escaped_exactly_as_quote_does(part: str) -> None:
    """The plain-text shortcut in stores.redis.keys never changes a key: keys written before it still match."""
    assert keys._escape(part) == quote(part, safe=keys._SAFE)
    assert "/" not in keys._escape(part) and "{" not in keys._escape(part)


def test_a_tenants_task_keys_share_its_state_scopes_hash_tag() -> None:
    """Per-tenant task capacity: a tenant's tasks and its runtime state commit in one slot."""
    for tenant in ("default", "acme", "{evil}", "a:b"):
        every = [
            *keys.task_keys("q", tenant).values(),
            keys.task_identity("q", tenant),
            keys.task_events("q", f"{tenant}/user", "t/1"),
            keys.documents("q", tenant),
        ]
        assert {hash_tag(key) for key in every} == {hash_tag(keys.documents("q", tenant))}
    assert hash_tag(keys.task_keys("q", "a")["data"]) != hash_tag(keys.task_keys("q", "b")["data"])
    assert keys.task_field("a/b", "c") != keys.task_field("a", "b/c")


def test_every_lua_script_documents_its_keys_arguments_and_return() -> None:
    folder = resources.files("stores.redis") / "lua"
    scripts = [entry for entry in folder.iterdir() if entry.name.endswith(".lua")]
    assert {s.name for s in scripts} >= {"commit.lua", "task_save.lua", "task_load.lua", "task_list.lua"}
    for script in scripts:
        lines = script.read_text(encoding="utf-8").splitlines()
        width = next(i for i, line in enumerate(lines) if not line.startswith("--"))
        comment, body = "\n".join(lines[:width]), "\n".join(lines[width:])
        documented = set(re.findall(r"KEYS\[(\d+)\]", comment))
        for low, high in re.findall(r"KEYS\[(\d+)\.\.(\d+)\]", comment):
            documented |= {str(i) for i in range(int(low), int(high) + 1)}
        assert documented, script.name
        assert set(re.findall(r"KEYS\[(\d+)", body)) <= documented, script.name
        assert "ARGV" in comment or "no ARGV" in comment, script.name
        assert "Returns" in comment or "Defines" in comment, script.name


def test_a_connection_is_held_for_one_call_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connections scale with calls in flight: one thread after another reuses the one free connection, more
    calls than the pool lends wait for a free one, and a forked child never reuses its parent's."""
    import threading

    import fakeredis

    import stores.redis.connection as redis_backend

    backend = RedisBackend("redis://fake", client=fakeredis.FakeRedis(), prefix="lent", connections=2)
    conn = backend.connection
    lent = conn._calls
    backend.ping()
    first = lent.free[-1]
    for _ in range(3):  # sequential calls from other threads: the same connection, given back each time
        other = threading.Thread(target=backend.ping)
        other.start()
        other.join()
    assert lent.free == [first]
    held = [conn._take(lent, conn._shared), conn._take(lent, conn._shared)]  # both lent: a third call waits
    conn._wait = 0.05
    with pytest.raises(StoreUnavailable, match="2 Redis connections stayed busy"):
        backend.ping()
    for client in held:
        conn._give(lent, client)
    backend.ping()  # one came free
    # Requests never wait behind blocking reads: those lend from a pool of their own.
    two = redis_backend.Connection(
        fakeredis.FakeRedis(), fakeredis.FakeRedis(), connections=1, blocking_connections=3, wait=0.05
    )
    waiting = [two._take(two._blocking_calls, two._blocking) for _ in range(3)]
    assert two.command("ping", repeatable=True)
    for client in waiting:
        two._give(two._blocking_calls, client)
    assert len(lent.free) == 2 == lent.made  # every connection came back, and none more was made
    monkeypatch.setattr(redis_backend, "_fork_generation", redis_backend._fork_generation + 1)
    backend.ping()
    assert first not in lent.free  # a forked child never reuses its parent's connection
    backend.state_store().commit("s", ChangeSet(expect={("artifact", "a"): 0}, put={("artifact", "a"): {}}))
    assert backend.state_store().read("s", [("artifact", "a")])[("artifact", "a")].version == 1
    backend.close()
