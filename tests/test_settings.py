"""Settings from the environment and their validation at start-up (quineling/settings.py), and what they
configure in the app. The gunicorn process they start: tests/server/test_options.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from quineling.settings import ConfigError, load_settings


def test_defaults() -> None:
    settings = load_settings(env={})
    assert (settings.a2a_host, settings.a2a_port, settings.store_url) == ("127.0.0.1", 8049, "memory://")
    assert settings.legacy_compat and settings.request_limit_bytes == 2 * 1024 * 1024
    assert settings.advertised_url == "http://127.0.0.1:8049"


def test_environment_and_mapping() -> None:
    env = {"QUINELING_A2A_PORT": "9100", "QUINELING_LEGACY_COMPAT": "off", "QUINELING_TASK_MAX": "7"}
    settings = load_settings(env=env)
    assert settings.a2a_port == 9100 and not settings.legacy_compat and settings.task_max == 7
    assert settings.advertised_url == "http://127.0.0.1:9100"
    assert load_settings({"QUINELING_A2A_PORT": 1234}, env=env).a2a_port == 1234
    assert load_settings({"legacy_compat": True}, env=env).legacy_compat


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"QUINELING_A2A_PORT": "http"}, "QUINELING_A2A_PORT"),
        ({"QUINELING_A2A_PORT": "70000"}, "QUINELING_A2A_PORT"),
        ({"QUINELING_LEGACY_COMPAT": "maybe"}, "QUINELING_LEGACY_COMPAT"),
        ({"QUINELING_REQUEST_LIMIT_BYTES": "0"}, "QUINELING_REQUEST_LIMIT_BYTES"),
        ({"QUINELING_BASE_URL": "localhost:8049"}, "QUINELING_BASE_URL"),
        ({"QUINELING_STORE_URL": "redis"}, "QUINELING_STORE_URL"),
        ({"QUINELING_READ_CACHE_ENTRIES": "-1"}, "QUINELING_READ_CACHE_ENTRIES"),
        ({"QUINELING_REDIS_TIMEOUT_SECONDS": "0"}, "QUINELING_REDIS_TIMEOUT_SECONDS"),
        ({"QUINELING_REDIS_TIMEOUT_SECONDS": "inf"}, "QUINELING_REDIS_TIMEOUT_SECONDS"),
        ({"QUINELING_REDIS_TIMEOUT_SECONDS": "3601"}, "QUINELING_REDIS_TIMEOUT_SECONDS"),
        ({"QUINELING_REDIS_CONNECT_TIMEOUT_SECONDS": "-1"}, "QUINELING_REDIS_CONNECT_TIMEOUT_SECONDS"),
        ({"QUINELING_REDIS_CONNECT_TIMEOUT_SECONDS": "nan"}, "QUINELING_REDIS_CONNECT_TIMEOUT_SECONDS"),
        ({"QUINELING_KEEPALIVE_SECONDS": "inf"}, "QUINELING_KEEPALIVE_SECONDS"),
        ({"QUINELING_WORKER_CLASS": "sync"}, "QUINELING_WORKER_CLASS"),
        ({"QUINELING_WORKER_CONNECTIONS": "0"}, "QUINELING_WORKER_CONNECTIONS"),
        ({"QUINELING_MAX_STREAMS": "-1"}, "QUINELING_MAX_STREAMS"),
        ({"QUINELING_MAX_STREAMS": "1000"}, "QUINELING_WORKER_CONNECTIONS"),
        ({"QUINELING_WORKER_CLASS": "gthread", "QUINELING_MAX_STREAMS": "8"}, "QUINELING_THREADS"),
    ],
)
def test_invalid_settings_name_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_settings(env=env)


@pytest.mark.parametrize(
    ("store_url", "ca_text", "needle"),
    [
        ("redis://127.0.0.1:6379/0", "pem", "is not Redis over TLS"),
        ("memory://", "pem", "is not Redis over TLS"),
        ("rediss://127.0.0.1:6380/0", None, "No such file"),
        ("rediss+cluster://127.0.0.1:6380", "not a certificate", "no PEM certificate"),
    ],
)
def test_a_redis_ca_file_needs_a_tls_store_and_a_pem_certificate(
    tmp_path: Path, store_url: str, ca_text: str | None, needle: str
) -> None:
    ca = tmp_path / "ca.pem"
    if ca_text is not None:
        pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        ca.write_text(pem if ca_text == "pem" else ca_text)
    with pytest.raises(ConfigError, match=f"QUINELING_REDIS_CA_FILE.*{needle}"):
        load_settings(env={"QUINELING_STORE_URL": store_url, "QUINELING_REDIS_CA_FILE": str(ca)})


@pytest.mark.parametrize(
    "query", ["ssl_cert_reqs=none", "ssl_check_hostname=false", "ssl_ca_certs=/etc/x.pem"]
)
def test_a_tls_store_url_cannot_loosen_or_redirect_verification(query: str) -> None:
    with pytest.raises(ConfigError, match="QUINELING_STORE_URL must not set ssl_.*always verified"):
        load_settings(env={"QUINELING_STORE_URL": f"rediss://127.0.0.1:6380/0?{query}"})


def test_the_tls_options_reach_the_client(tmp_path: Path) -> None:
    """A rediss:// store's connections verify the certificate and host name against the CA file."""
    from quineling.app import create_app

    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    config = {"store_url": "rediss://127.0.0.1:1/0", "redis_ca_file": str(ca)}  # never contacted
    backend = create_app(config=config).extensions["quineling"].extras["backend"]
    for client in (backend.connection.shared, backend.connection.blocking):
        options = client.connection_pool.connection_kwargs
        assert (options["ssl_cert_reqs"], options["ssl_check_hostname"]) == ("required", True)
        assert options["ssl_ca_certs"] == str(ca)


