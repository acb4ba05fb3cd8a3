"""Redis over TLS, for real: ``rediss://`` (one server) and ``rediss+cluster://`` (a three-master cluster whose
bus is TLS too), both with a password, against a CA made for this module (tests/support/redis_tls.py).

The store basics run on both through the options the app gives the client (``QUINELING_REDIS_CA_FILE`` →
``store_tls_options``); one gunicorn server serves A2A on the TLS cluster; and a server whose certificate the
configured CA did not sign is refused — as the retryable storage error, never accepted and never a 500.
The servers start once for the module (the cluster in about 2.5 s).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from quineling.a2a.task_facts import describe_task
from quineling.app import create_app, store_tls_options
from quineling.cli import main
from quineling.settings import load_settings
from stores import Backend, ChangeSet, StoreUnavailable, Versioned, backend_from_url
from stores.rate_counters import Window
from tests.support.live import live_server
from tests.support.messages import SQUARE_SUM, result_of, text, user_message
from tests.support.redis_keys import delete_under
from tests.support.redis_tls import (
    Certificates,
    TlsUnsupported,
    skip_or_fail,
    tls_cluster,
    tls_material,
    tls_redis,
    tls_unavailable,
)

pytestmark = [pytest.mark.slow, pytest.mark.redis]
ON_TLS_CLUSTER = [pytest.mark.cluster]
V1 = {"A2A-Version": "1.0"}
DOC = ("artifact", "a")
VERIFY_FAILED = "CERTIFICATE_VERIFY_FAILED|certificate verify failed"


@pytest.fixture(scope="module")
def certs() -> Iterator[Certificates]:
    reason = tls_unavailable()
    if reason:
        skip_or_fail(reason)
    with tls_material() as made:
        yield made


@pytest.fixture(scope="module")
def tls_urls(certs: Certificates) -> Iterator[dict[str, str]]:
    """``{"rediss": url, "rediss+cluster": url, "mismatched": url}``: both servers, started once for the module
    (``mismatched``: the single server by an address its certificate does not name)."""
    try:
        with tls_redis(certs) as server, tls_cluster(certs) as cluster:
            yield {"rediss": server.url, "rediss+cluster": cluster.url, "mismatched": server.mismatched_url}
    except TlsUnsupported as exc:
        skip_or_fail(str(exc))


SCHEMES = [
    pytest.param("rediss", id="rediss"),
    pytest.param("rediss+cluster", id="cluster", marks=ON_TLS_CLUSTER),
]


def tls_backend(url: str, ca_file: Path | str, prefix: str) -> Backend:
    """A backend made as the app makes it: the client options from the settings, CA file included."""
    settings = load_settings({"store_url": url, "redis_ca_file": str(ca_file)}, env={})
    return backend_from_url(url, prefix=prefix, **store_tls_options(settings))


@pytest.fixture(params=SCHEMES)
def tls_store(
    request: pytest.FixtureRequest, certs: Certificates, tls_urls: dict[str, str]
) -> Iterator[Backend]:
    url = tls_urls[request.param]
    prefix = f"qtls-{uuid.uuid4().hex[:10]}"
    backend = tls_backend(url, certs.ca, prefix)
    try:
        yield backend
    finally:
        backend.close()
        delete_under(url, prefix, ssl_ca_certs=str(certs.ca))


def test_the_client_verifies_certificate_and_host_name_against_the_configured_ca(certs: Certificates) -> None:
    for url in ("rediss://127.0.0.1:6380/0", "rediss+cluster://127.0.0.1:6380"):
        settings = load_settings({"store_url": url, "redis_ca_file": str(certs.ca)}, env={})
        assert store_tls_options(settings) == {
            "ssl_cert_reqs": "required",
            "ssl_check_hostname": True,
            "ssl_ca_certs": str(certs.ca),
        }
    system = load_settings({"store_url": "rediss://127.0.0.1:6380/0"}, env={})
    assert store_tls_options(system)["ssl_ca_certs"] is None  # the system's trust store
    assert store_tls_options(load_settings({"store_url": "redis://127.0.0.1:6379/0"}, env={})) == {}


def test_task_state_and_rate_counter_over_tls(tls_store: Backend) -> None:
    tasks = tls_store.task_store(describe=describe_task)
    task = {
        "id": "t1",
        "contextId": "c",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "history": [{"x": "é"}],
    }
    tasks.save("s", task)
    assert tasks.load("s", "t1") == task

    state = tls_store.state_store()
    state.commit("s", ChangeSet(expect={DOC: 0}, put={DOC: {"n": 1}}))
    assert state.read("s", [DOC])[DOC] == Versioned({"n": 1}, 1)

    counter = tls_store.rate_counter()
    window = Window("5-60s", 60)
    assert [counter.hit("p:alice", [window])[0].count for _ in range(3)] == [1, 2, 3]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("trusted", ["other-ca", "system"])
def test_a_server_certificate_the_configured_ca_did_not_sign_is_refused_as_unavailable(
    scheme: str, trusted: str, certs: Certificates, tls_urls: dict[str, str]
) -> None:
    """Trusting another CA, or only the system's (which never signed the test CA): the handshake fails, and
    the store reports the retryable outage rather than talking to an unverified server."""
    ca_file = certs.other_ca if trusted == "other-ca" else ""
    with pytest.raises(StoreUnavailable, match=VERIFY_FAILED):
        backend = tls_backend(tls_urls[scheme], ca_file, f"qtls-{uuid.uuid4().hex[:10]}")
        try:
            backend.state_store().read("s", [DOC])
        finally:
            backend.close()


def test_a_certificate_that_does_not_name_the_address_is_refused(
    certs: Certificates, tls_urls: dict[str, str]
) -> None:
    """The right CA, but the server is reached by an address its certificate does not name: refused too."""
    backend = tls_backend(tls_urls["mismatched"], certs.ca, f"qtls-{uuid.uuid4().hex[:10]}")
    try:
        with pytest.raises(StoreUnavailable, match="certificate verify failed: IP address mismatch"):
            backend.state_store().read("s", [DOC])
    finally:
        backend.close()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_app_answers_an_unverifiable_store_with_the_retryable_error(
    scheme: str, certs: Certificates, tls_urls: dict[str, str]
) -> None:
    config = {
        "store_url": tls_urls[scheme],
        "redis_ca_file": str(certs.other_ca),
        "store_prefix": "qtls-refused",
    }
    client = create_app(config=config).test_client()
    params = {"message": user_message(text(SQUARE_SUM))}
    rpc = client.post("/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params},
                      headers=V1)  # fmt: skip
    error = rpc.get_json()["error"]
    assert rpc.status_code == 200 and error["code"] == -32603
    assert error["data"][0]["metadata"]["retryable"] == "true"
    rest = client.post("/a2a/rest/message:send", json=params, headers=V1)
    assert rest.status_code == 503 and rest.headers.get("Retry-After")
    assert rest.get_json()["error"]["status"] == "UNAVAILABLE"
    assert client.get("/readyz").status_code == 503


@pytest.mark.cluster
def test_a_live_server_serves_a2a_on_the_tls_cluster(certs: Certificates, tls_urls: dict[str, str]) -> None:
    url = tls_urls["rediss+cluster"]
    with live_server(store_url=url, redis_ca_file=str(certs.ca)) as server:
        sent = requests.post(
            server.url("/a2a/jsonrpc"),
            json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                  "params": {"message": user_message(text(SQUARE_SUM))}},
            headers=V1,
            timeout=30,
        )  # fmt: skip
        task = sent.json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", sent.text
        got = requests.post(
            server.url("/a2a/jsonrpc"),
            json={"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task["id"]}},
            headers=V1,
            timeout=30,
        )
        fetched = got.json()["result"]
        assert fetched["id"] == task["id"] and result_of(fetched) == result_of(task)
        creation = result_of(fetched)
        assert creation["operation"] == "create" and creation["result"]["status"] == "created"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_store_commands_reach_a_tls_store_with_the_ca_file(
    scheme: str, certs: Certificates, tls_urls: dict[str, str], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    prefix = f"qtls-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("QUINELING_STORE_URL", tls_urls[scheme])
    monkeypatch.setenv("QUINELING_STORE_PREFIX", prefix)
    monkeypatch.setenv("QUINELING_REDIS_CA_FILE", str(certs.ca))
    assert main(["store", "usage"]) == 0
    assert capsys.readouterr().out == "no scope holds anything\n"
