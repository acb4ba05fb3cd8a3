"""Where a request ends, as the server reads it: the lean worker's head reader (quineling/request_head.py) must
never disagree with gunicorn's. Each attack is sent, with a call pipelined behind it, to a server with the lean
path on and to one with it off (gunicorn's parser alone): the answers — statuses, and whether the connection
closed — must be the same. Some have an answer of their own to check too (gunicorn's limits, bare LF)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.attacks.wire import exchange, get_task, jsonrpc_head
from tests.support.live import LiveServer, live_server
from tests.support.principals import keys_file

pytestmark = pytest.mark.slow
BODY = get_task()
LINE = (
    b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\n"
)
TOKEN = "{token}"  # replaced by alice's token


def call(extra: bytes = b"", length: bytes | None = None, body: bytes = BODY, auth: bool = True) -> bytes:
    """A GetTask call with ``extra`` header lines; ``length`` is the Content-Length line's value(s) as sent."""
    lengths = b"Content-Length: %d\r\n" % len(body) if length is None else length
    token = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n" if auth else b""
    return LINE + token + lengths + extra + b"\r\n" + body


PROBE = call()  # pipelined behind each attack: does it run?
CHUNKED = b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\n\r\n"
REST = (
    b"GET /a2a/rest/tasks/no-such-task HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nAuthorization: Bearer "
    + TOKEN.encode()
    + b"\r\n\r\n"
)

ATTACKS: dict[str, bytes] = {
    "plain": call(),
    "duplicate-content-length-same": call(
        length=b"Content-Length: %d\r\nContent-Length: %d\r\n" % (len(BODY), len(BODY))
    ),
    "duplicate-content-length-differs": call(
        length=b"Content-Length: %d\r\nContent-Length: 5\r\n" % len(BODY)
    ),
    "content-length-list": call(length=b"Content-Length: %d, %d\r\n" % (len(BODY), len(BODY))),
    "content-length-plus": call(length=b"Content-Length: +%d\r\n" % len(BODY)),
    "content-length-hex": call(length=b"Content-Length: 0x%x\r\n" % len(BODY)),
    "content-length-negative": call(length=b"Content-Length: -1\r\n"),
    "content-length-space-inside": call(length=b"Content-Length: 1 %d\r\n" % len(BODY)),
    "content-length-leading-zeros": call(length=b"Content-Length: 000%d\r\n" % len(BODY)),
    "content-length-space-before-colon": call(length=b"Content-Length : %d\r\n" % len(BODY)),
    "cl-and-te-chunked": call(b"Transfer-Encoding: chunked\r\n", body=CHUNKED),
    "cl-and-te-chunked-upper": call(b"TRANSFER-ENCODING: CHUNKED\r\n", body=CHUNKED),
    "cl-and-te-tab": call(b"Transfer-Encoding:\tchunked\r\n", body=CHUNKED),
    "cl-and-te-space-before-colon": call(b"Transfer-Encoding : chunked\r\n", body=CHUNKED),
    "cl-and-te-list": call(b"Transfer-Encoding: identity, chunked\r\n", body=CHUNKED),
    "cl-and-te-xchunked": call(b"Transfer-Encoding: xchunked\r\n", body=CHUNKED),
    "cl-and-te-twice": call(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", body=CHUNKED),
    "te-only": LINE
    + b"Authorization: Bearer "
    + TOKEN.encode()
    + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
    + CHUNKED,
    "obs-fold": call(b"X-Folded: a\r\n b\r\n"),
    "obs-fold-content-length": LINE
    + b"Authorization: Bearer "
    + TOKEN.encode()
    + b"\r\nContent-Length:\r\n %d\r\n\r\n" % len(BODY)
    + BODY,
    "bare-lf": call().replace(b"\r\n", b"\n"),
    "bare-lf-one-line": call(b"X-A: 1\nX-B: 2\r\n"),
    "bare-cr": call(b"X-A: 1\rX-B: 2\r\n"),
    "header-8188": call(b"X-Long: " + b"a" * (8188 - 8) + b"\r\n"),
    "header-8189": call(b"X-Long: " + b"a" * (8189 - 8) + b"\r\n"),
    "header-8190": call(b"X-Long: " + b"a" * (8190 - 8) + b"\r\n"),
    "header-8191": call(b"X-Long: " + b"a" * (8191 - 8) + b"\r\n"),
    "no-credential": call(auth=False),
    "bad-credential": call(b"Authorization: Bearer nope\r\n", auth=False),
    "pipelined-lean-flask-lean": call() + REST + call(b"X_Hand_Over: 1\r\n") + call(),
}
EXPECTED = {  # the first answer, and whether the probe behind it runs
    "plain": (200, True),
    "bare-lf": (400, False),
    "header-8188": (200, True),
    "header-8189": (431, False),
    "header-8190": (431, False),
    "no-credential": (401, False),
    "bad-credential": (401, False),
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, LiveServer], str]]:
    keys, tokens = keys_file(tmp_path_factory.mktemp("keys"), "alice")
    with (
        live_server(auth_keys_file=str(keys), rate_limit="", body_timeout_seconds=3) as lean,
        live_server(auth_keys_file=str(keys), rate_limit="", body_timeout_seconds=3, lean_jsonrpc=0) as plain,
    ):
        yield {"lean": lean, "plain": plain}, tokens["alice"]


