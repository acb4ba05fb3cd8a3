"""Wire exchanges independent clients and validators check (issue 29): extensions echoed, card details, output
modes, the HTTP+JSON media type."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quineling.a2a import errors
from quineling.a2a.card import IDEMPOTENCY_EXTENSION, LONG_POLL_EXTENSION
from tests.a2a.conftest import text, user_message
from tests.support.bindings import V1, Outcome

RPC = "/a2a/jsonrpc"
UNKNOWN_EXTENSION = "https://example.com/ext/unknown/v1"
ASKED = f"{UNKNOWN_EXTENSION}, {IDEMPOTENCY_EXTENSION},{LONG_POLL_EXTENSION}"


def rpc_body(method: str, params: dict[str, Any], rpc_id: Any = 1) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params})


def waiting_task(client: Any) -> str:
    body = rpc_body("SendMessage", {"message": user_message(text(""))})
    task_id: str = client.post(RPC, data=body, content_type="application/json", headers=V1).get_json()[
        "result"
    ]["task"]["id"]
    return task_id


# --- A2A-Extensions --------------------------------------------------------------------------------------


def test_activated_extensions_are_echoed_on_every_binding(client: Any) -> None:
    task_id = waiting_task(client)
    asked = {**V1, "A2A-Extensions": ASKED}
    echoed = f"{IDEMPOTENCY_EXTENSION}, {LONG_POLL_EXTENSION}"  # the declared ones, in the order asked
    answers = {
        # The lean path (a plain 1.0 call) and the Flask endpoint (a stream) alike.
        "jsonrpc": client.post(RPC, data=rpc_body("GetTask", {"id": task_id}), content_type="application/json",
                               headers=asked),
        "jsonrpc error": client.post(RPC, data=rpc_body("GetTask", {"id": "nope"}),
                                     content_type="application/json", headers=asked),
        "jsonrpc stream": client.post(RPC, data=rpc_body("SendStreamingMessage", {"message": user_message(text("x"))}),
                                      content_type="application/json", headers=asked),
        "rest": client.get(f"/a2a/rest/tasks/{task_id}", headers=asked),
        "rest send": client.post("/a2a/rest/message:send", json={"message": user_message(text("x"))}, headers=asked),
    }  # fmt: skip
    for what, response in answers.items():
        assert response.headers.get("A2A-Extensions") == echoed, what
    v03 = client.post(
        RPC,
        data=rpc_body("tasks/get", {"id": task_id}),
        content_type="application/json",
        headers={"X-A2A-Extensions": IDEMPOTENCY_EXTENSION},
    )
    assert v03.headers.get("X-A2A-Extensions") == IDEMPOTENCY_EXTENSION
    # Nothing asked, or nothing declared asked: no header.
    plain = client.get(f"/a2a/rest/tasks/{task_id}", headers=V1)
    unknown = client.get(f"/a2a/rest/tasks/{task_id}", headers={**V1, "A2A-Extensions": UNKNOWN_EXTENSION})
    assert "A2A-Extensions" not in plain.headers and "A2A-Extensions" not in unknown.headers
    card = client.get("/.well-known/agent-card.json", headers={"A2A-Extensions": IDEMPOTENCY_EXTENSION})
    assert "A2A-Extensions" not in card.headers  # only binding calls activate anything


# --- the card -------------------------------------------------------------------------------------------

CARD = "/.well-known/agent-card.json"


def test_provider_comes_from_the_settings_and_is_omitted_when_unset() -> None:
    from tests.a2a.conftest import make_app

    plain = make_app().test_client().get(CARD, headers=V1).get_json()
    assert "provider" not in plain
    config = {"provider_organization": "Example Labs", "provider_url": "https://labs.example.com"}
    client = make_app(config=config).test_client()
    for headers in (V1, {}):  # the pure card and the superset one
        card = client.get(CARD, headers=headers).get_json()
        assert card["provider"] == {"organization": "Example Labs", "url": "https://labs.example.com"}


@pytest.mark.parametrize(
    "config",
    [{"provider_organization": "Example Labs"}, {"provider_url": "https://x.example"},
     {"provider_organization": "X", "provider_url": "ftp://x.example"}],
)  # fmt: skip
def test_provider_settings_need_both_and_a_web_url(config: dict[str, str]) -> None:
    from quineling.settings import ConfigError, load_settings

    with pytest.raises(ConfigError, match="QUINELING_PROVIDER"):
        load_settings(config, env={})


def test_every_skill_states_its_input_and_output_modes(client: Any) -> None:
    card = client.get(CARD, headers=V1).get_json()
    modes = {skill["id"]: (skill["inputModes"], skill["outputModes"]) for skill in card["skills"]}
    assert modes == {
        "build": (["application/json", "text/plain"], ["application/json", "text/plain"]),
        "ranch": (["application/json"], ["application/json", "text/plain"]),
        "execute": (["application/json"], ["application/json", "text/plain"]),
    }
    legacy = client.get(CARD).get_json()  # the superset card carries them in v0.3 form too (same names)
    assert [s["inputModes"] for s in legacy["skills"]] == [m[0] for m in modes.values()]


# --- acceptedOutputModes ---------------------------------------------------------------------------------

SQUARES = "[2,3,4] | square | sum | report total"


def send_accepting(binding: Any, modes: Any, method: str = "SendMessage", **fields: Any) -> Outcome:
    params = {
        "message": user_message(text(SQUARES), **fields),
        "configuration": {"acceptedOutputModes": modes},
    }
    return binding.call(method, params) if method == "SendMessage" else binding.stream(method, params)


def result_parts(outcome: Outcome) -> list[dict[str, Any]]:
    (artifact,) = outcome.value["task"]["artifacts"]
    parts: list[dict[str, Any]] = artifact["parts"]
    return parts


@pytest.mark.parametrize(
    ("modes", "kinds"),
    [
        (None, ["data"]),
        ([], ["data"]),
        (["text/plain"], ["text"]),
        (["TEXT/PLAIN; charset=utf-8"], ["text"]),
        (["text/*"], ["text"]),
        (["text/plain", "application/json"], ["data", "text"]),  # the JSON first, whatever the order asked
        (["*/*"], ["data"]),
        (["image/png", "application/json"], ["data"]),
    ],
)
def test_accepted_output_modes_choose_the_result_parts(binding: Any, modes: Any, kinds: list[str]) -> None:
    parts = result_parts(send_accepting(binding, modes))
    assert [next(k for k in ("data", "text") if k in part) for part in parts] == kinds
    for part in parts:
        assert part["mediaType"] == ("application/json" if "data" in part else "text/plain")
    if "text" in kinds:
        summary = next(p["text"] for p in parts if "text" in p)
        assert summary == "create: created (artifact.id: sha256:abc)"  # the fake runtime's result


def test_a_text_summary_streams_and_reaches_v03_clients(binding: Any, client: Any) -> None:
    events = list(send_accepting(binding, ["text/plain"], "SendStreamingMessage").value)
    (update,) = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert update["artifact"]["parts"] == [
        {"text": "create: created (artifact.id: sha256:abc)", "mediaType": "text/plain"}
    ]
    legacy = {
        "message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": SQUARES}]},
        "configuration": {"acceptedOutputModes": ["text/plain"]},
    }  # fmt: skip
    body = client.post(
        RPC, json={"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": legacy}
    ).get_json()
    assert body["result"]["artifacts"][0]["parts"] == [
        {"kind": "text", "text": "create: created (artifact.id: sha256:abc)"}
    ]


@pytest.mark.parametrize("modes", [["image/png"], ["application/xml", "audio/*"]])
def test_only_unproducible_output_modes_is_content_type_not_supported(
    binding: Any, client: Any, modes: list[str]
) -> None:
    outcome = send_accepting(binding, modes)
    assert outcome.error is errors.ContentTypeNotSupportedError
    if binding.name == "jsonrpc":
        assert outcome.raw["error"]["code"] == -32005
    else:
        assert outcome.raw["status"] == "INVALID_ARGUMENT" and outcome.raw["code"] == 400
    assert send_accepting(binding, modes, "SendStreamingMessage").error is errors.ContentTypeNotSupportedError
    listed = binding.call("ListTasks", {})
    assert listed.value["tasks"] == []  # refused before anything ran


def test_accepted_output_modes_must_be_strings(binding: Any) -> None:
    assert send_accepting(binding, "text/plain").error is errors.InvalidParamsError
    assert send_accepting(binding, [3]).error is errors.InvalidParamsError
