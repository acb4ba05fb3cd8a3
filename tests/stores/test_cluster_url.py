"""``redis+cluster://`` and ``rediss+cluster://`` store URLs (docs/cluster.md, "Configuration")."""

from __future__ import annotations

from typing import Any

import pytest
from redis import exceptions as rex

from stores import BACKENDS, MemoryBackend, RedisBackend
from stores.errors import StoreError, StoreUnavailable
from stores.redis import connection as redis_connection
from stores.redis.connection import Connection, LazyCluster, cluster_auth, cluster_nodes
from tests.support.live import free_port


def test_both_cluster_schemes_pick_the_redis_backend() -> None:
    assert BACKENDS["redis+cluster"]() is RedisBackend and BACKENDS["rediss+cluster"]() is RedisBackend
    # The lazy table names every scheme the backend serves, and no other.
    assert {s for s, load in BACKENDS.items() if s not in MemoryBackend.scheme} == set(RedisBackend.scheme)


def test_a_cluster_url_lists_its_startup_nodes() -> None:
    nodes = cluster_nodes("redis+cluster://10.0.0.1:7000, redis-1.example:7001,[::1]:7002/")
    assert [(node.host, node.port) for node in nodes] == [
        ("10.0.0.1", 7000),
        ("redis-1.example", 7001),
        ("::1", 7002),
    ]


def test_credentials_come_percent_decoded_and_never_in_errors() -> None:
    assert cluster_auth("redis+cluster://app:s%40cret@h:1") == {"username": "app", "password": "s@cret"}
    assert cluster_auth("redis+cluster://:only@h:1") == {"password": "only"}
    assert cluster_auth("redis+cluster://h:1,h:2") == {}
    with pytest.raises(ValueError) as refused:
        cluster_nodes("redis+cluster://app:hunter2@h:1/3")
    assert "hunter2" not in str(refused.value) and "no database" in str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "redis+cluster://h:1/2",
        "redis+cluster://h:1?ssl=true",
        "redis+cluster://h",
        "redis+cluster://h:x",
        "redis+cluster://",
    ],
)
def test_a_cluster_url_names_nodes_only(url: str) -> None:
    with pytest.raises(ValueError, match="Redis Cluster URL"):
        cluster_nodes(url)


def test_the_cluster_client_gets_our_deadlines_tls_and_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[dict[str, object]] = []
    monkeypatch.setattr(redis_connection, "_Cluster", lambda **options: made.append(options))
    redis_connection.make_client(
        "rediss+cluster://u:p@h:1,h:2", socket_timeout=1.5, socket_connect_timeout=0.5
    )
    (options,) = made
    assert options["ssl"] is True and (options["username"], options["password"]) == ("u", "p")
    assert (options["socket_connect_timeout"], options["socket_timeout"]) == (0.5, 1.5)
    assert options["require_full_coverage"] is False  # other primaries serve while one is down
    assert [(node.host, node.port) for node in options["startup_nodes"]] == [("h", 1), ("h", 2)]  # type: ignore[attr-defined]


def test_a_backend_on_a_cluster_that_is_down_is_made_and_answers_the_retryable_error() -> None:
    """redis-py's cluster client reads the slot map when it is made and raises when no node answers; the
    backend makes its client on first use, so a server whose cluster is down at start-up still starts
    (tests/e2e/test_lifecycle_live.py shows it recover once the cluster is up)."""
    url = f"redis+cluster://127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    backend = RedisBackend(url, prefix="qt-down", socket_connect_timeout=0.5)
    try:
        assert backend.connection.cluster
        with pytest.raises(StoreUnavailable, match="cannot be reached"):
            backend.ping()
        with pytest.raises(StoreUnavailable, match="cannot be reached"):
            backend.state_store().read("alice", [("doc", "x")])
    finally:
        backend.close()  # closing a client never made connects to nothing


class Failing:
    """A stand-in cluster client whose every command raises ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def get(self, *_: Any) -> None:
        raise self.error

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        # what the cluster client raises when rereading the slot map after a connection error finds no node
        (
            rex.RedisClusterException("Redis Cluster cannot be connected. Please provide at least one ..."),
            True,
        ),
        (rex.SlotNotCoveredError('Slot "7" not covered by the cluster.'), True),
        (rex.RedisClusterException("Keys in request don't hash to the same slot"), False),
    ],
)
def test_the_cluster_clients_own_failures_become_store_errors(error: Exception, retryable: bool) -> None:
    """Not RedisErrors in redis-py: without this mapping they reached the request as an unhandled exception."""
    connection = Connection(LazyCluster(lambda: Failing(error)))  # type: ignore[arg-type, return-value]
    with pytest.raises(StoreError) as raised:
        connection.command("get", "k", repeatable=True)
    assert isinstance(raised.value, StoreUnavailable) is retryable


def test_the_cluster_client_finds_an_xreads_keys_itself() -> None:
    """No COMMAND GETKEYS round trip before each poll of an open stream (issue 27): the keys come from the
    arguments, and other commands keep redis-py's own way."""
    from stores.redis.connection import _Cluster

    client = _Cluster.__new__(_Cluster)  # never connected: the method reads only its arguments
    assert client._get_command_keys("XREAD", "BLOCK", 1000, "STREAMS", "a", "0-0") == ["a"]
    assert client._get_command_keys("xread", "COUNT", 5, "streams", "a", "{a}b", "0-0", "1-0") == [
        "a",
        "{a}b",
    ]
