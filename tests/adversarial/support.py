"""What the adversarial suite shares: its hypothesis settings, hostile JSON, and the oracle every answer must pass.

Settings. By default every fuzz test runs a fixed number of derandomized examples without an example database,
so a CI run is reproducible and bounded (the whole suite takes well under two minutes on two cores).
``QUINELING_FUZZ=deep`` runs twenty times as many random examples, keeping failures in hypothesis's local
database so that a second run replays them; ``QUINELING_FUZZ_SCALE`` multiplies the example counts of either.

Hostile JSON. Requests are generated as JSON *text*, because much of what matters cannot come out of
``json.dumps``: a lone surrogate escape, ``1e400``, an integer of 5,000 digits, nesting 5,000 deep. A
:class:`Raw` value is written into the text as it is.

The oracle (:func:`check_jsonrpc`, :func:`check_rest`). Client input never gets a 5xx or -32603, and every error
is in the shape of the binding that answers it (docs/decisions/): JSON-RPC envelopes with
``code``/``message`` (and ``data`` ErrorInfos for the A2A errors on 1.0 methods, none on v0.3 methods),
``google.rpc.Status`` bodies whose ``code`` is the HTTP status on HTTP+JSON; streams the same, frame by frame.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from quineling.a2a.errors import ERRORS_BY_CODE, ERRORS_BY_REASON
from tests.support.sse import parse_sse

DEEP = os.environ.get("QUINELING_FUZZ", "").lower() == "deep"
SCALE = float(os.environ.get("QUINELING_FUZZ_SCALE", "1"))


def fuzz(examples: int) -> settings:
    """Settings for one fuzz test that runs ``examples`` examples in CI."""
    return settings(
        max_examples=max(1, int(examples * SCALE * (20 if DEEP else 1))),
        deadline=None,
        derandomize=not DEEP,
        database=settings.default.database if DEEP else None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        print_blob=True,
    )


# --- hostile JSON text ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """JSON text written into a request as it is (a token ``json.dumps`` cannot produce). Not a ``str``
    subclass: hypothesis replays drawn values by their type, and a subclass confuses it."""

    text: str

    def __repr__(self) -> str:
        return f"Raw({self.text[:40]!r}{'…' if len(self.text) > 40 else ''})"


def nested_text(levels: int) -> str:
    return "[" * levels + "]" * levels


RAW_TOKENS = [
    Raw('"\\ud800"'),  # a lone high surrogate
    Raw('"x\\udfff"'),  # a lone low surrogate after text
    Raw('"\\ud83e\\udd8e"'),  # a proper pair: valid
    Raw("1e400"),
    Raw("-1E+999"),
    Raw("1" + "0" * 30),  # beyond 64 bits
    Raw("-" + "9" * 25),
    Raw("9" * 5000),  # beyond the standard library's integer conversion
    Raw("-0"),
    Raw("1.0"),
    Raw("1E2"),
    Raw("0.1e-400"),  # underflows to 0.0: fine
    Raw(nested_text(101)),  # just past the limit
    Raw(nested_text(700)),  # orjson reads it; a recursive copy or check would not survive it
    Raw(nested_text(1500)),  # beyond every parser
    Raw('{"a":' * 300 + "1" + "}" * 300),
]

SPECIAL_STRINGS = [
    "", " ", "0", "-1", "1", "1.5", "1e3", "true", "null", "NaN", "ROLE_USER", "ROLE_AGENT", "user", "agent",
    "TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "completed", "2026-01-01T00:00:00Z",
    "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59", "application/json", "text/plain",
    "\x00", "é", "🦎", "a/b", "{x}", "%2F", "..", "x" * 70, "sha256:" + "0" * 64, "default", "*",
]  # fmt: skip

leaf_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(SPECIAL_STRINGS),
    st.sampled_from(RAW_TOKENS),
)


@functools.cache
def json_trees(keys: tuple[str, ...] = ("a",)) -> st.SearchStrategy[Any]:
    """Small JSON values (as Python, with :class:`Raw` leaves) whose member names come from ``keys`` too.
    Built once per ``keys``: making strategies anew for every example costs more than running it."""
    names = st.text(max_size=8) | st.sampled_from(keys) | st.just(Raw('"\\udc00"'))
    return st.recursive(
        leaf_values,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=4),
        max_leaves=8,
    )


def to_text(value: Any) -> str:
    """JSON text of ``value``, :class:`Raw` leaves and member names written as they are. Iterative, so a
    generated value may nest as deep as it likes."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Raw):
            out.append(item.text)
        elif isinstance(item, _Text):
            out.append(item.text)
        elif isinstance(item, dict):
            parts: list[Any] = [_Text("{")]
            for i, (key, member) in enumerate(item.items()):
                name = key.text if isinstance(key, Raw) else json.dumps(key)
                parts += [_Text(("," if i else "") + name + ":"), member]
            stack.extend(reversed([*parts, _Text("}")]))
        elif isinstance(item, list):
            parts = [_Text("[")]
            for i, member in enumerate(item):
                parts += [_Text(",")] if i else []
                parts.append(member)
            stack.extend(reversed([*parts, _Text("]")]))
        else:
            out.append(json.dumps(item))
    return "".join(out)


