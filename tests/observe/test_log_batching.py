"""Log lines below WARNING written in batches (QUINELING_LOG_FLUSH_SECONDS): late by at most the interval,
at once with a WARNING (after what waited, so the order holds), when a batch is full, at exit, never twice
across a fork, and, on a live server, every request's line written by the time the server has stopped."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from quineling.observe import logs, notes
from quineling.settings import ConfigError, load_settings
from tests.support.live import LiveServer, live_server
from tests.support.principals import keys_file


def _record(message: str, level: int = logging.INFO) -> logging.LogRecord:
    return logging.LogRecord("quineling.test", level, __file__, 1, message, None, None)


def _events(text: str) -> list[str]:
    return [json.loads(line)["event"] for line in text.splitlines()]


@pytest.fixture
def stream() -> io.StringIO:
    return io.StringIO()


@pytest.fixture
def batched(stream: io.StringIO) -> Iterator[logs.BatchedStreamHandler]:
    handler = logs.BatchedStreamHandler(stream, flush_seconds=60)
    logs.dress(handler, "json")
    yield handler
    handler.close()


def test_info_lines_wait_and_a_warning_writes_them_first_in_order(
    batched: logs.BatchedStreamHandler, stream: io.StringIO
) -> None:
    batched.handle(_record("one"))
    batched.handle(_record("two"))
    assert stream.getvalue() == ""
    batched.handle(_record("trouble", logging.WARNING))
    assert _events(stream.getvalue()) == ["one", "two", "trouble"]


def test_a_full_batch_is_written_without_waiting(
    batched: logs.BatchedStreamHandler, stream: io.StringIO
) -> None:
    line = len(batched.format(_record("x" * 200))) + 1
    for _ in range(logs.BATCH_BYTES // line):
        batched.handle(_record("x" * 200))
    assert stream.getvalue() == ""
    batched.handle(_record("x" * 200))
    assert len(_events(stream.getvalue())) == logs.BATCH_BYTES // line + 1


def test_waiting_lines_are_written_within_the_interval(stream: io.StringIO) -> None:
    handler = logs.BatchedStreamHandler(stream, flush_seconds=0.05)
    logs.dress(handler, "json")
    try:
        handler.handle(_record("soon"))
        deadline = time.monotonic() + 5
        while not stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _events(stream.getvalue()) == ["soon"]
    finally:
        handler.close()


def test_flush_and_close_write_what_waits(batched: logs.BatchedStreamHandler, stream: io.StringIO) -> None:
    batched.handle(_record("flushed"))
    batched.flush()
    assert _events(stream.getvalue()) == ["flushed"]
    batched.handle(_record("closed"))
    batched.close()  # logging.shutdown() at exit flushes, then closes, every handler
    assert _events(stream.getvalue()) == ["flushed", "closed"]


def test_a_forked_child_never_writes_its_parents_lines_again() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as out:
        handler = logs.BatchedStreamHandler(out, flush_seconds=60)
        logs.dress(handler, "json")
        handler.handle(_record("parent"))
        child = os.fork()
        if child == 0:  # the child: its own line, then exit as a worker does (flush at shutdown)
            try:
                handler.handle(_record("child"))
                handler.flush()
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        handler.close()
    with os.fdopen(read_end) as written:
        assert sorted(_events(written.read())) == ["child", "parent"]


def test_the_interval_is_checked() -> None:
    assert load_settings(env={}).log_flush_seconds == 1.0
    assert load_settings(env={"QUINELING_LOG_FLUSH_SECONDS": "0"}).log_flush_seconds == 0
    for bad in ("-1", "61", "nan", "soon"):
        with pytest.raises(ConfigError, match="QUINELING_LOG_FLUSH_SECONDS"):
            load_settings(env={"QUINELING_LOG_FLUSH_SECONDS": bad})


def test_configure_replaces_its_handler_and_zero_writes_each_line_at_once(stream: io.StringIO) -> None:
    root = logging.getLogger()
    before = list(root.handlers), root.level
    try:
        logs.configure("json", "info", stream, flush_seconds=60)
        logging.getLogger("quineling.test").info("waits")
        assert stream.getvalue() == ""
        logs.configure("json", "info", stream, flush_seconds=0)  # the old handler writes what waited
        ours = [h for h in root.handlers if getattr(h, "_quineling", False)]
        assert len(ours) == 1
        logging.getLogger("quineling.test").info("at once")
        assert _events(stream.getvalue()) == ["waits", "at once"]
    finally:
        for handler in list(root.handlers):
            if handler not in before[0]:
                root.removeHandler(handler)
        root.setLevel(before[1])


def _get(server: LiveServer, token: str, request_id: str) -> None:
    headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0", "X-Request-ID": request_id}
    assert requests.get(server.url("/a2a/rest/tasks"), headers=headers, timeout=10).status_code == 200


@pytest.mark.slow
def test_a_live_server_writes_a_request_line_within_the_interval(tmp_path: Path) -> None:
    keys, tokens = keys_file(tmp_path, "alice")
    with live_server(log_flush_seconds=1, log_format="json", auth_keys_file=keys) as server:
        request_id = uuid.uuid4().hex
        _get(server, tokens["alice"], request_id)
        deadline = time.monotonic() + 10
        while request_id not in server.log_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server.log_text().count(request_id) == 1


@pytest.mark.slow
def test_a_live_server_writes_what_waits_when_it_stops(tmp_path: Path) -> None:
    keys, tokens = keys_file(tmp_path, "alice")
    with live_server(log_flush_seconds=60, log_format="json", auth_keys_file=keys) as server:
        request_ids = [uuid.uuid4().hex for _ in range(20)]
        for request_id in request_ids:
            _get(server, tokens["alice"], request_id)
        assert not any(request_id in server.log_text() for request_id in request_ids)  # still waiting
        os.kill(server.pid, signal.SIGTERM)  # a graceful stop: the worker writes what waits as it exits
        deadline = time.monotonic() + 30
        while _running(server.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        text = server.log_text()
        assert all(text.count(request_id) == 1 for request_id in request_ids)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


# ---- the request line made directly (logs.log_fields) ----


@pytest.fixture
def configured(stream: io.StringIO) -> Iterator[logging.Logger]:
    root = logging.getLogger()
    before = list(root.handlers), root.level
    logs.configure("json", "info", stream, flush_seconds=0)
    yield logging.getLogger("quineling.request")
    for handler in list(root.handlers):
        if handler not in before[0]:
            root.removeHandler(handler)
    root.setLevel(before[1])


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


FIELDS = {"request_id": "r-1", "binding": "jsonrpc", "status": 200, "duration_seconds": 0.0004}


def test_the_direct_line_is_the_formatters_line(configured: logging.Logger, stream: io.StringIO) -> None:
    logs.log_fields(configured, logging.INFO, "request", dict(FIELDS))
    configured.addFilter(lambda record: True)  # a filter on the way: the record goes through logging
    logs.log_fields(configured, logging.INFO, "request", dict(FIELDS))
    direct, formatted = _lines(stream)
    assert list(direct) == list(formatted)  # the same keys in the same order
    assert {k: v for k, v in direct.items() if k != "time"} == {
        k: v for k, v in formatted.items() if k != "time"
    }
    assert str(direct["time"]).endswith("+00:00") and str(direct["time"])[:16] == str(formatted["time"])[:16]


def test_the_direct_line_takes_the_served_requests_id(
    configured: logging.Logger, stream: io.StringIO
) -> None:
    notes.begin("served-1", "rest", "GetTask")
    try:
        logs.log_fields(configured, logging.INFO, "request", {"status": 200})
        configured.addFilter(lambda record: True)
        logs.log_fields(configured, logging.INFO, "request", {"status": 200})
    finally:
        notes.end()
    direct, formatted = _lines(stream)
    assert direct["request_id"] == formatted["request_id"] == "served-1"
    assert list(direct) == list(formatted)


def test_any_other_handler_or_level_gets_the_record(configured: logging.Logger, stream: io.StringIO) -> None:
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    logs.log_fields(configured, logging.DEBUG, "request", dict(FIELDS))  # below the level: nothing
    assert stream.getvalue() == ""
    extra = Keep()
    configured.addHandler(extra)
    try:
        logs.log_fields(configured, logging.INFO, "request", dict(FIELDS))
    finally:
        configured.removeHandler(extra)
    assert [r.getMessage() for r in seen] == ["request"] and seen[0].binding == "jsonrpc"
    assert _events(stream.getvalue()) == ["request"]  # and the configured handler still wrote its line
