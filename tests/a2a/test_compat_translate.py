"""Unit tests of the v0.3 ⇄ 1.0 translators and the v0.3 card (docs/compat-v03.md)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quineling.a2a import errors
from quineling.a2a.compat_v03.card import card_to_v03
from quineling.a2a.compat_v03.params import (
    push_config_to_v03,
    push_config_to_v1,
    send_config_to_v1,
    send_params_to_v1,
    task_push_config_to_v03,
    task_push_config_to_v1,
)
from quineling.a2a.compat_v03.translate import (
    DATA_PART_COMPAT,
    artifact_update_to_v03,
    error_to_v03,
    message_to_v03,
    message_to_v1,
    part_to_v03,
    part_to_v1,
    role_to_v03,
    role_to_v1,
    state_to_v03,
    status_update_to_v03,
    stream_response_to_v03,
    task_to_v03,
)
from quineling.a2a.versions import speaks_v03

STATES = [
    ("submitted", "TASK_STATE_SUBMITTED"),
    ("working", "TASK_STATE_WORKING"),
    ("input-required", "TASK_STATE_INPUT_REQUIRED"),
    ("completed", "TASK_STATE_COMPLETED"),
    ("canceled", "TASK_STATE_CANCELED"),
    ("failed", "TASK_STATE_FAILED"),
    ("rejected", "TASK_STATE_REJECTED"),
    ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
    ("unknown", "TASK_STATE_UNSPECIFIED"),
]
TERMINAL = {"completed", "canceled", "failed", "rejected"}

# --- fixtures: a Quineling-shaped 1.0 task and its v0.3 twin -------------------------------------------

USER_V1 = {
    "messageId": "m-1",
    "contextId": "c-1",
    "taskId": "t-1",
    "role": "ROLE_USER",
    "parts": [{"text": "[2,3,4] | square | sum | report total"}],
}
USER_V03 = {
    "kind": "message",
    "messageId": "m-1",
    "role": "user",
    "parts": [{"kind": "text", "text": "[2,3,4] | square | sum | report total"}],
    "contextId": "c-1",
    "taskId": "t-1",
}
RESULT = {"operation": "create", "result": {"artifactId": "a-9", "status": "ok"}}
TASK_V1 = {
    "id": "t-1",
    "contextId": "c-1",
    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00.000Z"},
    "artifacts": [{"artifactId": "quineling-result", "name": "result", "parts": [{"data": RESULT}]}],
    "history": [USER_V1],
}
TASK_V03 = {
    "kind": "task",
    "id": "t-1",
    "contextId": "c-1",
    "status": {"state": "completed", "timestamp": "2026-01-01T00:00:00.000Z"},
    "artifacts": [
        {"artifactId": "quineling-result", "parts": [{"kind": "data", "data": RESULT}], "name": "result"}
    ],
    "history": [USER_V03],
}
QUINELING_ERROR = {"code": "invalid-intent", "message": "unknown word", "path": "thought"}
FAILED_V1 = {
    "id": "t-2",
    "contextId": "c-1",
    "status": {
        "state": "TASK_STATE_FAILED",
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {
            "messageId": "m-3",
            "role": "ROLE_AGENT",
            "contextId": "c-1",
            "taskId": "t-2",
            "parts": [{"text": "unknown word"}],
            "metadata": {"quinelingError": QUINELING_ERROR},
        },
    },
}
FAILED_V03 = {
    "kind": "task",
    "id": "t-2",
    "contextId": "c-1",
    "status": {
        "state": "failed",
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {
            "kind": "message",
            "messageId": "m-3",
            "role": "agent",
            "parts": [{"kind": "text", "text": "unknown word"}],
            "contextId": "c-1",
            "taskId": "t-2",
            "metadata": {"quinelingError": QUINELING_ERROR},
        },
    },
}


# --- enums ---------------------------------------------------------------------------------------------


def test_roles_both_ways() -> None:
    assert role_to_v1("user") == "ROLE_USER"
    assert role_to_v1("agent") == "ROLE_AGENT"
    assert role_to_v03("ROLE_USER") == "user"
    assert role_to_v03("ROLE_AGENT") == "agent"
    assert role_to_v03(1) == "user"


def test_unmapped_1_0_role_becomes_agent() -> None:
    """Anything but ROLE_USER is the agent for a v0.3 client."""
    assert role_to_v03("ROLE_UNSPECIFIED") == "agent"
    assert role_to_v03(None) == "agent"


@pytest.mark.parametrize("role", ["ROLE_USER", "system", "", 1, None])
def test_invalid_v03_role_is_invalid_params(role: Any) -> None:
    with pytest.raises(errors.InvalidParamsError, match="role"):
        role_to_v1(role)


@pytest.mark.parametrize(("v03", "v1"), STATES)
def test_states_to_v03(v03: str, v1: str) -> None:
    assert state_to_v03(v1) == v03


def test_state_numbers_and_unmapped_states() -> None:
    assert state_to_v03(3) == "completed"
    assert state_to_v03(8) == "auth-required"
    assert state_to_v03("TASK_STATE_BOGUS") == "unknown"
    assert state_to_v03(None) == "unknown"


# --- parts ---------------------------------------------------------------------------------------------

PART_PAIRS = [
    ({"kind": "text", "text": "hi"}, {"text": "hi"}),
    ({"kind": "text", "text": "hi", "metadata": {"k": 1}}, {"text": "hi", "metadata": {"k": 1}}),
    (
        {"kind": "file", "file": {"bytes": "aGk=", "name": "a.png", "mimeType": "image/png"}},
        {"raw": "aGk=", "filename": "a.png", "mediaType": "image/png"},
    ),
    (
        {"kind": "file", "file": {"uri": "https://x.test/d.pdf", "mimeType": "application/pdf"}},
        {"url": "https://x.test/d.pdf", "mediaType": "application/pdf"},
    ),
    ({"kind": "file", "file": {"uri": "https://x.test/d"}}, {"url": "https://x.test/d"}),
    ({"kind": "data", "data": {"operation": "run"}}, {"data": {"operation": "run"}}),
]


@pytest.mark.parametrize(("v03", "v1"), PART_PAIRS)
def test_parts_both_ways(v03: dict[str, Any], v1: dict[str, Any]) -> None:
    assert part_to_v1(v03) == v1
    assert part_to_v03(v1) == v03


def test_empty_filename_and_media_type_are_dropped() -> None:
    assert part_to_v03({"raw": "aGk=", "filename": "", "mediaType": ""}) == {
        "kind": "file",
        "file": {"bytes": "aGk="},
    }
    assert part_to_v1({"kind": "file", "file": {"uri": "u", "name": "", "mimeType": ""}}) == {"url": "u"}


def test_text_and_data_media_types_have_no_v03_home() -> None:
    assert part_to_v03({"text": "x", "mediaType": "text/plain"}) == {"kind": "text", "text": "x"}
    assert part_to_v03({"data": {"a": 1}, "mediaType": "application/json"}) == {
        "kind": "data",
        "data": {"a": 1},
    }


@pytest.mark.parametrize("value", ["s", 42, 1.5, True, False, None, [1, {"a": 2}], []])
def test_non_object_data_is_wrapped_with_the_compat_flag(value: Any) -> None:
    """data_part_compat: v0.3 data must be an object, so other JSON values go in {"value": …}."""
    v03 = part_to_v03({"data": value, "metadata": {"keep": "me"}})
    assert v03 == {
        "kind": "data",
        "data": {"value": value},
        "metadata": {"keep": "me", DATA_PART_COMPAT: True},
    }
    assert part_to_v1(v03) == {"data": value, "metadata": {"keep": "me"}}


def test_compat_flag_alone_leaves_no_metadata_after_unwrapping() -> None:
    v03 = part_to_v03({"data": [1, 2]})
    assert v03["metadata"] == {DATA_PART_COMPAT: True}
    assert part_to_v1(v03) == {"data": [1, 2]}


@pytest.mark.parametrize(
    "part",
    [
        {"kind": "data", "data": {"value": 1}, "metadata": {DATA_PART_COMPAT: False}},
        {"kind": "data", "data": {"value": 1}, "metadata": {DATA_PART_COMPAT: "true"}},
        {"kind": "data", "data": {"other": 1}, "metadata": {DATA_PART_COMPAT: True}},
        {"kind": "data", "data": {"value": 1}},
    ],
)
def test_data_is_only_unwrapped_when_flag_is_true_and_value_present(part: dict[str, Any]) -> None:
    assert part_to_v1(part)["data"] == part["data"]


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=8,
    )
)
def test_any_json_data_survives_a_round_trip(value: Any) -> None:
    if value is None:
        return  # a 1.0 null data value reads as an absent member
    assert part_to_v1(part_to_v03({"data": value})) == {"data": value}


def test_part_kind_is_inferred_when_missing() -> None:
    assert part_to_v1({"text": "hi"}) == {"text": "hi"}
    assert part_to_v1({"data": {"a": 1}}) == {"data": {"a": 1}}


@pytest.mark.parametrize(
    ("part", "where"),
    [
        ("text", "part"),
        ({"kind": "image"}, "part.kind"),
        ({"kind": "text", "text": 5}, "part.text"),
        ({"kind": "file", "file": {"bytes": "aGk=", "uri": "u"}}, "part.file"),
        ({"kind": "file", "file": {}}, "part.file"),
        ({"kind": "file"}, "part.file"),
        ({"kind": "data"}, "part.data"),
        ({"kind": "text", "text": "x", "metadata": [1]}, "part.metadata"),
    ],
)
def test_untranslatable_parts_are_invalid_params(part: Any, where: str) -> None:
    with pytest.raises(errors.InvalidParamsError) as caught:
        part_to_v1(part)
    assert caught.value.message.startswith(where)


def test_translators_do_not_mutate_or_alias_their_input() -> None:
    original = copy.deepcopy(TASK_V1)
    v03 = task_to_v03(TASK_V1)
    v03["artifacts"][0]["parts"][0]["data"]["operation"] = "changed"
    assert TASK_V1 == original
    part = {"kind": "data", "data": {"value": 1}, "metadata": {DATA_PART_COMPAT: True}}
    part_to_v1(part)
    assert part["metadata"] == {DATA_PART_COMPAT: True}


# --- messages and tasks --------------------------------------------------------------------------------


def test_message_both_ways() -> None:
    assert message_to_v1(USER_V03) == USER_V1
    assert message_to_v03(USER_V1) == USER_V03


def test_message_optional_lists_and_metadata() -> None:
    v1 = {**USER_V1, "metadata": {"a": 1}, "extensions": ["urn:x"], "referenceTaskIds": ["t-0"]}
    v03 = message_to_v03(v1)
    assert (
        v03["metadata"] == {"a": 1} and v03["extensions"] == ["urn:x"] and v03["referenceTaskIds"] == ["t-0"]
    )
    assert message_to_v1(v03) == v1
    assert "extensions" not in message_to_v03({**USER_V1, "extensions": []})


def test_message_leaves_1_0_required_field_checks_to_the_service() -> None:
    """A missing messageId/role/parts passes through absent, so v0.3 gets the 1.0 service's verdict."""
    assert message_to_v1({"kind": "message"}) == {}


