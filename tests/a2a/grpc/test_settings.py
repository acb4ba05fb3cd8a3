"""The gRPC settings, their refusals, and the card's GRPC interface: listed only when a listener is
configured, at the URL the settings give."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.app import create_app
from quineling.server.grpc_beside import check as check_beside
from quineling.settings import ConfigError, check_grpc_exposure, load_settings


def grpc_interfaces(**config: Any) -> list[dict[str, str]]:
    card = create_app(config=config).extensions["quineling"].service.card("1.0")
    return [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]


def test_the_card_lists_grpc_only_when_a_listener_is_configured() -> None:
    assert grpc_interfaces() == []
    assert grpc_interfaces(grpc_port=50051) == [
        {"url": "127.0.0.1:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
    ]
    assert (
        grpc_interfaces(grpc_port=50051, base_url="https://a2a.example.com")[0]["url"]
        == "a2a.example.com:50051"
    )
    assert grpc_interfaces(grpc_url="grpc.example.com:443")[0]["url"] == "grpc.example.com:443"
    assert grpc_interfaces(grpc_port=50051, a2a_host="::1")[0]["url"] == "[::1]:50051"


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"grpc_port": 70000}, "QUINELING_GRPC_PORT"),
        ({"grpc_port": 8049}, "QUINELING_GRPC_PORT must differ"),
        ({"grpc_url": "https://a2a.example.com"}, "QUINELING_GRPC_URL"),
        ({"grpc_url": "a2a.example.com"}, "QUINELING_GRPC_URL"),
        ({"grpc_tls_cert_file": "/x.pem"}, "QUINELING_GRPC_TLS_CERT_FILE and QUINELING_GRPC_TLS_KEY_FILE"),
        ({"grpc_threads": 1}, "QUINELING_GRPC_THREADS"),
    ],
)
def test_refused_settings_name_the_variable(config: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load_settings(config, env={})


def test_plaintext_off_loopback_needs_tls_or_an_explicit_switch() -> None:
    check_grpc_exposure(load_settings({"grpc_port": 50051}, env={}))
    public = {"grpc_port": 50051, "a2a_host": "0.0.0.0"}
    with pytest.raises(ConfigError, match="QUINELING_GRPC_ALLOW_PLAINTEXT"):
        check_grpc_exposure(load_settings(public, env={}))
    check_grpc_exposure(load_settings({**public, "grpc_allow_plaintext": True}, env={}))
    check_grpc_exposure(
        load_settings({**public, "grpc_tls_cert_file": "c", "grpc_tls_key_file": "k"}, env={})
    )


def test_grpc_on_memory_runs_in_a_gthread_worker() -> None:
    with pytest.raises(ConfigError, match="QUINELING_WORKER_CLASS=gthread"):
        check_beside(load_settings({"grpc_port": 50051}, env={}))
    check_beside(load_settings({"grpc_port": 50051, "worker_class": "gthread"}, env={}))
    check_beside(load_settings({"grpc_port": 50051, "store_url": "redis://127.0.0.1:6379/1"}, env={}))


def test_serve_grpc_alone_refuses_memory_and_needs_a_port(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from quineling.cli import main

    # Set, so that monkeypatch takes back what the command writes (--port is written to the environment).
    monkeypatch.setenv("QUINELING_STORE_URL", "memory://")
    monkeypatch.setenv("QUINELING_GRPC_PORT", "")
    assert main(["serve-grpc"]) == 2
    assert "needs a port" in capsys.readouterr().err
    assert main(["serve-grpc", "--port", "50051"]) == 2
    err = capsys.readouterr().err
    assert "memory:// is one process's memory" in err and "quineling serve" in err
