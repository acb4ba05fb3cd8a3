"""Request strategies for both bindings: the A2A 1.0 and v0.3 request objects, shaped closely enough to get past
the first checks and hostile anywhere (each field is sometimes any JSON at all, see :func:`maybe`).

Each ``*_params`` function builds its strategy once per method and target (:func:`once`): hypothesis draws
from it hundreds of times, and building it is the expensive part."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from quineling.a2a.compat_v03.methods import V03_METHODS
from quineling.a2a.rpc import METHODS
from quineling.a2a.wire import ROLES, TASK_STATES
from tests.adversarial.support import SPECIAL_STRINGS, json_trees, leaf_values, shaped

V1_METHODS = sorted(METHODS)
V03 = sorted(V03_METHODS)
FIELD_NAMES = (
    "message", "messageId", "message_id", "role", "parts", "contextId", "context_id", "taskId", "task_id",
    "metadata", "extensions", "referenceTaskIds", "configuration", "historyLength", "history_length",
    "returnImmediately", "acceptedOutputModes", "tenant", "id", "status", "pageSize", "page_size", "pageToken",
    "statusTimestampAfter", "includeArtifacts", "text", "raw", "url", "data", "mediaType", "filename", "kind",
    "file", "bytes", "uri", "name", "mimeType", "blocking", "pushNotificationConfig", "pushNotificationConfigId",
    "authentication", "schemes", "credentials", "token", "operation",
)  # fmt: skip


_BUILT: dict[tuple[Any, ...], st.SearchStrategy[Any]] = {}


def once(*key: Any) -> Any:
    """A decorator-free memo: ``once(name, method, id(corpus))(factory)`` builds the strategy the first time."""

    def build(factory: Any) -> st.SearchStrategy[Any]:
        if key not in _BUILT:
            _BUILT[key] = factory()
        return _BUILT[key]

    return build


def ids(known: list[str]) -> st.SearchStrategy[Any]:
    made_up = st.text(max_size=12) | st.sampled_from(SPECIAL_STRINGS)
    return st.sampled_from(known) | made_up if known else made_up


def enum_values(names: tuple[str, ...] | list[str]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(list(names)), st.integers(-2, len(names) + 1), st.sampled_from(["", "1"])
    )


def runtime_requests(corpus: dict[str, dict[str, Any]]) -> st.SearchStrategy[Any]:
    return st.sampled_from(sorted(corpus.values(), key=repr)) if corpus else json_trees()


def v1_part(corpus: dict[str, dict[str, Any]]) -> st.SearchStrategy[Any]:
    return st.one_of(
        shaped(
            {
                "data": runtime_requests(corpus),
                "mediaType": st.sampled_from(["application/json", "text/plain"]),
            }
        ),
        shaped({"text": st.sampled_from(["[2,3,4] | square | sum | report total", "[1] | sum", ""])}),
        shaped({"raw": st.sampled_from(["aGVsbG8=", "aGVsbG8", "!!", ""]), "filename": st.text(max_size=5)}),
        shaped({"url": st.text(max_size=10), "metadata": json_trees()}),
    )


def v1_message(known: list[str], corpus: dict[str, dict[str, Any]]) -> st.SearchStrategy[Any]:
    return shaped(
        {
            "messageId": ids(known),
            "role": enum_values(ROLES),
            "parts": st.lists(v1_part(corpus), max_size=2),
            "contextId": ids(known),
            "taskId": ids(known),
            "metadata": json_trees(),
            "extensions": st.lists(st.text(max_size=5), max_size=2),
            "referenceTaskIds": st.lists(ids(known), max_size=2),
        },
        keys=FIELD_NAMES,
    )


def v1_params(method: str, known: list[str], corpus: dict[str, dict[str, Any]]) -> st.SearchStrategy[Any]:
    """Params for a 1.0 method (or for a method name that is none: anything)."""
    return once("v1", method, id(known), id(corpus))(lambda: _v1_params(method, known, corpus))


def _v1_params(method: str, known: list[str], corpus: dict[str, dict[str, Any]]) -> st.SearchStrategy[Any]:
    tenant = st.sampled_from(["", "t1", "default"]) | st.text(max_size=4)
    if method in ("SendMessage", "SendStreamingMessage"):
        configuration = shaped(
            {
                "historyLength": st.integers(-2, 2000),
                "returnImmediately": st.booleans(),
                "acceptedOutputModes": st.lists(st.text(max_size=5), max_size=2),
            }
        )
        return shaped(
            {
                "message": v1_message(known, corpus),
                "configuration": configuration,
                "metadata": json_trees(),
                "tenant": tenant,
            }
        )
    if method == "ListTasks":
        return shaped(
            {
                "contextId": ids(known),
                "status": enum_values(TASK_STATES),
                "pageSize": st.integers(-1, 200) | st.sampled_from(["5", "1e1"]),
                "pageToken": st.text(max_size=20),
                "historyLength": st.integers(-1, 5),
                "statusTimestampAfter": st.sampled_from(SPECIAL_STRINGS)
                | st.datetimes().map(lambda d: d.isoformat() + "Z"),
                "includeArtifacts": st.booleans() | st.sampled_from(["true", "no"]),
                "tenant": tenant,
            }
        )
    if method in ("GetTask", "CancelTask", "SubscribeToTask"):
        return shaped(
            {
                "id": ids(known),
                "historyLength": st.integers(-1, 5),
                "metadata": json_trees(),
                "tenant": tenant,
            }
        )
    if "PushNotificationConfig" in method:
        return shaped({"taskId": ids(known), "id": ids(known), "url": st.text(max_size=8), "tenant": tenant})
    return json_trees()


def v03_part(corpus: dict[str, dict[str, Any]]) -> st.SearchStrategy[Any]:
    return st.one_of(
        shaped({"kind": st.just("data"), "data": runtime_requests(corpus), "metadata": json_trees()}),
        shaped(
            {"kind": st.just("text"), "text": st.sampled_from(["[2,3,4] | square | sum | report total", ""])}
        ),
        shaped(
            {
                "kind": st.just("file"),
                "file": shaped(
                    {"bytes": st.sampled_from(["aGk=", "!"]), "uri": st.text(max_size=5), "name": leaf_values}
                ),
            }
        ),
    )


def v03_params(method: str, known: list[str], corpus: dict[str, dict[str, Any]]) -> st.SearchStrategy[Any]:
    return once("v03", method, id(known), id(corpus))(lambda: _v03_params(method, known, corpus))


def _v03_params(method: str, known: list[str], corpus: dict[str, dict[str, Any]]) -> st.SearchStrategy[Any]:
    if method in ("message/send", "message/stream"):
        message = shaped(
            {
                "kind": st.sampled_from(["message", "task"]),
                "messageId": ids(known),
                "role": st.sampled_from(["user", "agent", "ROLE_USER"]) | leaf_values,
                "parts": st.lists(v03_part(corpus), max_size=2),
                "contextId": ids(known),
                "taskId": ids(known),
                "metadata": json_trees(),
            },
            keys=FIELD_NAMES,
        )
        push = shaped(
            {
                "url": st.text(max_size=5),
                "authentication": shaped({"schemes": st.lists(leaf_values, max_size=2)}),
            }
        )
        configuration = shaped(
            {"blocking": st.booleans(), "historyLength": st.integers(-1, 3), "pushNotificationConfig": push}
        )
        return shaped({"message": message, "configuration": configuration, "metadata": json_trees()})
    if method.startswith("tasks/pushNotificationConfig"):
        return shaped(
            {
                "id": ids(known),
                "taskId": ids(known),
                "pushNotificationConfigId": ids(known),
                "pushNotificationConfig": json_trees(),
            }
        )
    return shaped(
        {"id": ids(known), "historyLength": st.integers(-1, 3) | leaf_values, "metadata": json_trees()}
    )