@pytest.mark.parametrize(
    ("message", "where"),
    [
        (None, "message"),
        ({"kind": "task"}, "message.kind"),
        ({"role": "ROLE_USER"}, "message.role"),
        ({"parts": {"kind": "text"}}, "message.parts"),
        ({"parts": [{"kind": "text", "text": "ok"}, {"kind": "bogus"}]}, "message.parts[1].kind"),
    ],
)
def test_bad_v03_messages_are_invalid_params(message: Any, where: str) -> None:
    with pytest.raises(errors.InvalidParamsError) as caught:
        message_to_v1(message)
    assert caught.value.message.startswith(where)


def test_task_to_v03() -> None:
    assert task_to_v03(TASK_V1) == TASK_V03


def test_empty_history_and_artifacts_are_omitted() -> None:
    v03 = task_to_v03({**TASK_V1, "history": [], "artifacts": []})
    assert "history" not in v03 and "artifacts" not in v03


def test_failed_task_keeps_its_quineling_error() -> None:
    assert task_to_v03(FAILED_V1) == FAILED_V03


# --- stream events -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("v03_state", "v1_state"), STATES)
def test_status_update_final_flag(v03_state: str, v1_state: str) -> None:
    """final is true exactly for the terminal states (false for input-/auth-required)."""
    v1 = {"taskId": "t-1", "contextId": "c-1", "status": {"state": v1_state}}
    v03 = status_update_to_v03(v1)
    assert v03 == {
        "kind": "status-update",
        "taskId": "t-1",
        "contextId": "c-1",
        "status": {"state": v03_state},
        "final": v03_state in TERMINAL,
    }