def _outcome(server: LiveServer, raw: bytes, half_close: bool) -> tuple[list[int], bool, float]:
    started = time.monotonic()
    answers, closed = exchange(server, raw, timeout=6, half_close=half_close)
    return [answer.status for answer in answers], closed, time.monotonic() - started


@pytest.mark.parametrize("name", list(ATTACKS))
def test_the_lean_path_reads_a_request_as_gunicorn_does(
    name: str, servers: tuple[dict[str, LiveServer], str]
) -> None:
    by_path, token = servers
    raw = (ATTACKS[name] + PROBE).replace(TOKEN.encode(), token.encode())
    lean = _outcome(by_path["lean"], raw, half_close=True)
    plain = _outcome(by_path["plain"], raw, half_close=True)
    assert lean[:2] == plain[:2], f"lean path {lean}, gunicorn alone {plain}"
    if name in EXPECTED:
        status, probe_runs = EXPECTED[name]
        assert lean[0][0] == status
        assert (len(lean[0]) > 1) == probe_runs
        assert lean[2] < 2 and plain[2] < 2  # answered at once, not after a timeout


@pytest.mark.parametrize("path", ["lean", "plain"])
def test_a_half_closed_short_body_is_refused(path: str, servers: tuple[dict[str, LiveServer], str]) -> None:
    by_path, token = servers
    for raw in (
        call(length=b"Content-Length: %d\r\n" % (len(BODY) + 10)),  # JSON-RPC
        call(length=b"Content-Length: %d\r\n" % (len(BODY) + 10)).replace(
            b"/a2a/jsonrpc", b"/a2a/jsonrpc?x=1"
        ),
        b"POST /a2a/rest/message:send HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 100\r\n\r\n{}",
    ):
        statuses, closed, seconds = _outcome(by_path[path], raw.replace(TOKEN.encode(), token.encode()), True)
        assert statuses in ([400], []) and closed, raw[:60]
        assert seconds < 2


def test_a_body_that_stops_arriving_gets_408_after_the_deadline(
    servers: tuple[dict[str, LiveServer], str], tmp_path: Path
) -> None:
    by_path, token = servers
    rest = (
        b"POST /a2a/rest/message:send HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + token.encode() + b"\r\nContent-Length: 100\r\n\r\n{"
    )
    for server in by_path.values():
        for raw in (rest, jsonrpc_head(b"", token, length=100) + b"{"):
            statuses, closed, seconds = _outcome(server, raw, half_close=False)
            assert statuses == [408] and closed
            assert 2.5 < seconds < 5


@pytest.mark.parametrize("path", ["lean", "plain"])
def test_a_bare_lf_head_alone_is_refused_at_once(
    path: str, servers: tuple[dict[str, LiveServer], str]
) -> None:
    by_path, token = servers
    raw = call().replace(TOKEN.encode(), token.encode()).replace(b"\r\n", b"\n")
    statuses, closed, seconds = _outcome(by_path[path], raw, half_close=False)
    assert statuses == [400] and closed
    assert seconds < 2  # not after the keep-alive time


@pytest.mark.parametrize("path", ["lean", "plain"])
def test_script_name_and_path_info_headers_from_loopback_are_ignored(
    path: str, servers: tuple[dict[str, LiveServer], str]
) -> None:
    """gunicorn would take them from a loopback client by default: not here (docs/security.md, "Proxies")."""
    server = servers[0][path]
    for extra in (
        b"SCRIPT_NAME: /.well-known\r\n",
        b"PATH_INFO: /healthz\r\n",
        b"Script-Name: /.well-known\r\n",
    ):
        raw = (
            b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
            + extra
            + b"\r\n"
        )
        answers, _ = exchange(server, raw, most=1, timeout=5)
        assert [answer.status for answer in answers] == [200], extra
        card = answers[0].json()
        assert isinstance(card, dict) and card["supportedInterfaces"][0]["url"] == server.url("/a2a/jsonrpc")
