"""The head of one plain HTTP/1.1 request, read strictly: the lean worker's (quineling/lean_worker.py) test of
whether a request is one it may answer without gunicorn's parser.

Strict on purpose. Anything this module does not fully understand — another request line, a header name that is
not a token or holds an underscore, a value with a control or non-ASCII byte, a repeated header, a header that
gunicorn itself interprets (framing, upgrades, the scheme a proxy forwards) — is not read at all: the caller
hands the untouched bytes to gunicorn, which then answers them as it always does, errors included. So this
reader can only ever accept a subset of what gunicorn accepts, with the same meaning.
"""

from __future__ import annotations

import re

HEAD_END = b"\r\n\r\n"

# RFC 9110 token characters without "_": gunicorn drops or remaps header names with an underscore (its
# header_map), so such a request is its to read.
_NAME = re.compile(rb"[-!#$%&'*+.^`|~0-9A-Za-z]+")
# Visible ASCII with single blanks or tabs inside; the blanks around a value are stripped before the match.
_VALUE = re.compile(rb"(?:[\x21-\x7e]+(?:[ \t]+[\x21-\x7e]+)*)?")

# Headers that gunicorn acts on itself (message framing, expectations, protocol switches, the scheme or path a
# trusted proxy forwards): a request carrying one is gunicorn's to read. Connection is read below.
_GUNICORNS = frozenset(
    {
        b"TRANSFER-ENCODING",
        b"TE",
        b"EXPECT",
        b"UPGRADE",
        b"HTTP2-SETTINGS",
        b"FORWARDED",
    }
)
# gunicorn's default secure_scheme_headers: from a trusted proxy it sets the URL scheme from them, and refuses
# a request whose several scheme headers disagree. One alone can't disagree with itself.
_SCHEME_HEADERS = frozenset({b"X-FORWARDED-PROTO", b"X-FORWARDED-PROTOCOL", b"X-FORWARDED-SSL"})
_UNPREFIXED = {b"CONTENT-TYPE": "CONTENT_TYPE", b"CONTENT-LENGTH": "CONTENT_LENGTH"}

# Header lines read before, with their environ key and value: a client sends the same Host, Authorization,
# Content-Type… on every request. Bounded: emptied when full (lines that vary, such as a request id, fill it).
_READ: dict[bytes, tuple[str, str]] = {}
_READ_LIMIT = 1024
_SCHEME_KEYS = frozenset("HTTP_" + name.replace(b"-", b"_").decode("ascii") for name in _SCHEME_HEADERS)


def read_head(
    head: bytes, request_line: bytes, max_fields: int, max_field_size: int
) -> dict[str, str] | None:
    """The WSGI environ keys of ``head`` (the bytes before the blank line), or ``None`` when it is not a plain
    request with exactly ``request_line`` that keeps its connection open.

    Header ``Name`` becomes ``HTTP_NAME`` (``CONTENT_TYPE``, ``CONTENT_LENGTH`` unprefixed), as in gunicorn's
    environ. At most ``max_fields`` headers of at most ``max_field_size`` bytes each: gunicorn's own limits,
    whose refusals stay gunicorn's."""
    lines = head.split(b"\r\n")
    if lines[0] != request_line or len(lines) - 1 > max_fields:
        return None
    fields: dict[str, str] = {}
    schemes = 0
    for line in lines[1:]:
        if len(line) + 2 > max_field_size:  # gunicorn counts the line's CRLF in its limit
            return None
        field = _READ.get(line)
        if field is None:
            field = _field(line)
            if field is None:
                return None
            if len(_READ) >= _READ_LIMIT:
                _READ.clear()
            _READ[line] = field
        key, value = field
        if not key:  # Connection: keep-alive
            continue
        if key in _SCHEME_KEYS:
            schemes += 1
            if schemes > 1:
                return None
        if key in fields:
            return None  # repeated: gunicorn joins or refuses them
        fields[key] = value
    return fields


def _field(line: bytes) -> tuple[str, str] | None:
    """One header line's environ key and value; ``("", "")`` for ``Connection: keep-alive``; ``None`` when the
    line is not one this module accepts."""
    name, colon, value = line.partition(b":")
    if not colon or not _NAME.fullmatch(name):
        return None
    value = value.strip(b" \t")
    if not _VALUE.fullmatch(value):
        return None
    upper = name.upper()
    if upper == b"CONNECTION":
        return ("", "") if value.lower() == b"keep-alive" else None  # a close, an upgrade: gunicorn's
    if upper in _GUNICORNS:
        return None
    key = _UNPREFIXED.get(upper) or "HTTP_" + upper.replace(b"-", b"_").decode("ascii")
    return key, value.decode("ascii")


def content_length(fields: dict[str, str], limit: int) -> int | None:
    """The body's stated length when it is a plain decimal from 1 to ``limit``, else ``None``."""
    text = fields.get("CONTENT_LENGTH", "")
    if not (0 < len(text) <= 12 and text.isdigit() and text.isascii()):
        return None
    length = int(text)
    return length if 0 < length <= limit else None