def test_artifact_update_to_v03() -> None:
    v1 = {
        "taskId": "t-1",
        "contextId": "c-1",
        "artifact": {"artifactId": "quineling-result", "parts": [{"data": RESULT}]},
        "append": False,
        "lastChunk": True,
        "metadata": {"x": 1},
    }
    v03 = artifact_update_to_v03(v1)
    assert v03 == {
        "kind": "artifact-update",
        "taskId": "t-1",
        "contextId": "c-1",
        "artifact": {"artifactId": "quineling-result", "parts": [{"kind": "data", "data": RESULT}]},
        "append": False,
        "lastChunk": True,
        "metadata": {"x": 1},
    }
    assert "append" not in artifact_update_to_v03({**v1, "append": None})


STATUS_WORKING_V1 = {"taskId": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}
ARTIFACT_X_V1 = {
    "taskId": "t-1",
    "contextId": "c-1",
    "artifact": {"artifactId": "a", "parts": [{"text": "x"}]},
}


@pytest.mark.parametrize(
    ("response", "v03"),
    [
        ({"task": TASK_V1}, TASK_V03),
        ({"message": USER_V1}, USER_V03),
        (
            {"statusUpdate": STATUS_WORKING_V1},
            {
                "kind": "status-update",
                "taskId": "t-1",
                "contextId": "c-1",
                "status": {"state": "working"},
                "final": False,
            },
        ),
        (
            {"artifactUpdate": ARTIFACT_X_V1},
            {
                "kind": "artifact-update",
                "taskId": "t-1",
                "contextId": "c-1",
                "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "x"}]},
            },
        ),
    ],
    ids=["task", "message", "statusUpdate", "artifactUpdate"],
)
def test_stream_response_to_v03_unwraps(response: dict[str, Any], v03: dict[str, Any]) -> None:
    assert stream_response_to_v03(response) == v03


