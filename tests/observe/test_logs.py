"""Log records as JSON lines or text, the request id (taken when sane, made otherwise, echoed, on every record
of the request), the request event's fields, and nothing of a message's contents at info level."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from quineling.app import create_app
from quineling.observe import logs, notes
from quineling.settings import ConfigError, load_settings
from tests.support.messages import text, user_message
from tests.support.principals import keys_file

V1 = {"A2A-Version": "1.0"}


def test_json_lines_carry_the_fields_and_the_extras() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logs.dress(handler, "json")
    record = logging.LogRecord("quineling.x", logging.WARNING, __file__, 1, "store %s", ("down",), None)
    record.binding = "rest"
    handler.handle(record)
    line = json.loads(stream.getvalue())
    assert line["event"] == "store down" and line["level"] == "WARNING" and line["logger"] == "quineling.x"
    assert line["binding"] == "rest" and isinstance(line["pid"], int) and line["time"].endswith("+00:00")
    assert stream.getvalue().count("\n") == 1


def test_text_lines_carry_the_same_fields() -> None:
    formatted = logs.TextFormatter().format(
        logging.makeLogRecord({"name": "q", "levelname": "INFO", "msg": "request", "binding": "jsonrpc"})
    )
    assert formatted.endswith(
        "q pid=" + formatted.split("pid=")[1].split(" ")[0] + " request binding=jsonrpc"
    )


def test_auto_is_text_on_a_terminal_and_json_elsewhere() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert logs.resolve_format("auto", Terminal()) == "text"
    assert logs.resolve_format("auto", io.StringIO()) == "json"
    assert logs.resolve_format("text", io.StringIO()) == "text"


@pytest.mark.parametrize("variable", ["QUINELING_LOG_FORMAT", "QUINELING_LOG_LEVEL"])
def test_unknown_formats_and_levels_are_refused(variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        load_settings(env={variable: "loud"})


def test_records_logged_during_a_request_carry_its_id() -> None:
    record = logging.makeLogRecord({"msg": "inside"})
    notes.begin("rid-1", "rest")
    try:
        assert logs.RequestIdFilter().filter(record) and record.request_id == "rid-1"
    finally:
        notes.end()
    outside = logging.makeLogRecord({"msg": "outside"})
    logs.RequestIdFilter().filter(outside)
    assert not hasattr(outside, "request_id")


@pytest.fixture
def captured(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG)
    yield caplog


def request_events(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "quineling.request"]


@pytest.mark.parametrize(
    ("sent", "echoed"),
    [("abc-123.x:y_z", True), ("", False), ("has space", False), ("x" * 129, False), ("é", False)],
)
def test_a_sane_request_id_is_echoed_and_any_other_replaced(
    captured: pytest.LogCaptureFixture, sent: str, echoed: bool
) -> None:
    client = create_app().test_client()
    answer = client.get("/a2a/rest/tasks/nope", headers={**V1, "X-Request-ID": sent})
    rid = answer.headers["X-Request-ID"]
    assert (rid == sent) == echoed
    if not echoed:
        assert len(rid) == 32 and int(rid, 16) >= 0
    (event,) = request_events(captured)
    assert event.request_id == rid and event.levelno == logging.INFO
    assert (event.binding, event.method, event.outcome, event.status) == (
        "rest",
        "GetTask",
        "TASK_NOT_FOUND",
        404,
    )
    assert event.task_id == "nope" and event.duration_seconds >= 0 and event.client == "127.0.0.1"


def test_the_request_event_names_the_principal_never_the_token(
    captured: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    path, tokens = keys_file(tmp_path, "alice")
    client = create_app(config={"auth_keys_file": str(path)}).test_client()
    secret_thought = "[5,6] | square | sum | report zebra_quartz_marker"
    answer = client.post(
        "/a2a/rest/message:send",
        json={"message": user_message(text(secret_thought))},
        headers={**V1, "Authorization": f"Bearer {tokens['alice']}"},
    )
    assert answer.status_code == 200
    (event,) = request_events(captured)
    assert event.principal == "alice" and event.operation == "create"
    assert event.task_id == answer.json["task"]["id"] and event.outcome == "ok"
    everything = "\n".join(
        f"{r.getMessage()} {r.__dict__}" for r in captured.records if r.levelno >= logging.INFO
    )
    assert tokens["alice"] not in everything and "zebra_quartz_marker" not in everything


def test_health_checks_and_scrapes_log_at_debug_only(captured: pytest.LogCaptureFixture) -> None:
    client = create_app().test_client()
    client.get("/healthz")
    client.get("/metrics")
    assert [r.levelno for r in request_events(captured)] == [logging.DEBUG, logging.DEBUG]
