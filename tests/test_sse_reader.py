"""The SSE reader every streaming test relies on (tests/support/sse.py): it must not invent or lose events."""

from __future__ import annotations

from collections.abc import Iterator

from tests.support.sse import parse_sse, sse_events

BODY = (
    ": keepalive\n\n"
    'data: {"n": 1, "text": "caf\u00e9 \u2713"}\n\n'
    'event: error\ndata: {"n":\ndata: 2}\n\n'
    ": keepalive\n\n"
    'data: {"n": 3}\r\n\r\n'
).encode()
EVENTS = [("message", {"n": 1, "text": "caf\u00e9 \u2713"}), ("error", {"n": 2}), ("message", {"n": 3})]


def test_whole_body() -> None:
    assert sse_events(BODY) == EVENTS
    assert sse_events(BODY.decode()) == EVENTS


def test_every_split_point_gives_the_same_events() -> None:
    # Includes splits inside "\n\n", inside "data:" and inside the multi-byte UTF-8 characters.
    for cut in range(1, len(BODY)):
        assert list(parse_sse([BODY[:cut], BODY[cut:]])) == EVENTS, cut


def test_one_byte_at_a_time_yields_each_event_when_its_blank_line_arrives() -> None:
    chunks = [BODY[i : i + 1] for i in range(len(BODY))]
    seen: list[int] = []

    def feed() -> Iterator[bytes]:  # records how far the reader has read
        for index, chunk in enumerate(chunks):
            seen.append(index)
            yield chunk

    events = parse_sse(feed())
    assert next(events) == EVENTS[0]
    first_end = BODY.index(b"\n\n", BODY.index(b"data:")) + 2
    assert len(seen) == first_end  # not a byte more than the first event's own
    assert list(events) == EVENTS[1:]


def test_an_unterminated_last_event_is_dropped() -> None:
    assert sse_events('data: {"n": 1}\n\ndata: {"n": 2}\n') == [("message", {"n": 1})]