class _Text:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly ``valid``, sometimes anything."""
    return st.one_of(valid, valid, valid, json_trees())


def shaped(
    fields: dict[str, st.SearchStrategy[Any]], *, keys: tuple[str, ...] | None = None
) -> st.SearchStrategy[Any]:
    """An object with any subset of ``fields`` (each ``maybe`` hostile), sometimes an unknown member, sometimes
    not an object at all."""
    known = st.fixed_dictionaries({}, optional={name: maybe(value) for name, value in fields.items()})
    names = st.text(max_size=6) | st.sampled_from(keys or tuple(fields))
    extra = st.dictionaries(names, json_trees(), max_size=1)
    objects = st.builds(lambda a, b: {**b, **a}, known, extra)
    return st.one_of(objects, objects, objects, objects, json_trees())


# --- the oracle -------------------------------------------------------------------------------------------

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
CLIENT_CODES = frozenset(code for code in ERRORS_BY_CODE if code != -32603 and code != -32006)


class LogGuard(logging.Handler):
    """Collects the ERROR records of the service's loggers: an unexpected exception is logged there even when
    its answer looks fine (a failure after a stream began, say)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def check(self, what: str) -> None:
        records, self.records = self.records, []
        if records:
            first = records[0]
            detail = logging.Formatter().formatException(first.exc_info) if first.exc_info else ""
            raise AssertionError(f"{what}: the service logged an error: {first.getMessage()}\n{detail}")


def check_error_info(info: Any, where: str) -> None:
    assert isinstance(info, dict) and info.get("@type") == ERROR_INFO, (where, info)
    assert isinstance(info.get("reason"), str) and info.get("domain") == "a2a-protocol.org", (where, info)
    metadata = info.get("metadata", {})
    assert isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values()), (where, info)


def check_rpc_error(error: Any, *, legacy: bool, where: str) -> int:
    assert isinstance(error, dict) and set(error) <= {"code", "message", "data"}, (where, error)
    code, message = error.get("code"), error.get("message")
    assert isinstance(code, int) and isinstance(message, str) and message, (where, error)
    assert code in CLIENT_CODES, f"{where}: client input answered with {code}: {message}"
    error_class = ERRORS_BY_CODE[code]
    if not error_class.a2a:
        assert "data" not in error, (where, error)
    elif not legacy or "data" in error:
        # v0.3 errors carry none, except those answered before the method family is known (a bad
        # Content-Type), which are in the 1.0 shape: JSON-RPC lets an error carry data, so v0.3 clients take it.
        assert isinstance(error.get("data"), list) and len(error["data"]) == 1, (where, error)
        check_error_info(error["data"][0], where)
    return code


