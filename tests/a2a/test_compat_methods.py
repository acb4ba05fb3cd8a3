"""``call_v03`` over a fake 1.0 service: params go in as 1.0, results come back as bare v0.3."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from quineling.a2a import errors
from quineling.a2a.compat_v03.methods import (
    V03_METHODS,
    V03_STREAM_METHODS,
    call_v03,
    is_stream_method,
    resubscribe_always_sse,
)
from quineling.a2a.context import CallContext

CTX = CallContext(requested_version="0.3")
TASK = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}
STATUS_DONE = {"taskId": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}}
CONFIG = {"taskId": "t-1", "id": "p-1", "url": "https://hook.test/a", "authentication": {"scheme": "Bearer"}}
CONFIG_V03 = {
    "taskId": "t-1",
    "pushNotificationConfig": {
        "id": "p-1",
        "url": "https://hook.test/a",
        "authentication": {"schemes": ["Bearer"]},
    },
}


class FakeService:
    """Records each 1.0 call and answers with canned 1.0 results."""

    def __init__(self, configs: list[dict[str, Any]] | None = None) -> None:
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []
        self.configs = [CONFIG] if configs is None else configs
        self.closed = False

    def _record(self, name: str, params: Any, **kwargs: Any) -> None:
        self.calls.append((name, params, kwargs))

    def _stream(self, events: list[Any]) -> Iterator[Any]:
        try:
            yield from events
        finally:
            self.closed = True

    def send_message(self, params: Any, ctx: CallContext) -> Any:
        self._record("send_message", params)
        return {"task": TASK}

    def send_message_stream(self, params: Any, ctx: CallContext) -> Iterator[Any]:
        self._record("send_message_stream", params)
        if not params["message"].get("parts"):
            raise errors.InvalidParamsError("message.parts is required")
        trailing = {"statusUpdate": {**STATUS_DONE, "status": {"state": "TASK_STATE_WORKING"}}}
        return self._stream([{"task": TASK}, None, {"statusUpdate": STATUS_DONE}, trailing])

    def get_task(self, params: Any, ctx: CallContext) -> Any:
        self._record("get_task", params)
        return TASK

    def cancel_task(self, params: Any, ctx: CallContext) -> Any:
        self._record("cancel_task", params)
        return {**TASK, "status": {"state": "TASK_STATE_CANCELED"}}

    def subscribe_to_task(self, params: Any, ctx: CallContext, **kwargs: Any) -> Iterator[Any]:
        self._record("subscribe_to_task", params, **kwargs)
        if params["id"] != "t-1":
            raise errors.TaskNotFoundError()
        return self._stream([{"task": TASK}, {"statusUpdate": STATUS_DONE}])

    def create_push_config(self, params: Any, ctx: CallContext) -> Any:
        self._record("create_push_config", params)
        return params

    def get_push_config(self, params: Any, ctx: CallContext) -> Any:
        self._record("get_push_config", params)
        return CONFIG

    def list_push_configs(self, params: Any, ctx: CallContext) -> Any:
        self._record("list_push_configs", params)
        return {"configs": self.configs}

    def delete_push_config(self, params: Any, ctx: CallContext) -> Any:
        self._record("delete_push_config", params)
        return None

    def get_extended_agent_card(self, params: Any, ctx: CallContext) -> Any:
        self._record("get_extended_agent_card", params)
        return {
            "name": "X",
            "description": "d",
            "version": "1",
            "supportedInterfaces": [
                {"url": "https://x/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
            ],
            "capabilities": {"extendedAgentCard": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        }


MESSAGE = {"kind": "message", "messageId": "m-1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}


def test_the_ten_methods() -> None:
    assert V03_METHODS == {
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
        "agent/getAuthenticatedExtendedCard",
    }
    assert V03_STREAM_METHODS == {"message/stream", "tasks/resubscribe"}
    assert [m for m in V03_METHODS if resubscribe_always_sse(m)] == ["tasks/resubscribe"]
    assert is_stream_method("message/stream") and not is_stream_method("message/send")


def test_message_send_translates_both_ways() -> None:
    service = FakeService()
    result = call_v03(
        service, "message/send", {"message": MESSAGE, "configuration": {"blocking": False}}, CTX
    )
    assert result == {"kind": "task", "id": "t-1", "contextId": "c-1", "status": {"state": "working"}}
    assert service.calls == [
        (
            "send_message",
            {
                "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                "configuration": {"returnImmediately": True},
            },
            {},
        )
    ]


def test_message_stream_is_lazy_stops_at_final_and_closes_the_source() -> None:
    service = FakeService()
    events = call_v03(service, "message/stream", {"message": MESSAGE}, CTX)
    assert isinstance(events, Iterator) and not service.closed
    got = list(events)
    assert [e and e["kind"] for e in got] == ["task", None, "status-update"]  # None = keep-alive marker
    assert got[-1]["final"] is True
    assert service.closed  # the trailing event after `final` is never read


def test_stream_errors_are_eager() -> None:
    with pytest.raises(errors.InvalidParamsError):
        call_v03(FakeService(), "message/stream", {"message": {**MESSAGE, "parts": []}}, CTX)
    with pytest.raises(errors.TaskNotFoundError):
        call_v03(FakeService(), "tasks/resubscribe", {"id": "nope"}, CTX)


def test_closing_the_v03_stream_closes_the_service_stream() -> None:
    service = FakeService()
    events = call_v03(service, "tasks/resubscribe", {"id": "t-1"}, CTX)
    assert next(events)["kind"] == "task"
    events.close()
    assert service.closed
    assert service.calls == [("subscribe_to_task", {"id": "t-1"}, {"keepalive": True})]


def test_tasks_get_and_cancel() -> None:
    service = FakeService()
    assert (
        call_v03(service, "tasks/get", {"id": "t-1", "historyLength": 2, "metadata": {}}, CTX)["kind"]
        == "task"
    )
    cancelled = call_v03(service, "tasks/cancel", {"id": "t-1", "metadata": {"why": "x"}}, CTX)
    assert cancelled["status"] == {"state": "canceled"}
    assert [c[:2] for c in service.calls] == [
        ("get_task", {"id": "t-1", "historyLength": 2}),
        ("cancel_task", {"id": "t-1", "metadata": {"why": "x"}}),
    ]


def test_push_config_methods() -> None:
    service = FakeService()
    assert call_v03(service, "tasks/pushNotificationConfig/set", CONFIG_V03, CTX) == CONFIG_V03
    got = call_v03(
        service, "tasks/pushNotificationConfig/get", {"id": "t-1", "pushNotificationConfigId": "p-1"}, CTX
    )
    assert got == CONFIG_V03
    assert call_v03(service, "tasks/pushNotificationConfig/list", {"id": "t-1"}, CTX) == [CONFIG_V03]
    assert (
        call_v03(
            service,
            "tasks/pushNotificationConfig/delete",
            {"id": "t-1", "pushNotificationConfigId": "p-1"},
            CTX,
        )
        is None
    )
    assert [c[:2] for c in service.calls] == [
        ("create_push_config", CONFIG),
        ("get_push_config", {"taskId": "t-1", "id": "p-1"}),
        ("list_push_configs", {"taskId": "t-1"}),
        ("delete_push_config", {"taskId": "t-1", "id": "p-1"}),
    ]


def test_push_get_without_config_id_answers_with_the_first_config() -> None:
    service = FakeService()
    assert call_v03(service, "tasks/pushNotificationConfig/get", {"id": "t-1"}, CTX) == CONFIG_V03
    with pytest.raises(errors.TaskNotFoundError):
        call_v03(FakeService(configs=[]), "tasks/pushNotificationConfig/get", {"id": "t-1"}, CTX)


def test_extended_card_is_a_v03_card() -> None:
    card = call_v03(FakeService(), "agent/getAuthenticatedExtendedCard", None, CTX)
    assert card["url"] == "https://x/rpc" and card["supportsAuthenticatedExtendedCard"] is True
    assert "supportedInterfaces" not in card


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("tasks/get", None, "params.id"),
        ("tasks/get", {"id": ""}, "params.id"),
        ("tasks/get", {"id": 7}, "params.id"),
        ("tasks/cancel", [], "params must be an object"),
        ("tasks/resubscribe", {}, "params.id"),
        ("message/send", {}, "message must be an object"),
        ("message/send", {"message": {**MESSAGE, "role": "ROLE_USER"}}, "message.role"),
        ("message/send", {"message": MESSAGE, "configuration": {"blocking": 1}}, "configuration.blocking"),
        ("tasks/pushNotificationConfig/set", {"taskId": "t-1"}, "params.pushNotificationConfig"),
        ("tasks/pushNotificationConfig/set", {"pushNotificationConfig": {"url": "u"}}, "params.taskId"),
        ("tasks/pushNotificationConfig/delete", {"id": "t-1"}, "params.pushNotificationConfigId"),
        (
            "tasks/pushNotificationConfig/get",
            {"id": "t-1", "pushNotificationConfigId": 3},
            "params.pushNotificationConfigId",
        ),
    ],
)
def test_invalid_v03_params(method: str, params: Any, message: str) -> None:
    service = FakeService()
    with pytest.raises(errors.InvalidParamsError) as caught:
        call_v03(service, method, params, CTX)
    assert caught.value.message.startswith(message)
    assert service.calls == []  # rejected before the service is called


def test_unknown_method() -> None:
    with pytest.raises(errors.MethodNotFoundError):
        call_v03(FakeService(), "SendMessage", {}, CTX)
