"""A Redis that persists nothing is named (issue 27): a restart of it loses every acknowledged write, and
idempotent replays then differ from their first answers. The backend tells AOF, RDB, both and neither apart
(``CONFIG GET``), says so when it cannot tell (``CONFIG`` refused), and the server warns at start-up and lists
the warning in ``/readyz``'s answer (docs/deployment.md, "Persistence and backup")."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import redis

from quineling.app import create_app, serving_app
from stores import RedisBackend
from stores.redis.store import NO_PERSISTENCE
from tests.support.redis_server import PrivateRedis, needs_redis_server, private_redis

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateRedis]:
    with private_redis(aof=False) as started:  # --save '' --appendonly no: nothing persisted
        yield started


def configure(server: PrivateRedis, **settings: str) -> None:
    client = redis.Redis(host="127.0.0.1", port=server.port)
    try:
        for name, value in settings.items():
            client.config_set(name, value)
    finally:
        client.close()


@needs_redis_server
def test_the_backend_tells_aof_rdb_both_and_neither_apart(server: PrivateRedis) -> None:
    try:
        for settings, kept in [
            ({"appendonly": "no", "save": ""}, set()),
            ({"save": "3600 1"}, {"rdb"}),
            ({"appendonly": "yes"}, {"aof", "rdb"}),
            ({"save": ""}, {"aof"}),
        ]:
            configure(server, **settings)
            backend = RedisBackend(server.url, prefix="persist")
            assert backend.persistence() == kept, settings
            assert backend.warnings() == ([] if kept else [NO_PERSISTENCE])
            backend.close()
    finally:
        configure(server, appendonly="no", save="")


@needs_redis_server
def test_a_refused_config_get_is_said_to_leave_persistence_unknown(server: PrivateRedis) -> None:
    admin = redis.Redis(host="127.0.0.1", port=server.port)
    admin.acl_setuser("app", enabled=True, passwords=["+secret-pw"], keys=["*"], channels=["*"],
                      commands=["+@all", "-config"])  # fmt: skip
    try:
        backend = RedisBackend(f"redis://app:secret-pw@127.0.0.1:{server.port}/0", prefix="persist")
        (warning,) = backend.warnings()
        assert warning.startswith("cannot tell whether Redis persists its data (CONFIG GET refused")
        assert "secret-pw" not in warning
        backend.close()
    finally:
        admin.acl_deluser("app")
        admin.close()


@needs_redis_server
def test_the_server_warns_at_start_up_and_in_readyz(
    server: PrivateRedis, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("QUINELING_STORE_URL", server.url)
    monkeypatch.setenv("QUINELING_STORE_PREFIX", "persist")
    with caplog.at_level(logging.WARNING, logger="quineling.app"):
        app = serving_app()
    assert [r.getMessage() for r in caplog.records] == [f"store: {NO_PERSISTENCE}"]
    answer = app.test_client().get("/readyz")
    assert answer.status_code == 200 and answer.get_json() == {"status": "ok", "warnings": [NO_PERSISTENCE]}
    configure(server, appendonly="yes")
    try:  # a Redis that keeps its data: nothing to say
        fresh = create_app(config={"store_url": server.url, "store_prefix": "persist"})
        assert fresh.test_client().get("/readyz").get_json() == {"status": "ok"}
    finally:
        configure(server, appendonly="no")