def check_jsonrpc(response: Any, rpc_id: Any, *, legacy: bool, where: str, max_events: int = 8) -> Any:
    """Check one JSON-RPC answer; returns the parsed envelope (or the list of stream envelopes)."""
    status = response.status_code
    if response.mimetype == "text/event-stream":
        assert status == 200, (where, status)
        envelopes = []
        try:
            for kind, envelope in _first(parse_sse(response.response), max_events):
                assert kind in ("message", "error"), (where, kind)
                assert set(envelope) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), (
                    where,
                    envelope,
                )
                assert envelope["jsonrpc"] == "2.0" and envelope["id"] == rpc_id, (where, envelope)
                if "error" in envelope:
                    check_rpc_error(envelope["error"], legacy=legacy, where=where)
                envelopes.append(envelope)
        finally:
            response.close()  # a subscription to a live task would go on: unsubscribe
        assert envelopes, f"{where}: an empty stream"
        return envelopes
    assert response.mimetype == "application/json", (where, status, response.mimetype)
    assert status in (200, 400, 413), f"{where}: HTTP {status}: {response.get_data(as_text=True)[:300]}"
    envelope = response.get_json()
    assert isinstance(envelope, dict) and envelope.get("jsonrpc") == "2.0", (where, envelope)
    assert set(envelope) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), (where, envelope)
    if "result" in envelope:
        assert status == 200 and envelope["id"] == rpc_id, (where, envelope)
        return envelope
    code = check_rpc_error(envelope["error"], legacy=legacy, where=where)
    if status == 400:
        assert code in (-32700, -32600, -32005), (where, envelope)
    if status == 413:
        assert code == -32600, (where, envelope)
    if code in (-32700,):
        assert envelope["id"] is None, (where, envelope)
    elif envelope["id"] is not None:
        assert envelope["id"] == rpc_id, (where, envelope)
    return envelope


def check_rest_error(body: Any, status: int, where: str) -> None:
    assert isinstance(body, dict) and set(body) == {"error"}, (where, body)
    error = body["error"]
    assert set(error) == {"code", "status", "message", "details"}, (where, error)
    assert error["code"] == status and isinstance(error["status"], str), (where, error)
    assert isinstance(error["message"], str) and error["message"], (where, error)
    assert isinstance(error["details"], list) and len(error["details"]) == 1, (where, error)
    check_error_info(error["details"][0], where)
    reason = error["details"][0]["reason"]
    known = reason in ERRORS_BY_REASON or reason in ("INVALID_REQUEST", "INVALID_PARAMS", "METHOD_NOT_FOUND")
    assert known, (where, reason)


def check_rest(response: Any, *, where: str, max_events: int = 8) -> Any:
    """Check one HTTP+JSON answer; returns the parsed JSON body, the stream's events, or None."""
    status = response.status_code
    assert status < 500, f"{where}: HTTP {status}: {response.get_data(as_text=True)[:300]}"
    if response.mimetype == "text/event-stream":
        assert status == 200, where
        events = []
        try:
            for kind, event in _first(parse_sse(response.response), max_events):
                if kind == "error":
                    assert isinstance(event, dict) and "error" in event, (where, event)
                    check_rest_error(event, event["error"].get("code"), where)
                    assert event["error"]["code"] < 500, (where, event)
                else:
                    assert kind == "message" and isinstance(event, dict) and len(event) == 1, (where, event)
                events.append(event)
        finally:
            response.close()
        assert events, f"{where}: an empty stream"
        return events
    if status >= 400:
        assert response.mimetype == "application/json", (where, status, response.mimetype)
        if where.startswith("HEAD "):
            return None  # no body to check
        check_rest_error(response.get_json(), status, where)
        if status == 405:
            assert response.headers.get("Allow"), where
        return response.get_json()
    if status == 304:
        return None
    if status == 308:
        # werkzeug merges repeated slashes (/tasks//x, also /%2F/tasks once decoded) by redirecting to the
        # merged path, which is on this binding too.
        location = urlsplit(response.headers["Location"]).path
        assert location.startswith("/a2a/rest/"), (where, response.headers)
        return None
    if where.startswith(("HEAD ", "OPTIONS ")) and not response.data:
        return None  # werkzeug's automatic answers carry no body
    assert response.mimetype in ("application/json", "application/a2a+json"), (where, response.mimetype)
    return response.get_json()


