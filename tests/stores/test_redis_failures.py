"""The Redis backend under failure: which driver errors are outages, which calls are repeated once after a
connection error, server states that refuse writes, and ListTasks pages that stay newest first while their
tasks change between the listing's two reads, and scripts written to the connection directly (replies, errors, a
forgotten script, a late reply, a closed connection)."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from redis import exceptions as rex

import stores.redis.connection as redis_connection
import stores.redis.tasks as redis_tasks
from quineling.a2a.task_facts import describe_task
from stores import ChangeSet, RedisBackend, StoreError, StoreUnavailable, TaskLimits, TaskQuery, TaskStore
from stores.listing import parse_instant
from stores.redis.connection import Connection
from tests.conftest import REDIS_URL, BackendMaker, needs_redis
from tests.support.live import ROOT
from tests.support.redis_keys import delete_under
from tests.support.redis_server import needs_redis_server, private_redis

from .test_task_store import INPUT, task

fakeredis = pytest.importorskip("fakeredis")

# --- driver errors → store errors ---------------------------------------------------------------------

OUTAGES = [
    rex.ConnectionError("Connection closed by server."),
    rex.TimeoutError("Timeout reading from socket"),
    rex.BusyLoadingError("Redis is loading the dataset in memory"),
    rex.MaxConnectionsError("Too many connections"),
    rex.AuthenticationError("invalid password"),
    rex.ReadOnlyError("You can't write against a read only replica."),
    rex.OutOfMemoryError("command not allowed when used memory > 'maxmemory'."),
    rex.NoScriptError("No matching script."),
    rex.TryAgainError("Multiple keys request during rehashing of slot"),
    rex.MasterDownError("Link with MASTER is down"),
    rex.ResponseError("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to"),
    rex.ResponseError("BUSY Redis is busy running a script."),
    rex.ResponseError("NOREPLICAS Not enough good replicas to write."),
    rex.ResponseError("UNBLOCKED force unblock from blocking operation, instance state changed"),
    OSError(104, "Connection reset by peer"),
    TimeoutError("timed out"),
]
FAILURES = [
    rex.ResponseError("ERR Error running script: attempt to index a nil value"),
    rex.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"),
    rex.NoPermissionError("this user has no permissions to run the 'evalsha' command"),
    rex.DataError("Invalid input of type: 'dict'."),
]


def connection() -> Connection:
    return Connection(fakeredis.FakeRedis())


def failing(*errors: BaseException, then: Any = "ok") -> tuple[Callable[[], Any], list[int]]:
    """A call that raises ``errors`` one per attempt, then returns ``then``; and its attempt counter."""
    attempts = [0]

    def call() -> Any:
        attempts[0] += 1
        if attempts[0] <= len(errors):
            raise errors[attempts[0] - 1]
        return then

    return call, attempts


@pytest.mark.parametrize("error", OUTAGES, ids=lambda e: f"{type(e).__name__}:{str(e)[:12]}")
def test_transient_driver_errors_are_store_unavailable(error: BaseException) -> None:
    call, _ = failing(error, error)
    with pytest.raises(StoreUnavailable):
        connection()._guard(call, repeatable=False)


@pytest.mark.parametrize("error", FAILURES, ids=lambda e: f"{type(e).__name__}:{str(e)[:12]}")
def test_other_driver_errors_are_plain_store_errors(error: BaseException) -> None:
    call, _ = failing(error)
    with pytest.raises(StoreError) as caught:
        connection()._guard(call, repeatable=True)
    assert not isinstance(caught.value, StoreUnavailable)


def test_a_repeatable_call_is_sent_once_more_after_a_connection_error() -> None:
    conn = connection()
    call, attempts = failing(rex.ConnectionError("Connection closed by server."))
    assert conn._guard(call, repeatable=True) == "ok"
    assert attempts == [2] and conn.round_trips == 2
    call, attempts = failing(rex.ConnectionError("closed"), rex.ConnectionError("refused"))
    with pytest.raises(StoreUnavailable):
        conn._guard(call, repeatable=True)
    assert attempts == [2]  # once more, not a loop


@pytest.mark.parametrize(
    "error",
    [
        rex.TimeoutError("Timeout reading from socket"),  # the server may be stalled: do not wait twice
        rex.BusyLoadingError("loading"),  # still loading a moment later
        rex.AuthenticationError("invalid password"),
        rex.ReadOnlyError("replica"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_a_repeat_cannot_fix_are_not_repeated(error: BaseException) -> None:
    call, attempts = failing(error)
    with pytest.raises(StoreUnavailable):
        connection()._guard(call, repeatable=True)
    assert attempts == [1]


def test_a_write_is_never_repeated() -> None:
    call, attempts = failing(rex.ConnectionError("Connection closed by server."))
    with pytest.raises(StoreUnavailable):
        connection()._guard(call, repeatable=False)
    assert attempts == [1]


def test_every_call_site_says_whether_it_may_be_repeated() -> None:
    """``repeatable`` has no default: each new call must decide (the stores' calls say why in a comment)."""
    conn = connection()
    with pytest.raises(TypeError):
        conn.command("ping")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        conn.script("task_load")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        conn.pipeline(lambda pipe: None)  # type: ignore[call-arg]


# --- deadlines ------------------------------------------------------------------------------------------


def test_every_connection_has_explicit_deadlines() -> None:
    backend = RedisBackend("redis://127.0.0.1:1/0", socket_connect_timeout=0.25, socket_timeout=0.5)
    ordinary = backend.connection.shared.connection_pool.connection_kwargs
    blocking = backend.connection.blocking.connection_pool.connection_kwargs
    assert (ordinary["socket_connect_timeout"], ordinary["socket_timeout"]) == (0.25, 0.5)
    assert (blocking["socket_connect_timeout"], blocking["socket_timeout"]) == (0.25, 15.5)
    assert ordinary["retry"] is None and blocking["retry"] is None  # no hidden repeats in redis-py
    defaults = RedisBackend("redis://127.0.0.1:1/0").connection.shared.connection_pool.connection_kwargs
    assert (defaults["socket_connect_timeout"], defaults["socket_timeout"]) == (2.0, 5.0)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan")])
def test_deadlines_must_be_positive_and_finite(bad: float) -> None:
    for option in ("socket_connect_timeout", "socket_timeout", "max_block_seconds"):
        with pytest.raises(ValueError, match=option):
            RedisBackend("redis://127.0.0.1:1/0", **{option: bad})


def test_a_blocking_read_never_blocks_longer_than_its_pool_allows() -> None:
    """read_events(timeout) blocks at most max_block_seconds on the server, whatever it is asked."""
    backend = RedisBackend(
        "redis://fake", client=fakeredis.FakeRedis(), prefix="block", max_block_seconds=0.2
    )
    store = backend.task_store(describe=describe_task)
    store.save("s", task("t", INPUT))
    start = time.monotonic()
    assert store.read_events("s", "t", None, timeout=30) == []
    assert 0.15 < time.monotonic() - start < 5


# --- server states that refuse writes (a private server) -------------------------------------------------


@pytest.fixture
def private() -> Iterator[tuple[Any, RedisBackend]]:
    with private_redis() as server:
        backend = RedisBackend(server.url, prefix="states", socket_timeout=1, socket_connect_timeout=1)
        admin = redis.Redis.from_url(server.url)
        try:
            yield admin, backend
        finally:
            admin.close()
            backend.close()


@needs_redis_server
@pytest.mark.parametrize("state", ["oom", "replica"])
def test_a_server_refusing_writes_is_an_outage_and_reads_still_work(private: Any, state: str) -> None:
    admin, backend = private
    store = backend.task_store(describe=describe_task)
    store.save("s", task("t", INPUT))
    assert [t["id"] for t in store.list("s", TaskQuery()).tasks] == ["t"]  # the cursor identity exists now
    if state == "oom":
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", 1)
    else:
        admin.replicaof("127.0.0.1", 1)  # a replica of nothing: its data stays, writes are refused
    with pytest.raises(StoreUnavailable):
        store.save("s", task("u", INPUT))
    with pytest.raises(StoreUnavailable):
        backend.state_store().commit("s", ChangeSet(put={("artifact", "a"): {}}))
    assert store.load("s", "t")["id"] == "t"  # type: ignore[index]
    assert [t["id"] for t in store.list("s", TaskQuery()).tasks] == ["t"]  # listing only reads now


@needs_redis_server
def test_a_flushed_script_cache_is_reloaded(private: Any) -> None:
    admin, backend = private
    store = backend.task_store(describe=describe_task)
    store.save("s", task("t", INPUT))
    admin.script_flush()
    store.save("s", task("t", INPUT, ts="2026-01-02T00:00:00Z"))
    assert store.load("s", "t")["status"]["timestamp"] == "2026-01-02T00:00:00Z"  # type: ignore[index]


# --- scripts written to the connection directly (Connection._evalsha) --------------------------------------

# Every kind of reply a script can give, and its arguments echoed back.
ALL_REPLIES = "return {1, 'two', {3, false, {}}, redis.status_reply('OK'), KEYS[1], ARGV[1], #ARGV}"
# Runs for ARGV[1] milliseconds (busy, on the server's clock), then answers ARGV[2].
BUSY_THEN = """
local t = redis.call('TIME')
local until_us = (tonumber(t[1]) * 1000000 + tonumber(t[2])) + tonumber(ARGV[1]) * 1000
repeat t = redis.call('TIME') until tonumber(t[1]) * 1000000 + tonumber(t[2]) >= until_us
return ARGV[2]
"""


def probe(monkeypatch: pytest.MonkeyPatch, conn: Connection, source: str, **options: Any) -> Any:
    """``source`` registered as a script of ``conn`` (as the stores' own scripts are), ready to call."""
    known = redis_connection.lua_source
    name = f"probe-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(
        redis_connection, "lua_source", lambda *names: source if names == (name,) else known(*names)
    )
    return conn.script(name, **options)