def test_empty_stream_response_has_no_v03_form() -> None:
    with pytest.raises(errors.InternalError):
        stream_response_to_v03({})
    with pytest.raises(errors.InternalError):
        stream_response_to_v03({"task": None})


# --- send configuration and push configs ---------------------------------------------------------------


def test_send_config_blocking_absent_means_blocking() -> None:
    """An absent `blocking` waits (v0.3 SDKs), unlike JS compat which returns immediately."""
    assert send_config_to_v1({}) == {"returnImmediately": False}
    assert send_config_to_v1({"blocking": True}) == {"returnImmediately": False}
    assert send_config_to_v1({"blocking": False}) == {"returnImmediately": True}


def test_send_config_to_v1() -> None:
    v03 = {
        "acceptedOutputModes": ["application/json"],
        "historyLength": 2,
        "pushNotificationConfig": {"url": "https://hook.test/a", "token": "tok"},
        "blocking": False,
    }
    v1 = {
        "acceptedOutputModes": ["application/json"],
        "historyLength": 2,
        "taskPushNotificationConfig": {"url": "https://hook.test/a", "token": "tok"},
        "returnImmediately": True,
    }
    assert send_config_to_v1(v03) == v1
    with pytest.raises(errors.InvalidParamsError, match="configuration.blocking"):
        send_config_to_v1({"blocking": "yes"})


def test_send_params_to_v1() -> None:
    v03 = {"message": USER_V03, "configuration": {"blocking": True}, "metadata": {"trace": "1"}}
    v1 = {"message": USER_V1, "configuration": {"returnImmediately": False}, "metadata": {"trace": "1"}}
    assert send_params_to_v1(v03) == v1
    assert send_params_to_v1({"message": USER_V03}) == {"message": USER_V1}  # no config ⇒ 1.0 default
    with pytest.raises(errors.InvalidParamsError, match="^message must be an object"):
        send_params_to_v1({})