def _first(events: Iterator[Any], count: int) -> Iterator[Any]:
    for index, event in enumerate(events):
        yield event
        if index + 1 >= count:
            return


# --- mutating valid requests ------------------------------------------------------------------------------
# Fuzzing from valid requests gets past the first checks: one hostile value deep inside an otherwise good
# request reaches the copying, the validation and the store that a random document never would.

hostile_values = st.one_of(json_trees(), st.sampled_from(RAW_TOKENS), st.sampled_from(SPECIAL_STRINGS))


def slots(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in ``value``: the places a mutation can hit."""
    found: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for key, child in pairs:
            found.append((item, key))
            stack.append(child)
    return found


def _nudge(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    choices = [value + 1, value - 1, -value, value * 1_000_000_007, value + 0.5, str(value), 2**64]
    return choices[int(abs(value) * 7) % len(choices)]


def _donors(seeds: list[Any]) -> dict[str, list[Any]]:
    """Every value each member name has anywhere in ``seeds``, for swapping between requests."""
    by_name: dict[str, list[Any]] = {}
    for seed in seeds:
        for container, key in slots(seed):
            if isinstance(key, str):
                by_name.setdefault(key, []).append(container[key])
    return by_name


MUTATIONS = ["replace", "replace", "replace", "drop", "add", "nudge", "wrap", "donor"]


def mutated(seeds: list[Any], *, operations: tuple[str, ...] = ()) -> st.SearchStrategy[Any]:
    """One of ``seeds`` (valid requests), deep-copied, after up to three mutations; with ``operations``, a
    runtime request sometimes names another operation than its fields belong to."""
    key = (id(seeds), operations)
    if key not in _MUTATED:
        _MUTATED[key] = _mutated(seeds, operations)
    return _MUTATED[key]


_MUTATED: dict[tuple[int, tuple[str, ...]], st.SearchStrategy[Any]] = {}


def _mutated(seeds: list[Any], operations: tuple[str, ...]) -> st.SearchStrategy[Any]:
    donors = _donors(seeds)

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        request = copy.deepcopy(draw(st.sampled_from(seeds), label="seed"))
        if operations and isinstance(request, dict) and draw(st.integers(0, 9), label="foreign op?") == 0:
            request["operation"] = draw(st.sampled_from(operations), label="operation")
        for _ in range(draw(st.integers(1, 3), label="mutations")):
            places = slots(request)
            if not places:
                break
            container, key = draw(st.sampled_from(places), label="slot")
            how = draw(st.sampled_from(MUTATIONS), label="how")
            if how == "replace":
                container[key] = draw(hostile_values, label="value")
            elif how == "drop":
                del container[key]
            elif how == "add" and isinstance(container, dict):
                container[draw(st.text(max_size=6) | st.sampled_from(["kind", "extra", "metadata"]))] = draw(
                    hostile_values
                )
            elif how == "nudge":
                container[key] = _nudge(container[key])
            elif how == "wrap":
                container[key] = [container[key]] if draw(st.booleans()) else {"value": container[key]}
            elif how == "donor" and isinstance(key, str) and donors.get(key):
                container[key] = copy.deepcopy(draw(st.sampled_from(donors[key]), label="donor"))
        return request

    return build()