@pytest.fixture(params=["fakeredis", pytest.param("redis", marks=[pytest.mark.redis, needs_redis])])
def client(request: pytest.FixtureRequest) -> Iterator[Any]:
    made = fakeredis.FakeRedis() if request.param == "fakeredis" else redis.Redis.from_url(REDIS_URL)
    yield made
    made.close()


def test_a_script_answers_what_redis_py_would(monkeypatch: pytest.MonkeyPatch, client: Any) -> None:
    conn = Connection(client)
    call = probe(monkeypatch, conn, ALL_REPLIES, repeatable=True)
    through_redis_py = client.register_script(ALL_REPLIES)(["k"], ["é", 2.5, 7], client=client)
    assert call(["k"], ["é", 2.5, 7]) == through_redis_py
    assert through_redis_py[:2] == [1, b"two"] and through_redis_py[5:] == ["é".encode(), 3]
    assert conn.round_trips == 1


@pytest.mark.parametrize(
    "command",
    [
        ("EVALSHA", "6a09746e", 2, "q:{s}:doc", "q:{s}:ver", "1796297702.8539233", "é ü", 0, -3, 10**20),
        ("EVALSHA", "sha", 0, 0.1, 1796297702.8539233, 1e-7, float(2**60), b"\x00\xff bytes", "", " a b "),
        ("SCRIPT", "LOAD", "return {1, 'two'}"),
    ],
)
def test_commands_are_packed_as_redis_py_packs_them(command: tuple[Any, ...]) -> None:
    packed_by_redis_py = b"".join(redis.Redis().connection_pool.make_connection().pack_command(*command))
    assert redis_connection.pack(command) == packed_by_redis_py


