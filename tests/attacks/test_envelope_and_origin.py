"""Issue 26, item 5: requests that mean one thing to this server and another to whatever sits in front of it.
A JSON-RPC envelope naming a member twice (parsers disagree on which one counts), a body in a Content-Encoding
the server does not decode, and an Origin of another scheme than the server's own are refused, on the lean
path and on Flask's alike. In process: the lean path is the app's WSGI middleware here."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.a2a.conftest import make_app
from tests.support.bindings import V1

GET = '"jsonrpc":"2.0","id":1,"params":{"id":"no-such-task"}'


@pytest.fixture(params=[True, False], ids=["lean", "flask"])
def client(request: pytest.FixtureRequest) -> Any:
    return make_app(config={"lean_jsonrpc": request.param}).test_client()


def post(client: Any, body: str, query: str = "", **headers: str) -> Any:
    return client.post(
        "/a2a/jsonrpc" + query, data=body, headers={"Content-Type": "application/json", **V1, **headers}
    )


@pytest.mark.parametrize(
    "body",
    [
        '{"method":"GetTask","method":"ListTasks",' + GET + "}",
        '{"method":"GetTask","\\u006dethod":"ListTasks",' + GET + "}",
        '{"method":"GetTask",' + GET + ',"id":2}',
        '{"method":"GetTask",' + GET + ',"params":{}}',
        '{"method":"GetTask",' + GET + ',"jsonrpc":"2.0"}',
    ],
)
@pytest.mark.parametrize("query", ["", "?x=1"])
def test_an_envelope_naming_a_member_twice_is_refused(client: Any, body: str, query: str) -> None:
    answer = post(client, body, query)
    assert answer.status_code == 400
    assert answer.get_json()["error"]["code"] == -32600
    assert "more than once" in answer.get_json()["error"]["message"]


def test_repeated_names_inside_params_or_in_strings_are_not_the_envelopes(client: Any) -> None:
    body = '{"jsonrpc":"2.0","id":"\\"method\\"","method":"GetTask","params":{"id":"\\"method\\"\\u00e9"}}'
    answer = post(client, body)
    assert answer.status_code == 200
    assert answer.get_json()["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "x-custom, identity"])
def test_a_content_encoding_the_server_does_not_decode_is_refused(client: Any, encoding: str) -> None:
    rpc = post(client, "{" + '"method":"GetTask",' + GET + "}", **{"Content-Encoding": encoding})
    assert rpc.status_code == 400
    assert (
        rpc.get_json()["error"]["code"] == -32005 and "Content-Encoding" in rpc.get_json()["error"]["message"]
    )
    rest = client.post(
        "/a2a/rest/message:send",
        data=json.dumps({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
        headers={"Content-Type": "application/json", "Content-Encoding": encoding, **V1},
    )
    assert rest.status_code == 415 and "Content-Encoding" in rest.get_json()["error"]["message"]


def test_identity_encoding_is_plain(client: Any) -> None:
    answer = post(client, "{" + '"method":"GetTask",' + GET + "}", **{"Content-Encoding": "identity"})
    assert answer.status_code == 200


@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        ("127.0.0.1:8049", "http://127.0.0.1:8049", 200),
        ("127.0.0.1:8049", "https://127.0.0.1:8049", 403),
        ("localhost", "https://localhost:80", 403),
        ("localhost", "https://localhost", 403),
    ],
)
def test_an_origin_of_another_scheme_is_another_origin(
    client: Any, host: str, origin: str, status: int
) -> None:
    answer = post(client, "{" + '"method":"GetTask",' + GET + "}", Host=host, Origin=origin)
    assert answer.status_code == status, answer.get_data(as_text=True)