@pytest.mark.parametrize(
    ("store_url", "entries", "cached"),
    [("memory://", 4096, False), ("redis://fake", 4096, True), ("redis://fake", 0, False)],
)
def test_the_read_cache_fronts_network_stores_only(store_url: str, entries: int, cached: bool) -> None:
    from quineling.app import create_app
    from stores.cache import CachingStateStore

    app = create_app(config={"store_url": store_url, "read_cache_entries": entries})
    store = app.extensions["quineling"].extras["runtime"].store
    assert isinstance(store, CachingStateStore) is cached
    if cached:
        assert store.max_entries == entries and store.kinds == {"artifact", "record"}
    # The task still commits with the runtime's changes: the cache stands for the backend's state store.
    assert app.extensions["quineling"].extras["task_store"].joins(store)


def test_the_redis_deadlines_reach_the_client() -> None:
    """Both deadlines are set on every connection, and a stream's blocking read may wait one keep-alive
    period longer than any other reply."""
    from quineling.app import create_app

    config = {
        "store_url": "redis://127.0.0.1:1/0",  # never contacted: clients connect lazily
        "redis_connect_timeout_seconds": 0.75,
        "redis_timeout_seconds": 3,
        "keepalive_seconds": 20,
    }
    backend = create_app(config=config).extensions["quineling"].extras["backend"]
    ordinary = backend.connection.shared.connection_pool.connection_kwargs
    blocking = backend.connection.blocking.connection_pool.connection_kwargs
    assert (ordinary["socket_connect_timeout"], ordinary["socket_timeout"]) == (0.75, 3)
    assert (blocking["socket_connect_timeout"], blocking["socket_timeout"]) == (0.75, 23)
    assert backend.max_block_seconds == 20


def test_stream_limit_leaves_room_for_other_requests() -> None:
    assert load_settings(env={}).stream_limit == 500  # gevent: half the 1000 connections a worker takes
    assert load_settings(env={"QUINELING_WORKER_CONNECTIONS": "64"}).stream_limit == 32
    assert load_settings(env={"QUINELING_WORKER_CLASS": "gthread"}).stream_limit == 4  # half of 8 threads
    assert load_settings(env={"QUINELING_MAX_STREAMS": "200"}).stream_limit == 200
    gthread = {
        "QUINELING_WORKER_CLASS": "gthread",
        "QUINELING_THREADS": "256",
        "QUINELING_MAX_STREAMS": "200",
    }
    assert load_settings(env=gthread).stream_limit == 200
