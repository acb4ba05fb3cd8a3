"""The lean worker's reading of a request head (quineling/request_head.py) accepts only plain requests it fully
understands, with gunicorn's environ names, and leaves everything else — unusual, ambiguous, or gunicorn's own
business — unread, so gunicorn answers it as it always did."""

from __future__ import annotations

import pytest

from quineling.request_head import content_length, read_head

LINE = b"POST /a2a/jsonrpc HTTP/1.1"


def head(*fields: bytes, line: bytes = LINE) -> bytes:
    return b"\r\n".join([line, *fields])


def read(raw: bytes) -> dict[str, str] | None:
    return read_head(raw, LINE, max_fields=100, max_field_size=8190)


def test_a_plain_request_reads_as_gunicorns_environ_names() -> None:
    fields = read(
        head(
            b"Host: 127.0.0.1:8049",
            b"Content-Type: application/json",
            b"Content-Length: 42",
            b"Authorization:  Bearer qk_abc  ",
            b"A2A-Version: 1.0",
            b"X-Request-Id: abc",
            b"Connection: Keep-Alive",
            b"User-Agent: undici/7 (x; y)",
            b"X-Forwarded-For: 10.0.0.1, 10.0.0.2",
            b"X-Forwarded-Proto: https",
            b"Empty:",
        )
    )
    assert fields == {
        "HTTP_HOST": "127.0.0.1:8049",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": "42",
        "HTTP_AUTHORIZATION": "Bearer qk_abc",
        "HTTP_A2A_VERSION": "1.0",
        "HTTP_X_REQUEST_ID": "abc",
        "HTTP_USER_AGENT": "undici/7 (x; y)",
        "HTTP_X_FORWARDED_FOR": "10.0.0.1, 10.0.0.2",
        "HTTP_X_FORWARDED_PROTO": "https",
        "HTTP_EMPTY": "",
    }


@pytest.mark.parametrize(
    "raw",
    [
        head(b"Host: a", line=b"POST /a2a/jsonrpc HTTP/1.0"),  # 1.0's keep-alive rules are gunicorn's
        head(b"Host: a", line=b"POST /a2a/jsonrpc?x=1 HTTP/1.1"),
        head(b"Host: a", line=b"GET /a2a/jsonrpc HTTP/1.1"),
        head(b"Host: a", line=b" POST /a2a/jsonrpc HTTP/1.1"),
        head(b"Host: a", line=b"POST  /a2a/jsonrpc HTTP/1.1"),
        head(b"X_Forwarded_For: 1.2.3.4"),  # gunicorn drops underscored names (header_map)
        head(b"Content-Length: 5", b"Content-Length: 5"),  # repeated
        head(b"Host: a", b"host: b"),  # repeated, in another case
        head(b"Transfer-Encoding: chunked"),
        head(b"TE: trailers"),
        head(b"Expect: 100-continue"),
        head(b"Upgrade: h2c", b"HTTP2-Settings: AAMAAABkAAQAAP__"),
        head(b"Connection: close"),
        head(b"Connection: Upgrade"),
        head(b"Connection: keep-alive, Upgrade"),
        head(b"Forwarded: for=1.2.3.4"),
        head(b"X-Forwarded-Proto: https", b"X-Forwarded-Ssl: on"),  # two scheme headers may disagree
        head(b"Host: a", b" folded"),  # obs-fold
        head(b"Host : a"),  # blank before the colon
        head(b"Host a"),  # no colon
        head(b": a"),  # no name
        head(b"Ho(st: a"),  # not a token
        head(b"Host: a\x00b"),  # a control byte
        head(b"Host: a\rb"),
        head(b"Host: a\nX: b"),  # a bare line feed
        head(b"Host: caf\xc3\xa9"),  # non-ASCII
        head(b"Host: a\x7f"),
        head(b""),  # an empty header line inside the head
    ],
)
def test_anything_unusual_is_left_to_gunicorn(raw: bytes) -> None:
    assert read(raw) is None


def test_gunicorns_limits_stay_gunicorns_to_enforce() -> None:
    many = head(*[f"X-H{i}: v".encode() for i in range(5)])
    assert read_head(many, LINE, max_fields=5, max_field_size=100) is not None
    assert read_head(many, LINE, max_fields=4, max_field_size=100) is None
    long = head(b"X-Long: " + b"v" * 92)  # 100 bytes, 102 with its CRLF: gunicorn counts the CRLF too
    assert read_head(long, LINE, max_fields=5, max_field_size=102) is not None
    assert read_head(long, LINE, max_fields=5, max_field_size=101) is None
    assert read_head(long, LINE, max_fields=5, max_field_size=100) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1", 1), ("2048", 2048), ("0002048", 2048), ("4096", 4096), ("4097", None), ("0", None), ("", None),
     ("-1", None), ("+5", None), (" 5", None), ("5 ", None), ("1e3", None), ("\u0665", None),
     ("9" * 13, None)],
)  # fmt: skip
def test_content_length_is_a_plain_decimal_within_the_limit(text: str, expected: int | None) -> None:
    assert content_length({"CONTENT_LENGTH": text}, limit=4096) == expected


def test_no_content_length_is_none() -> None:
    assert content_length({}, limit=4096) is None


def test_lines_read_before_are_remembered_within_a_bound() -> None:
    from quineling import request_head

    request_head._READ.clear()
    for i in range(request_head._READ_LIMIT * 2 + 7):  # a request id that differs every time
        assert read(head(b"Host: a", f"X-Request-Id: r{i}".encode())) == {
            "HTTP_HOST": "a",
            "HTTP_X_REQUEST_ID": f"r{i}",
        }
        assert len(request_head._READ) <= request_head._READ_LIMIT
    assert read(head(b"Host: a", b"Connection: keep-alive")) == {"HTTP_HOST": "a"}
    assert read(head(b"Host: a", b"Connection: keep-alive", b"Connection: keep-alive")) == {"HTTP_HOST": "a"}
    assert b"Host: a" in request_head._READ and b"Connection: close" not in request_head._READ
    assert read(head(b"Connection: close")) is None  # refused lines are not remembered, and stay refused
    assert read(head(b"Connection: close")) is None and b"Connection: close" not in request_head._READ