def test_push_config_flatten_and_nest() -> None:
    v03 = {
        "taskId": "t-1",
        "pushNotificationConfig": {
            "id": "p-1",
            "url": "https://hook.test/a",
            "token": "tok",
            "authentication": {"schemes": ["Bearer"], "credentials": "secret"},
        },
    }
    v1 = {
        "taskId": "t-1",
        "id": "p-1",
        "url": "https://hook.test/a",
        "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "secret"},
    }
    assert task_push_config_to_v1(v03) == v1
    assert task_push_config_to_v03(v1) == v03
    assert task_push_config_to_v03({**v1, "tenant": "acme"}) == v03  # v0.3 has no tenant


def test_push_config_keeps_only_the_first_scheme() -> None:
    config = push_config_to_v1({"url": "u", "authentication": {"schemes": ["Bearer", "Basic"]}})
    assert config == {"url": "u", "authentication": {"scheme": "Bearer"}}
    assert push_config_to_v03(config) == {"url": "u", "authentication": {"schemes": ["Bearer"]}}


@pytest.mark.parametrize(
    "config",
    [
        None,
        {"url": "u", "authentication": {"schemes": []}},
        {"url": "u", "authentication": {}},
        {"url": "u", "authentication": 1},
    ],
)
def test_bad_push_configs_are_invalid_params(config: Any) -> None:
    with pytest.raises(errors.InvalidParamsError, match="pushNotificationConfig"):
        push_config_to_v1(config)


# --- errors --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", errors.ALL_ERRORS, ids=lambda c: c.__name__)
def test_errors_are_code_and_message_only(cls: type[errors.A2AError]) -> None:
    rendered = error_to_v03(cls("boom"))
    assert set(rendered) == {"code", "message"}
    assert rendered["code"] == cls.code
    if cls.code != -32007:
        assert rendered["message"] == "boom"
    assert error_to_v03(cls())["message"]


def test_extended_card_error_uses_the_v03_name() -> None:
    rendered = error_to_v03(errors.ExtendedAgentCardNotConfiguredError())
    assert rendered == {"code": -32007, "message": "Authenticated Extended Card not configured"}


# --- agent card ----------------------------------------------------------------------------------------

