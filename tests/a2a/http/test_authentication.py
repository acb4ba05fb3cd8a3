"""Authentication on every binding and path (docs/security.md): the 401 in each binding's shape, what stays
public, what the card declares, that the check comes before anything else of a request, that tokens are never
logged, open streams after a revocation, the 503 of an unreachable JWKS, and the bound on live scopes."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from quineling.a2a.http.authentication import rechecked
from quineling.app import create_app
from quineling.auth.keyfile import add_key, revoke_keys
from tests.a2a.test_compat_v03_http import V03_METHODS
from tests.support.bindings import rest_route
from tests.support.principals import Caller, keys_file
from tests.support.sse import parse_sse
from tests.support.tokens import AUDIENCE, ISSUER, SigningKey, jwks

RSA = SigningKey.rsa()
V1 = {"A2A-Version": "1.0"}
MESSAGE = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "[1,2] | sum | report t"}]}
V1_CALLS: dict[str, dict[str, Any]] = {
    "SendMessage": {"message": MESSAGE},
    "SendStreamingMessage": {"message": MESSAGE},
    "GetTask": {"id": "t-1"},
    "ListTasks": {},
    "CancelTask": {"id": "t-1"},
    "SubscribeToTask": {"id": "t-1"},
    "CreateTaskPushNotificationConfig": {"taskId": "t-1", "url": "https://h.test/x"},
    "GetTaskPushNotificationConfig": {"taskId": "t-1", "id": "c-1"},
    "ListTaskPushNotificationConfigs": {"taskId": "t-1"},
    "DeleteTaskPushNotificationConfig": {"taskId": "t-1", "id": "c-1"},
    "GetExtendedAgentCard": {},
}


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    return keys_file(tmp_path, "alice", "bob")


def app_with(tmp_path: Path, keys: Path | None = None, jwt: bool = False, **config: Any) -> Any:
    settings: dict[str, Any] = {
        "keepalive_seconds": 0.2,
        "subscribe_max_seconds": 5,
        "tenants": "*",
        **config,
    }
    if keys is not None:
        settings["auth_keys_file"] = str(keys)
    if jwt:
        (tmp_path / "jwks.json").write_text(json.dumps(jwks(RSA)))
        settings.update(auth_jwks=str(tmp_path / "jwks.json"), auth_jwt_issuer=ISSUER,
                        auth_jwt_audience=AUDIENCE)  # fmt: skip
    return create_app(config=settings)


@pytest.fixture
def client(tmp_path: Path, keys: tuple[Path, dict[str, str]]) -> Any:
    return app_with(tmp_path, keys[0], jwt=True).test_client()


def every_request() -> list[tuple[str, str, str, Any, dict[str, str]]]:
    """(label, HTTP verb, path, JSON body, headers) of every business request of every binding."""
    requests: list[tuple[str, str, str, Any, dict[str, str]]] = []
    for method, params in V1_CALLS.items():
        body = {"jsonrpc": "2.0", "id": 5, "method": method, "params": params}
        requests.append((f"jsonrpc {method}", "POST", "/a2a/jsonrpc", body, V1))
    for method in V03_METHODS:
        body = {"jsonrpc": "2.0", "id": 5, "method": method, "params": {"id": "t-1", "message": {}}}
        requests.append((f"v0.3 {method}", "POST", "/a2a/jsonrpc/", body, {}))
    for method, params in V1_CALLS.items():
        verb, path, body, _query = rest_route(method, params)
        requests.append((f"rest {method}", verb, "/a2a/rest" + path, body, V1))
        requests.append((f"rest tenant {method}", verb, "/a2a/rest/acme" + path, body, V1))
    requests.append(("rest GET subscribe", "GET", "/a2a/rest/tasks/t-1:subscribe", None, V1))
    requests.append(("rest unknown route", "GET", "/a2a/rest/no/such/route", None, V1))
    requests.append(("jsonrpc GET", "GET", "/a2a/jsonrpc", None, V1))
    return requests


def expect_401(response: Any, path: str, token_sent: bool) -> dict[str, Any]:
    assert response.status_code == 401, (path, response.status_code, response.get_data(as_text=True))
    assert response.mimetype == "application/json"
    challenge = 'Bearer realm="quineling"' + (', error="invalid_token"' if token_sent else "")
    assert response.headers["WWW-Authenticate"] == challenge
    body: dict[str, Any] = response.get_json()
    if path.startswith("/a2a/jsonrpc"):
        assert body == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32000, "message": body["error"]["message"]},
        }
    else:
        error = body["error"]
        assert (error["code"], error["status"]) == (401, "UNAUTHENTICATED")
        assert error["details"] == [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "UNAUTHENTICATED",
             "domain": "a2a-protocol.org"}
        ]  # fmt: skip
    return body


@pytest.mark.parametrize("request_", every_request(), ids=lambda r: r[0])
def test_every_business_request_needs_a_bearer_token(client: Any, request_: Any) -> None:
    label, verb, path, body, headers = request_
    expired = RSA.token(exp=int(time.time()) - 3600)
    wrong_audience = RSA.token(aud="other")
    answers = []
    for authorization, sent in (
        (None, False),
        ("Basic YWxpY2U6eA==", False),
        ("Bearer qk_not-a-key", True),
        (f"Bearer {expired}", True),
        (f"Bearer {wrong_audience}", True),
        ("Bearer a.b.c", True),
    ):
        extra = {} if authorization is None else {"Authorization": authorization}
        response = client.open(path, method=verb, json=body, headers={**headers, **extra})
        answers.append(expect_401(response, path, sent))
    assert all(answer == answers[0] for answer in answers), "a refusal must not say which check failed"


def test_authentication_comes_before_every_other_check(client: Any) -> None:
    """Content type, size, parse and version errors are for authenticated callers only."""
    big = b"x" * (3 * 1024 * 1024)
    cases = [
        ("/a2a/jsonrpc", {"data": "not json", "content_type": "text/plain"}),
        ("/a2a/jsonrpc", {"data": big, "content_type": "application/json"}),
        ("/a2a/jsonrpc", {"data": "{", "content_type": "application/json"}),
        ("/a2a/rest/message:send", {"data": "x", "content_type": "text/plain"}),
        ("/a2a/rest/message:send", {"data": big, "content_type": "application/json"}),
    ]
    for path, kwargs in cases:
        expect_401(client.post(path, **kwargs), path, token_sent=False)
    expect_401(client.get("/a2a/rest/tasks", headers={"A2A-Version": "9.9"}), "/a2a/rest/tasks", False)


def test_a_foreign_host_or_origin_is_refused_before_any_credential_is_checked(
    tmp_path: Path, keys: tuple[Path, dict[str, str]]
) -> None:
    """The Host/Origin guard runs first (421, 403: no credential looked at, none needed); its media-type rule
    comes after authentication, like every other check of a request's content, and still holds for callers
    who authenticated."""
    client = app_with(tmp_path, keys[0]).test_client()
    good = {"Authorization": f"Bearer {keys[1]['alice']}"}
    for headers in ({}, good, {"Authorization": "Bearer qk_forged"}):
        refused = client.post("/a2a/jsonrpc", data="x", content_type="text/plain",
                              headers={**headers, "Host": "rebound.example"})  # fmt: skip
        assert refused.status_code == 421 and "WWW-Authenticate" not in refused.headers
        refused = client.post("/a2a/rest/message:send", data="x", content_type="text/plain",
                              headers={**headers, "Origin": "https://evil.example"})  # fmt: skip
        assert refused.status_code == 403 and "WWW-Authenticate" not in refused.headers
    expect_401(client.post("/a2a/rest/message:send", data="x", content_type="text/plain"), "rest", False)
    simple = client.post("/a2a/rest/message:send", data="x", content_type="text/plain", headers=good)
    assert simple.status_code == 415, simple.get_data(as_text=True)  # authenticated: the guard's third rule
    simple = client.post("/a2a/jsonrpc", data="x", content_type="text/plain", headers=good)
    assert simple.status_code == 400 and "cross-site form" in simple.get_json()["error"]["message"]


def test_the_card_health_and_api_description_stay_public(client: Any) -> None:
    for path, headers in [
        ("/.well-known/agent-card.json", {}),
        ("/.well-known/agent-card.json", V1),
        ("/healthz", {}),
        ("/readyz", {}),
        ("/a2a/rest/openapi.json", {}),
        ("/a2a/rest/docs", {}),
        ("/a2a/rest/docs/assets/swagger-ui.css", {}),
    ]:
        response = client.get(path, headers=headers)
        response.close()
        assert response.status_code == 200, path


def test_the_card_declares_the_bearer_scheme_in_each_generations_form(
    tmp_path: Path, keys: tuple[Path, dict[str, str]]
) -> None:
    path, tokens = keys
    for jwt_on in (False, True):
        client = app_with(tmp_path, path, jwt=jwt_on).test_client()
        pure = client.get("/.well-known/agent-card.json", headers=V1).get_json()
        scheme = pure["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]
        assert scheme["scheme"] == "Bearer" and ("bearerFormat" in scheme) is jwt_on
        assert scheme.get("bearerFormat", "JWT") == "JWT"
        assert pure["securityRequirements"] == [{"schemes": {"bearer": {"list": []}}}]
        superset = client.get("/.well-known/agent-card.json").get_json()
        legacy = superset["securitySchemes"]["bearer"]
        assert legacy["type"] == "http" and legacy["scheme"] == "Bearer"
        assert ("bearerFormat" in legacy) is jwt_on
        assert superset["security"] == [{"bearer": []}]
        # The superset also reads as 1.0: each scheme carries its 1.0 oneof member, and the 1.0 requirements.
        assert superset["securitySchemes"]["bearer"]["httpAuthSecurityScheme"] == scheme
        assert superset["securityRequirements"] == pure["securityRequirements"]
        for card in (pure, superset):
            text = json.dumps(card)
            assert not any(token in text for token in tokens.values()) and "sha256:" not in text
            assert str(path) not in text
    anonymous = create_app().test_client().get("/.well-known/agent-card.json", headers=V1).get_json()
    assert "securitySchemes" not in anonymous and "securityRequirements" not in anonymous


@pytest.mark.parametrize("flavour", ["jsonrpc", "rest", "v03"])
def test_a_good_token_is_served_on_every_binding_key_or_jwt(
    client: Any, keys: tuple[Path, dict[str, str]], flavour: str
) -> None:
    for token in (keys[1]["alice"], RSA.token("alice")):
        caller = Caller(client, flavour, token)
        task_id = caller.waiting()
        status, body = caller.subscribe(task_id)
        assert status == 200 and body["sse"] == "message", body
        assert Caller(client, flavour, token).get(task_id)[0] == 200


def test_tokens_are_never_logged(
    client: Any, keys: tuple[Path, dict[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = [keys[1]["alice"], RSA.token("alice"), RSA.token("bob", aud="other"), "qk_wrong-token"]
    for token in secrets:
        for flavour in ("jsonrpc", "rest"):
            caller = Caller(client, flavour, token)
            caller.get("t-1")
            caller.send_part({"text": "[1] | sum | report t"})
    logged = "\n".join(
        record.getMessage() + str(record.exc_info or "") + str(record.args) for record in caplog.records
    )
    assert caplog.records, "the refused JWT should at least be noted at info level"
    for token in secrets:
        assert token not in logged
        assert token.split(".")[-1] not in logged  # not even a JWT's signature


def test_an_unreachable_jwks_url_answers_503_in_the_bindings_shape(tmp_path: Path) -> None:
    config = {"auth_jwks": "http://127.0.0.1:1/jwks.json", "auth_jwt_issuer": ISSUER,
              "auth_jwt_audience": AUDIENCE}  # fmt: skip
    client = create_app(config=config).test_client()
    headers = {**V1, "Authorization": f"Bearer {RSA.token()}"}
    rpc = client.post("/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                             "params": {"id": "t"}}, headers=headers)  # fmt: skip
    assert rpc.status_code == 503 and rpc.headers["Retry-After"] == "5"
    assert rpc.get_json()["error"]["code"] == -32603
    rest = client.get("/a2a/rest/tasks", headers=headers)
    assert rest.status_code == 503 and rest.get_json()["error"]["status"] == "UNAVAILABLE"
    expect_401(client.get("/a2a/rest/tasks", headers=V1), "/a2a/rest/tasks", token_sent=False)


def test_rechecked_stops_before_the_first_chunk_after_the_credential_lapses() -> None:
    now = [0.0]
    valid = [True]
    chunks = iter(["a", "b", "c", "d", "e"])
    closed = []

    class Source:
        def __iter__(self) -> Any:
            return self

        def __next__(self) -> str:
            now[0] += 0.6
            return next(chunks)

        def close(self) -> None:
            closed.append(True)

    out = rechecked(Source(), lambda: valid[0], 1.0, clock=lambda: now[0])
    assert [next(out), next(out)] == ["a", "b"]  # the first check (1.2 s) passed
    valid[0] = False
    assert list(out) == ["c"]  # 1.8 s: not due yet; 2.4 s: due, lapsed, ended before "d"
    assert closed == [True]


def test_a_revoked_key_ends_its_open_stream(tmp_path: Path, keys: tuple[Path, dict[str, str]]) -> None:
    path, tokens = keys
    client = app_with(tmp_path, path, subscribe_max_seconds=20).test_client()
    caller = Caller(client, "jsonrpc", tokens["alice"])
    task_id = caller.waiting()
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    headers = {**V1, "Authorization": f"Bearer {tokens['alice']}"}
    response = client.post("/a2a/jsonrpc", json=body, headers=headers, buffered=False)
    assert response.mimetype == "text/event-stream"
    chunks = iter(response.response)
    assert b"TASK_STATE_INPUT_REQUIRED" in next(chunks)
    started = time.monotonic()
    threading.Timer(0.3, revoke_keys, args=(path, "alice")).start()
    rest = b"".join(chunks)  # keep-alives until the next check after the file is re-read, then the end
    elapsed = time.monotonic() - started
    response.close()
    assert 0.3 < elapsed < 6, elapsed
    assert not list(parse_sse([rest])) and b"keepalive" in rest  # no further event, no final status
    expect_401(client.post("/a2a/jsonrpc", json=body, headers=headers), "/a2a/jsonrpc", token_sent=True)


def test_a_new_key_works_and_a_revoked_one_stops_without_a_restart(
    tmp_path: Path, keys: tuple[Path, dict[str, str]]
) -> None:
    path, tokens = keys
    client = app_with(tmp_path, path).test_client()
    carol = add_key(path, "carol")
    deadline = time.monotonic() + 5
    while Caller(client, "rest", carol).list()[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Caller(client, "rest", carol).list()[0] == 200
    revoke_keys(path, "bob")
    while Caller(client, "rest", tokens["bob"]).list()[0] != 401 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Caller(client, "rest", tokens["bob"]).list()[0] == 401
    path.write_text(path.read_text() + "broken line\n")  # a malformed edit keeps the last good set
    time.sleep(1.2)
    assert Caller(client, "rest", carol).list()[0] == 200
    assert Caller(client, "rest", tokens["bob"]).list()[0] == 401


# --- the bound on live scopes ----------------------------------------------------------------------------


def test_a_new_principal_beyond_the_scope_bound_is_refused_until_one_is_idle(
    tmp_path: Path, keys: tuple[Path, dict[str, str]]
) -> None:
    path, tokens = keys
    carol = add_key(path, "carol")
    client = app_with(tmp_path, path, max_scopes=2, scope_idle_seconds=1.5).test_client()
    alice, bob = Caller(client, "jsonrpc", tokens["alice"]), Caller(client, "jsonrpc", tokens["bob"])
    alices = alice.waiting()
    bob.waiting()
    status, body = Caller(client, "jsonrpc", carol).send_part({"text": "[1] | sum | report t"})
    error = body["error"]
    assert status == 200 and error["code"] == -32603 and "Retry later" in error["message"]
    assert error["data"][0]["metadata"]["retryable"] == "true"
    rest_status, rest_body = Caller(client, "rest", carol).send_part({"text": "[1] | sum | report t"})
    # Transient, answered like a storage outage: 503 with Retry-After, the wait this refusal knows.
    assert rest_status == 503 and rest_body["error"]["status"] == "UNAVAILABLE"
    metadata = rest_body["error"]["details"][0]["metadata"]
    assert metadata["retryable"] == "true" and 1 <= int(metadata["retryAfterSeconds"]) <= 2
    carols = Caller(client, "rest", carol)
    raw = client.post(
        "/a2a/rest/message:send",
        json={"message": carols.message({"text": "[1] | sum"})},
        headers={"A2A-Version": "1.0", "Authorization": f"Bearer {carol}"},
    )
    assert raw.status_code == 503 and 1 <= int(raw.headers["Retry-After"]) <= 2
    assert Caller(client, "rest", carol).list()[1]["totalSize"] == 0  # refused: nothing stored
    assert bob.waiting()  # a live scope is never refused
    time.sleep(1.6)  # alice idle now; bob wrote after her
    assert Caller(client, "jsonrpc", carol).waiting()
    status, body = alice.get(alices)
    assert body["error"]["code"] == -32001  # alice's idle scope was reclaimed for carol


def test_the_superset_card_reads_as_1_0_and_as_v0_3_to_the_official_sdk(
    tmp_path: Path, keys: tuple[Path, dict[str, str]]
) -> None:
    """The header-less card with auth on, through a2a-sdk's own 1.0 card parser and its v0.3 model."""
    from tests.interop.conftest import sdk_unavailable

    try:
        from a2a.client.card_resolver import parse_agent_card
        from a2a.compat.v0_3 import types as v03
        from a2a.types.a2a_pb2 import AgentCard
        from google.protobuf import json_format
    except ImportError as exc:
        sdk_unavailable(f"a2a-sdk is not installed ({exc})")
    superset = (
        app_with(tmp_path, keys[0], jwt=True).test_client().get("/.well-known/agent-card.json").get_json()
    )
    # Strictly as 1.0, the top-level v0.3-only members and each scheme's v0.3 keys aside: every scheme is a
    # oneof the 1.0 types know, and nothing else in the card is unknown to them.
    known = {field.json_name for field in AgentCard.DESCRIPTOR.fields}
    v1_only = {k: v for k, v in json.loads(json.dumps(superset)).items() if k in known}
    for name, scheme in v1_only["securitySchemes"].items():
        v1_only["securitySchemes"][name] = {k: v for k, v in scheme.items() if k.endswith("SecurityScheme")}
    strict = json_format.ParseDict(v1_only, AgentCard())
    assert strict.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
    assert list(strict.security_requirements[0].schemes) == ["bearer"]
    parsed = parse_agent_card(json.loads(json.dumps(superset)))  # what the SDK's resolver does
    assert parsed.security_schemes["bearer"].http_auth_security_scheme.bearer_format == "JWT"
    legacy = v03.AgentCard.model_validate(superset)
    assert legacy.security_schemes is not None
    assert legacy.security_schemes["bearer"].root.type == "http"
    assert legacy.security == [{"bearer": []}]
