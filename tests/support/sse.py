"""The one Server-Sent Events reader of the test suites (in-process responses, live HTTP, raw bodies)."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator
from typing import Any


def parse_sse(chunks: Iterable[bytes | str]) -> Iterator[tuple[str, Any]]:
    """Yield ``(event type, parsed data JSON)`` per complete SSE event, as soon as its blank line arrives.

    ``chunks`` may split events, lines and UTF-8 characters anywhere (a streamed body arrives as it was
    written). Comment lines (``:`` keep-alives) and events without data are skipped; the type defaults to
    ``message``. An event left unterminated when the body ends is not yielded, as the SSE format says.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    buffer = ""
    for chunk in chunks:
        buffer += decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        buffer = buffer.replace("\r\n", "\n")
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            kind, lines = "message", []
            for line in block.split("\n"):
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    lines.append(line[5:].removeprefix(" "))
            if lines:
                yield kind, json.loads("\n".join(lines))


def sse_events(body: bytes | str) -> list[tuple[str, Any]]:
    """Every event of a whole SSE body."""
    return list(parse_sse([body]))