BASE = "http://127.0.0.1:8049"
CARD_V1 = {
    "name": "Quineling",
    "description": "Turns thoughts into programs.",
    "version": "0.0.0-experimental",
    "supportedInterfaces": [
        {"url": BASE + "/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": BASE + "/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": BASE + "/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ],
    "capabilities": {"streaming": True, "pushNotifications": False, "extendedAgentCard": False},
    "defaultInputModes": ["application/json", "text/plain"],
    "defaultOutputModes": ["application/json"],
    "skills": [
        {"id": "build", "name": "Build", "description": "Build things.", "tags": ["build"], "examples": ["x"]}
    ],
}
CARD_V03 = {
    "protocolVersion": "0.3",
    "name": "Quineling",
    "description": "Turns thoughts into programs.",
    "url": BASE + "/a2a/jsonrpc",
    "preferredTransport": "JSONRPC",
    "version": "0.0.0-experimental",
    "capabilities": {"streaming": True, "pushNotifications": False},
    "defaultInputModes": ["application/json", "text/plain"],
    "defaultOutputModes": ["application/json"],
    "skills": [
        {"id": "build", "name": "Build", "description": "Build things.", "tags": ["build"], "examples": ["x"]}
    ],
    "supportsAuthenticatedExtendedCard": False,
}


def test_card_offers_only_the_legacy_interface() -> None:
    assert card_to_v03(CARD_V1, superset=False) == CARD_V03


def test_superset_card_embeds_every_1_0_interface() -> None:
    superset = card_to_v03(CARD_V1, superset=True)
    assert superset == {**CARD_V03, "supportedInterfaces": CARD_V1["supportedInterfaces"]}
    assert superset["supportedInterfaces"] is not CARD_V1["supportedInterfaces"]


def test_card_without_a_legacy_interface_is_version_not_supported() -> None:
    card = {**CARD_V1, "supportedInterfaces": CARD_V1["supportedInterfaces"][:2]}
    with pytest.raises(errors.VersionNotSupportedError):
        card_to_v03(card, superset=True)


def test_card_primary_and_additional_interfaces() -> None:
    card = {
        **CARD_V1,
        "supportedInterfaces": [
            {"url": "https://a/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "https://a/v1", "protocolBinding": "HTTP+JSON"},  # no version ⇒ legacy
            {"url": "https://a/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.2"},
        ],
    }
    v03 = card_to_v03(card, superset=False)
    assert (v03["url"], v03["preferredTransport"], v03["protocolVersion"]) == (
        "https://a/v1",
        "HTTP+JSON",
        "0.3",
    )
    assert v03["additionalInterfaces"] == [{"url": "https://a/rpc", "transport": "JSONRPC"}]


@pytest.mark.parametrize(
    ("version", "legacy"),
    [
        (None, True),
        ("", True),
        ("0.3", True),
        ("0.3.0", True),
        ("0.9", True),
        ("0.2", False),
        ("1.0", False),
        ("x", False),
    ],
)
def test_legacy_version_range(version: Any, legacy: bool) -> None:
    assert speaks_v03(version) is legacy


def test_card_security_translation() -> None:
    card = {
        **CARD_V1,
        "capabilities": {
            "streaming": True,
            "extendedAgentCard": True,
            "extensions": [{"uri": "urn:x", "required": False}],
        },
        "provider": {"url": "https://q.test", "organization": "Q"},
        "securitySchemes": {
            "bearer": {
                "httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT", "description": "d"}
            },
            "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}},
            "oidc": {
                "openIdConnectSecurityScheme": {"openIdConnectUrl": "https://q.test/.well-known/openid"}
            },
            "mtls": {"mtlsSecurityScheme": {}},
            "oauth": {
                "oauth2SecurityScheme": {
                    "flows": {
                        "authorizationCode": {
                            "authorizationUrl": "https://q.test/auth",
                            "tokenUrl": "https://q.test/token",
                            "scopes": {"read": "Read"},
                            "pkceRequired": True,
                        }
                    },
                    "oauth2MetadataUrl": "https://q.test/meta",
                }
            },
            "device": {
                "oauth2SecurityScheme": {
                    "flows": {"deviceCode": {"deviceAuthorizationUrl": "d", "tokenUrl": "t", "scopes": {}}}
                }
            },
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}, "oauth": {"list": ["read"]}}}],
        "skills": [{**CARD_V1["skills"][0], "securityRequirements": [{"schemes": {"key": {"list": ["a"]}}}]}],
    }
    v03 = card_to_v03(card, superset=False)
    assert v03["securitySchemes"] == {
        "bearer": {"type": "http", "scheme": "Bearer", "bearerFormat": "JWT", "description": "d"},
        "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
        "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://q.test/.well-known/openid"},
        "mtls": {"type": "mutualTLS"},
        "oauth": {
            "type": "oauth2",
            "flows": {
                "authorizationCode": {
                    "authorizationUrl": "https://q.test/auth",
                    "tokenUrl": "https://q.test/token",
                    "scopes": {"read": "Read"},
                }
            },
            "oauth2MetadataUrl": "https://q.test/meta",
        },
        "device": {"type": "oauth2", "flows": {}},  # deviceCode has no v0.3 form
    }
    assert v03["security"] == [{"bearer": [], "oauth": ["read"]}]
    assert v03["skills"][0]["security"] == [{"key": ["a"]}]
    assert v03["supportsAuthenticatedExtendedCard"] is True
    assert v03["capabilities"] == {"streaming": True, "extensions": [{"uri": "urn:x", "required": False}]}
    assert v03["provider"] == {"url": "https://q.test", "organization": "Q"}


# --- no model mixing -----------------------------------------------------------------------------------

V1_ONLY_KEYS = {
    "mediaType", "filename", "raw", "statusUpdate", "artifactUpdate", "supportedInterfaces", "returnImmediately",
    "taskPushNotificationConfig", "securityRequirements", "protocolBinding", "extendedAgentCard",
}  # fmt: skip
V03_ONLY_KEYS = {
    "kind",
    "final",
    "file",
    "bytes",
    "uri",
    "mimeType",
    "blocking",
    "pushNotificationConfig",
    "schemes",
}