def test_a_script_error_is_a_store_error_and_the_connection_stays_usable(
    monkeypatch: pytest.MonkeyPatch, client: Any
) -> None:
    conn = Connection(client)
    failing_script = probe(
        monkeypatch, conn, "return redis.error_reply('ERR no such thing')", repeatable=True
    )
    with pytest.raises(StoreError, match="no such thing") as caught:
        failing_script([], [])
    assert not isinstance(caught.value, StoreUnavailable)
    assert probe(monkeypatch, conn, ALL_REPLIES, repeatable=True)(["k"], ["v"])[5] == b"v"


def test_a_script_the_server_forgot_is_loaded_again(monkeypatch: pytest.MonkeyPatch, client: Any) -> None:
    conn = Connection(client)
    call = probe(monkeypatch, conn, ALL_REPLIES, repeatable=False)
    assert call(["k"], ["first"])[5] == b"first"
    client.script_flush()
    assert call(["k"], ["second"])[5] == b"second"  # NOSCRIPT, SCRIPT LOAD, the call again
    assert conn.round_trips == 2  # the reload is part of the call, not a repeat of it


@needs_redis_server
def test_a_reply_that_came_too_late_is_never_taken_for_the_next_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that times out leaves its connection dropped (by the failed read, or by the check before the next
    call, which finds unread bytes): the late reply must not answer the next call."""
    with private_redis() as server:
        backend = RedisBackend(server.url, prefix="late", socket_timeout=0.3, socket_connect_timeout=1)
        call = probe(monkeypatch, backend.connection, BUSY_THEN, repeatable=True)
        try:
            with pytest.raises(StoreUnavailable, match="Timeout"):
                call([], [700, "late"])
            time.sleep(0.6)  # the script has ended: its reply has reached the socket it was asked on
            assert call([], [0, "own"]) == b"own"
        finally:
            backend.close()


@needs_redis_server
def test_a_connection_the_server_closed_is_replaced_before_a_script_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with private_redis() as server:
        backend = RedisBackend(server.url, prefix="killed", socket_timeout=1, socket_connect_timeout=1)
        admin = redis.Redis.from_url(server.url)
        write = probe(monkeypatch, backend.connection, ALL_REPLIES, repeatable=False)  # never repeated
        try:
            assert write(["k"], ["before"])[5] == b"before"
            assert admin.client_kill_filter(_type="normal", skipme=True) >= 1
            time.sleep(0.05)  # the close reaches our socket
            assert write(["k"], ["after"])[5] == b"after"  # the dead connection was dropped, not written to
            assert backend.connection.round_trips == 2
        finally:
            admin.close()
            backend.close()


# --- ListTasks: one consistent page although it is read in two steps -------------------------------------


@pytest.fixture(params=["fakeredis", pytest.param("redis", marks=[pytest.mark.redis, needs_redis])])
def redis_store(request: pytest.FixtureRequest) -> Iterator[TaskStore]:
    maker = BackendMaker(request.param)
    yield maker().task_store(TaskLimits(max_tasks=500), describe=describe_task)
    maker.cleanup()


def between_the_reads(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> None:
    """Run ``action`` right after the page is selected from the index and before its bodies are read."""
    select = redis_tasks.select_page

    def select_then_act(*args: Any) -> Any:
        plan = select(*args)
        action()
        return plan

    monkeypatch.setattr(redis_tasks, "select_page", select_then_act)


def stamps(page: Any) -> list[str]:
    return [t["status"]["timestamp"] for t in page.tasks]


def test_a_task_updated_between_the_reads_is_placed_by_its_new_timestamp(
    redis_store: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        redis_store.save("s", task(f"t{i}", INPUT, ts=f"2026-01-01T00:00:0{i}Z"))  # t4 newest
    # The page is selected as t4 t3 t2; then t2 becomes the newest task.
    between_the_reads(
        monkeypatch, lambda: redis_store.save("s", task("t2", INPUT, ts="2026-01-01T00:00:09Z"))
    )
    page = redis_store.list("s", TaskQuery(page_size=3))
    assert [t["id"] for t in page.tasks] == ["t2", "t4", "t3"]
    assert stamps(page) == sorted(stamps(page), reverse=True)
    monkeypatch.undo()
    rest = redis_store.list("s", TaskQuery(page_size=3, page_token=page.next_page_token))
    assert [t["id"] for t in rest.tasks] == ["t1", "t0"]


def test_a_task_moved_off_a_later_page_is_left_to_the_page_it_now_belongs_to(
    redis_store: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(6):
        redis_store.save("s", task(f"t{i}", INPUT, ts=f"2026-01-01T00:00:0{i}Z"))
    first = redis_store.list("s", TaskQuery(page_size=2))
    assert [t["id"] for t in first.tasks] == ["t5", "t4"]
    # The second page is selected as t3 t2; t2 then becomes the newest task, before the first page.
    between_the_reads(
        monkeypatch, lambda: redis_store.save("s", task("t2", INPUT, ts="2026-01-01T00:00:09Z"))
    )
    second = redis_store.list("s", TaskQuery(page_size=2, page_token=first.next_page_token))
    assert [t["id"] for t in second.tasks] == ["t3"]
    monkeypatch.undo()
    third = redis_store.list("s", TaskQuery(page_size=2, page_token=second.next_page_token))
    assert [t["id"] for t in third.tasks] == ["t1", "t0"]  # the continuation is unchanged


def test_a_task_that_stops_matching_between_the_reads_is_left_out(
    redis_store: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(4):
        redis_store.save("s", task(f"t{i}", INPUT, ts=f"2026-01-01T00:00:0{i}Z"))

    def change() -> None:
        redis_store.save("s", task("t3", "TASK_STATE_CANCELED", ts="2026-01-01T00:00:03Z"))

    between_the_reads(monkeypatch, change)
    page = redis_store.list("s", TaskQuery(status=INPUT))
    assert [t["id"] for t in page.tasks] == ["t2", "t1", "t0"]
    assert page.total_size == 4  # counted when the page was selected


@pytest.mark.slow
@pytest.mark.redis
@needs_redis
def test_pages_stay_newest_first_under_concurrent_updates() -> None:
    """Three updaters keep moving random tasks to the top while three listers page through the scope for
    4 seconds: every page is newest first by the timestamps it returns."""
    prefix = f"qt-order-{uuid.uuid4().hex[:10]}"
    backend = RedisBackend(REDIS_URL, prefix=prefix)
    store = backend.task_store(TaskLimits(max_tasks=500), describe=describe_task)
    ids = [f"t{i:02d}" for i in range(40)]

    def save(task_id: str) -> None:
        now = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        store.save("s", task(task_id, INPUT, ts=now))

    for task_id in ids:
        save(task_id)
    stop = time.monotonic() + 4
    pages: list[list[datetime]] = []
    updates = [0]
    lock = threading.Lock()

    def updater() -> None:
        rng = random.Random()
        while time.monotonic() < stop:
            save(rng.choice(ids))
            with lock:
                updates[0] += 1

    def lister() -> None:
        while time.monotonic() < stop:
            token = ""
            while True:
                page = store.list("s", TaskQuery(page_size=10, page_token=token))
                times = [parse_instant(t["status"]["timestamp"]) for t in page.tasks]
                with lock:
                    pages.append(times)  # type: ignore[arg-type]
                token = page.next_page_token
                if not token:
                    break

    threads = [threading.Thread(target=updater) for _ in range(3)]
    threads += [threading.Thread(target=lister) for _ in range(3)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        disordered = [times for times in pages if times != sorted(times, reverse=True)]
        assert len(pages) > 100 and updates[0] > 100, (len(pages), updates[0])
        assert disordered == [], f"{len(disordered)} of {len(pages)} pages out of order"
    finally:
        backend.close()
        delete_under(REDIS_URL, prefix)


def test_the_connection_check_polls_the_os_socket_under_gevent_too() -> None:
    """gevent's patched poll would switch to its hub on every Redis call (~25 µs); a zero-timeout poll never
    blocks, so the check uses the OS's (the worker's turns are taken per request instead)."""
    probe_code = (
        "from gevent import monkey; monkey.patch_all()\n"
        "import select\n"
        "from stores.redis.connection import _os_poll\n"
        "assert select.poll is not monkey.get_original('select', 'poll'), 'gevent patched nothing'\n"
        "assert _os_poll() is monkey.get_original('select', 'poll')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe_code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
