"""The shared protocol vocabulary: the error table is consistent and is the one the server and the client
use; the v0.3 names round-trip, and a part sent by one side reads back unchanged on the other."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a import errors as server_errors
from quineling.a2a import task_facts, wire
from quineling.a2a.compat_v03 import methods as server_methods
from quineling.a2a.compat_v03 import translate as server_v03
from quineling.a2a.compat_v03.methods import V03_METHODS, call_v03
from quineling.cli_a2a import agent, render
from quineling.client import errors as client_errors
from quineling.client import models
from quineling.client import v03 as client_v03
from quineling.protocol import errors as table
from quineling.protocol import v03
from quineling.protocol.states import INTERRUPTED_STATES, TASK_STATES, TERMINAL_STATES, TaskState

# --- the error table ---------------------------------------------------------------------------------


def test_each_code_name_and_a2a_reason_is_one_row() -> None:
    codes = [spec.code for spec in table.ERRORS]
    names = [spec.name for spec in table.ERRORS]
    assert len(set(codes)) == len(codes) and len(set(names)) == len(names)
    a2a = [spec for spec in table.ERRORS if spec.a2a]
    assert sorted(spec.code for spec in a2a) == list(range(-32009, -32000))
    assert all(spec.reason == spec.name for spec in a2a)  # an A2A error's ErrorInfo reason is its name


@pytest.mark.parametrize("spec", table.ERRORS, ids=lambda spec: spec.name)
def test_each_row_is_a_coherent_answer(spec: table.ErrorSpec) -> None:
    """The HTTP status and its google.rpc status name agree (as google.rpc maps them)."""
    expected = {"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "NOT_FOUND": 404, "INTERNAL": 500}
    assert expected[spec.status] == spec.http_status
    assert spec.default_message and (spec.a2a or -32700 <= spec.code <= -32600)


def test_the_server_errors_are_the_table() -> None:
    rows = {(spec.code, spec.reason, spec.http_status, spec.status, spec.default_message, spec.a2a)
            for spec in (*table.ERRORS, table.UNAVAILABLE)}  # fmt: skip
    classes = {(cls.code, cls.reason, cls.http_status, cls.status, cls.default_message, cls.a2a)
               for cls in server_errors.ALL_ERRORS}  # fmt: skip
    assert classes == rows
    for spec in table.ERRORS:  # the most general class of each code answers with its row
        cls = server_errors.ERRORS_BY_CODE[spec.code]
        assert (cls.reason, cls.http_status) == (spec.reason, spec.http_status)


def test_the_client_reads_codes_and_reasons_by_the_table() -> None:
    assert client_errors.A2A_REASONS == {spec.code: spec.name for spec in table.ERRORS}
    for spec in table.ERRORS:
        assert client_errors.A2A_CODES[spec.name] == spec.code
    # The reason the server puts in an answer's ErrorInfo names the same code to the client.
    for cls in server_errors.ALL_ERRORS:
        assert client_errors.A2A_CODES[cls.reason] in (cls.code, -32600)  # a parse error says INVALID_REQUEST


def test_the_cli_names_each_error_as_the_specification_and_the_server_do() -> None:
    for spec in table.ERRORS:
        assert (
            agent.A2A_NAMES[spec.name] == spec.type_name == server_errors.ERRORS_BY_CODE[spec.code].__name__
        )


# --- states ------------------------------------------------------------------------------------------


def test_terminal_and_interrupted_states_are_defined_once() -> None:
    assert wire.TERMINAL is TERMINAL_STATES and models.TERMINAL is TERMINAL_STATES
    assert render.TERMINAL is TERMINAL_STATES and render.INTERRUPTED is INTERRUPTED_STATES
    assert models.INTERRUPTED is INTERRUPTED_STATES and models.TaskState is TaskState
    assert task_facts.PAUSED is INTERRUPTED_STATES
    assert not TERMINAL_STATES & INTERRUPTED_STATES
    assert "TASK_STATE_COMPLETED" in TERMINAL_STATES  # plain wire strings are members too


def test_a_state_number_is_its_index() -> None:
    assert TASK_STATES == wire.TASK_STATES
    for number, name in enumerate(TASK_STATES):
        assert TaskState.parse(number) is TaskState(name)
        assert v03.state_to_v03(number) == v03.state_to_v03(name)
    assert TaskState.parse(len(TASK_STATES)) is TaskState.UNSPECIFIED
    assert TaskState.parse(-1) is TaskState.UNSPECIFIED


# --- the v0.3 mapping round-trips ------------------------------------------------------------------


def test_methods_round_trip_and_both_sides_use_them() -> None:
    assert len(set(v03.METHODS.values())) == len(v03.METHODS)
    assert {v03.METHODS[v1]: v1 for v1 in v03.METHODS} == v03.METHODS_TO_V1
    assert V03_METHODS == set(v03.METHODS.values()) == set(server_methods._METHODS)  # the server serves each
    assert v03.V03_STREAM_METHODS < V03_METHODS
    assert not V03_METHODS & set(v03.METHODS)  # the two method grammars are disjoint


@pytest.mark.parametrize("state", list(TaskState))
def test_states_round_trip(state: TaskState) -> None:
    name = v03.STATES_TO_V03[state.value]
    assert server_v03.state_to_v03(state.value) == name
    assert v03.STATES_TO_V1[name] == state.value
    assert TaskState.parse(name) is state  # the client reads a v0.3 name back as the same state
    assert (name in v03.TERMINAL_V03_STATES) is state.terminal


@pytest.mark.parametrize("role", ["ROLE_USER", "ROLE_AGENT"])
def test_roles_round_trip(role: str) -> None:
    name = server_v03.role_to_v03(role)
    assert server_v03.role_to_v1(name) == role
    assert client_v03.message_in({"role": name})["role"] == role
    assert client_v03.message_out({"role": role, "parts": []})["role"] == name


PARTS: list[dict[str, Any]] = [
    {"text": "hello", "metadata": {"k": "v"}},
    {"data": {"a": [1, 2]}},
    {"data": [1, "two"]},  # not an object: v0.3 wraps it, and the hop back unwraps it
    {"data": 3, "metadata": {"k": "v"}},
    {"raw": "aGk=", "filename": "hi.txt", "mediaType": "text/plain"},
    {"url": "https://example.com/f.pdf", "mediaType": "application/pdf"},
]


@pytest.mark.parametrize("part", PARTS)
def test_parts_round_trip_between_server_and_client(part: dict[str, Any]) -> None:
    """What the server renders for v0.3 the client reads back as the 1.0 part, and what the client sends in
    v0.3 the server reads as the same part."""
    assert client_v03.part_in(server_v03.part_to_v03(part)) == part
    assert server_v03.part_to_v1(client_v03.part_out(part)) == part
    assert server_v03.part_to_v1(server_v03.part_to_v03(part)) == part


def test_the_server_layer_keeps_its_checks() -> None:
    """The shared names do not make the server lenient: a v0.3 part it cannot translate is refused."""
    with pytest.raises(server_errors.InvalidParamsError):
        server_v03.part_to_v1({"kind": "file", "file": {"bytes": "aGk=", "uri": "https://x"}})
    with pytest.raises(server_errors.InvalidParamsError):
        server_v03.role_to_v1("ROLE_USER")
    with pytest.raises(server_errors.MethodNotFoundError):
        call_v03(None, "tasks/list", {}, None)