def _walk(value: Any, path: str = "$") -> list[tuple[str, str, Any]]:
    """(path, key, value) for every member of every object inside ``value``."""
    found: list[tuple[str, str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((path, key, item))
            found.extend(_walk(item, f"{path}.{key}"))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_walk(item, f"{path}[{i}]"))
    return found


def _v1_leaks(value: Any) -> list[str]:
    leaks = [f"{p}.{k}" for p, k, _ in _walk(value) if k in V1_ONLY_KEYS]
    leaks += [
        f"{p}.{k}={v}"
        for p, k, v in _walk(value)
        if isinstance(v, str) and v.startswith(("ROLE_", "TASK_STATE_"))
    ]
    return leaks


def _v03_leaks(value: Any) -> list[str]:
    leaks = [f"{p}.{k}" for p, k, _ in _walk(value) if k in V03_ONLY_KEYS | {DATA_PART_COMPAT}]
    lower = {v03 for v03, _ in STATES} | {"user", "agent"}
    return leaks + [f"{p}.{k}={v}" for p, k, v in _walk(value) if k in ("state", "role") and v in lower]


# A 1.0 message with every kind of part, including a non-object data value (wrapped for v0.3).
MIXED_V1 = {
    **USER_V1,
    "parts": [
        *USER_V1["parts"],
        {"raw": "aGk=", "filename": "a", "mediaType": "image/png"},
        {"url": "u", "mediaType": "text/html"},
        {"data": [1]},
        {"data": {"a": 1}, "mediaType": "application/json"},
    ],
}


def _v1_samples() -> list[Any]:
    """What the service sends a v0.3 client, translated from 1.0."""
    status = {"taskId": "t", "contextId": "c", "status": FAILED_V1["status"]}
    artifact = {"taskId": "t", "contextId": "c", "artifact": TASK_V1["artifacts"][0], "lastChunk": True}
    return [
        task_to_v03(TASK_V1),
        task_to_v03(FAILED_V1),
        message_to_v03(MIXED_V1),
        *(
            stream_response_to_v03(r)
            for r in ({"task": TASK_V1}, {"statusUpdate": status}, {"artifactUpdate": artifact})
        ),
        task_push_config_to_v03(
            {"taskId": "t", "id": "p", "url": "u", "authentication": {"scheme": "Bearer"}}
        ),
        card_to_v03({**CARD_V1, "securityRequirements": [{"schemes": {"b": {"list": []}}}]}, superset=False),
    ]


def test_leak_detectors_detect() -> None:
    assert _v1_leaks(TASK_V1) and _v1_leaks(CARD_V1)
    assert _v03_leaks(TASK_V03) and _v03_leaks(part_to_v03({"data": 1}))


def test_translated_v03_objects_carry_no_1_0_field() -> None:
    for sample in _v1_samples():
        assert _v1_leaks(sample) == [], sample


def test_superset_card_carries_1_0_fields_only_in_supported_interfaces() -> None:
    superset = card_to_v03(CARD_V1, superset=True)
    assert _v1_leaks({k: v for k, v in superset.items() if k != "supportedInterfaces"}) == []
    assert superset["supportedInterfaces"] == CARD_V1["supportedInterfaces"]


def test_translated_1_0_objects_carry_no_v03_field() -> None:
    """What a v0.3 client sends (message/send params, a push config), translated to 1.0."""
    send_params = {
        "message": message_to_v03(MIXED_V1),
        "configuration": {
            "blocking": False,
            "pushNotificationConfig": {"url": "u", "authentication": {"schemes": ["Bearer"]}},
        },
    }
    assert _v03_leaks(send_params)  # the sample holds every v0.3-only field the translation must drop
    translated = send_params_to_v1(send_params)
    assert _v03_leaks(translated) == [], translated
    push = {
        "taskId": "t",
        "pushNotificationConfig": {"id": "p", "url": "u", "authentication": {"schemes": ["B"]}},
    }
    assert _v03_leaks(task_push_config_to_v1(push)) == []
