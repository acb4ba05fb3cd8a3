"""Card parsing across generations, interface negotiation, the task state machine and v0.3 translation."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.client import CardError, ProtocolError, TaskState, TaskStateMachine, parse_card
from quineling.client.models import Task, parse_stream_response
from quineling.client.negotiation import candidates
from quineling.client.v03 import event_in, params_out

V1 = {
    "name": "one", "description": "d", "version": "2",
    "supportedInterfaces": [
        {"url": "https://a/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t"},
        {"url": "https://a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": "https://a/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": "https://a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
    ],
    "capabilities": {"streaming": True, "pushNotifications": False, "extendedAgentCard": True},
    "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
    "skills": [{"id": "build", "name": "Build", "description": "Builds lifeforms", "tags": ["create"]}],
    "someFutureField": {"x": 1},
}  # fmt: skip
V03 = {
    "name": "old", "description": "d", "version": "1", "protocolVersion": "0.3.0", "url": "/rpc",
    "preferredTransport": "JSONRPC", "additionalInterfaces": [{"url": "/rpc", "transport": "JSONRPC"},
                                                              {"url": "/rest", "transport": "HTTP+JSON"}],
    "capabilities": {"streaming": False}, "supportsAuthenticatedExtendedCard": True,
    "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"}},
    "skills": [{"id": "s", "name": "S", "description": "", "tags": ["x"]}],
}  # fmt: skip
LEGACY = {"name": "ancient", "url": "http://b/api", "version": "0.1", "capabilities": ["summarize", "translate"],
          "authentication": {"schemes": ["bearer"]}}  # fmt: skip


def test_a_1_0_card_keeps_its_interfaces_in_order_and_ignores_unknown_fields() -> None:
    card = parse_card(V1)
    assert card.generation == "1.0" and card.name == "one"
    assert [(i.protocol_binding, i.protocol_version, i.tenant) for i in card.interfaces] == [
        ("JSONRPC", "1.0", "t"), ("HTTP+JSON", "1.0", ""), ("JSONRPC", "0.3", ""), ("GRPC", "1.0", "")]  # fmt: skip
    assert card.streaming and not card.push_notifications and card.extended_card
    assert (
        card.security_schemes["bearer"].kind == "http" and card.security_schemes["bearer"].scheme == "bearer"
    )
    assert [s.id for s in card.find_skills("CREATE")] == ["build"] and card.find_skills("nope") == []
    assert card.raw["someFutureField"] == {"x": 1}


def test_a_v03_card_becomes_interfaces_resolved_against_its_url() -> None:
    card = parse_card(V03, source="https://old.example/.well-known/agent-card.json")
    assert card.generation == "0.3"
    assert [(i.url, i.protocol_binding, i.protocol_version) for i in card.interfaces] == [
        ("https://old.example/rpc", "JSONRPC", "0.3"), ("https://old.example/rest", "HTTP+JSON", "0.3")]  # fmt: skip
    assert card.extended_card and not card.streaming
    assert card.security_schemes["key"].location == "header" and card.security_schemes["key"].name == "X-Key"


def test_the_superset_card_is_read_as_1_0() -> None:
    card = parse_card({**V03, "supportedInterfaces": V1["supportedInterfaces"]})
    assert card.generation == "1.0" and card.interfaces[0].url == "https://a/rpc"


def test_an_older_card_with_a_capability_list_and_authentication() -> None:
    card = parse_card(LEGACY)
    assert card.generation == "legacy"
    assert [(i.url, i.protocol_binding, i.protocol_version) for i in card.interfaces] == [
        ("http://b/api", "JSONRPC", "0.3")
    ]
    assert [s.id for s in card.skills] == ["summarize", "translate"] and not card.streaming
    assert card.security_schemes["bearer"].scheme == "bearer"


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ([1, 2], "not a JSON object"),
        ({"url": "http://x"}, "has no name"),
        ({"name": "  ", "url": "http://x"}, "has no name"),
        ({"name": "n", "capabilities": {}}, "declares no endpoint"),
        ({"name": "n", "supportedInterfaces": [{"protocolBinding": "JSONRPC"}]}, "declares no endpoint"),
    ],
)
def test_an_unusable_card_is_a_clear_error(raw: Any, match: str) -> None:
    with pytest.raises(CardError, match=match):
        parse_card(raw)


def test_negotiation_prefers_native_interfaces_and_the_callers_order() -> None:
    card = parse_card(V1)
    assert [(i.protocol_binding, i.protocol_version) for i in candidates(card)] == [
        ("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3")]  # fmt: skip
    assert candidates(card, ["HTTP+JSON"])[0].protocol_binding == "HTTP+JSON"
    assert [i.protocol_binding for i in candidates(card, ["http+json", "JSONRPC"])][:2] == [
        "HTTP+JSON",
        "JSONRPC",
    ]
    assert (
        candidates(card, ["GRPC-WEB"])[0].protocol_binding == "JSONRPC"
    )  # nothing matches: the card's order
    assert all(not i.legacy for i in candidates(card, allow_v03=False))


def test_v03_is_used_only_when_it_is_all_an_agent_offers() -> None:
    v03_first = {**V1, "supportedInterfaces": [V1["supportedInterfaces"][2], V1["supportedInterfaces"][1]]}
    assert candidates(parse_card(v03_first))[0].protocol_binding == "HTTP+JSON"
    only = parse_card(V03)
    assert [(i.protocol_binding, i.protocol_version) for i in candidates(only)] == [("JSONRPC", "0.3")]
    with pytest.raises(CardError, match="offers no interface this client speaks") as caught:
        candidates(only, allow_v03=False)
    assert "v0.3 was not allowed" in (caught.value.hint or "")
    with pytest.raises(CardError, match="GRPC 1.0"):
        candidates(parse_card({**V1, "supportedInterfaces": [V1["supportedInterfaces"][3]]}))


LEGAL = [
    (None, "TASK_STATE_COMPLETED"), ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
    ("TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"), ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING"),
    ("TASK_STATE_AUTH_REQUIRED", "TASK_STATE_CANCELED"), ("TASK_STATE_SUBMITTED", "TASK_STATE_REJECTED"),
    ("TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"), ("TASK_STATE_WORKING", "TASK_STATE_UNSPECIFIED"),
]  # fmt: skip
ILLEGAL = [
    ("TASK_STATE_COMPLETED", "TASK_STATE_WORKING"), ("TASK_STATE_FAILED", "TASK_STATE_COMPLETED"),
    ("TASK_STATE_CANCELED", "TASK_STATE_INPUT_REQUIRED"), ("TASK_STATE_REJECTED", "TASK_STATE_SUBMITTED"),
    ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new"), LEGAL)
def test_legal_transitions(old: str | None, new: str) -> None:
    TaskStateMachine("t", TaskState(old) if old else None).advance(TaskState(new))


@pytest.mark.parametrize(("old", "new"), ILLEGAL)
def test_illegal_transitions_name_both_states(old: str, new: str) -> None:
    with pytest.raises(ProtocolError, match=f"task t: {old} -> {new}"):
        TaskStateMachine("t", TaskState(old)).advance(TaskState(new))


def test_state_names_of_every_spelling() -> None:
    assert TaskState.parse("input-required") is TaskState.INPUT_REQUIRED
    assert TaskState.parse(3) is TaskState.COMPLETED and TaskState.parse(8) is TaskState.AUTH_REQUIRED
    assert TaskState.parse("bogus") is TaskState.UNSPECIFIED and TaskState.CANCELED.short == "canceled"


def test_v03_results_read_as_1_0_models() -> None:
    task = Task.parse(event_in({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "input-required"},
                                "artifacts": [{"artifactId": "a", "parts": [
                                    {"kind": "data", "data": {"value": [1]}, "metadata": {"data_part_compat": True}},
                                    {"kind": "file", "file": {"uri": "https://f", "mimeType": "text/csv"}}]}]})["task"])  # fmt: skip
    assert task.state is TaskState.INPUT_REQUIRED
    assert [(p.kind, p.value, p.media_type) for p in task.artifacts[0].parts] == [
        ("data", [1], ""),
        ("url", "https://f", "text/csv"),
    ]
    update = parse_stream_response(event_in({"kind": "status-update", "taskId": "t", "contextId": "c", "final": True,
                                             "status": {"state": "completed"}}))  # fmt: skip
    assert getattr(update, "state", None) is TaskState.COMPLETED


def test_v03_requests_carry_v03_shapes() -> None:
    out = params_out("SendMessage", {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}, {"data": 5}]},
                                     "configuration": {"returnImmediately": True}, "tenant": "x"})  # fmt: skip
    assert out == {"message": {"messageId": "m", "kind": "message", "role": "user", "parts": [
        {"kind": "text", "text": "hi"}, {"kind": "data", "data": {"value": 5}, "metadata": {"data_part_compat": True}}]},
        "configuration": {"blocking": False}}  # fmt: skip
    assert params_out("GetTaskPushNotificationConfig", {"taskId": "t", "id": "c"}) == {
        "id": "t",
        "pushNotificationConfigId": "c",
    }
