"""A tiny forwarding proxy in front of a live server, to lose an answer *after* the server committed it.

Every request is forwarded to ``upstream`` and recorded (method, path, headers). ``fault(n, request)`` decides
what happens to the n-th request's answer (0-based): ``None`` relays it whole; ``DROP`` reads the server's whole
answer and then closes the client's connection without a byte (the client sees the connection broken after the
server did the work); an int ``k`` relays the first ``k`` SSE events of a stream, then cuts the connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx

from tests.support.http_fixture import Exchange, HttpFixture, Seen

DROP = "drop"
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


Fault = Callable[[int, Seen], "str | int | None"]


class Proxy(HttpFixture):
    def __init__(self, upstream: str, fault: Fault) -> None:
        super().__init__()
        self.upstream = upstream.rstrip("/")
        self.fault = fault
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.http = httpx.Client(timeout=60)

    def respond(self, exchange: Exchange) -> None:
        body = exchange.read_body() or None
        seen = exchange.seen()
        with self.lock:
            index = len(self.seen)
            self.seen.append(seen)
        fault = self.fault(index, seen)
        headers = {k: v for k, v in exchange.headers.items() if k.lower() not in HOP}
        request = self.http.build_request(exchange.command, self.upstream + exchange.path, content=body,
                                          headers=headers)  # fmt: skip
        answer = self.http.send(request, stream=True)
        try:
            if fault == DROP:
                answer.read()
                exchange.close_connection = True
                return
            exchange.send_response(answer.status_code)
            for k, v in answer.headers.items():
                if k.lower() not in HOP:
                    exchange.send_header(k, v)
            streaming = "text/event-stream" in answer.headers.get("content-type", "")
            if not streaming:
                payload = answer.read()
                exchange.send_header("Content-Length", str(len(payload)))
                exchange.end_headers()
                exchange.wfile.write(payload)
                return
            exchange.send_header("Transfer-Encoding", "chunked")
            exchange.end_headers()
            self._relay(exchange, answer, fault if isinstance(fault, int) else None)
        finally:
            answer.close()

    @staticmethod
    def _relay(exchange: Exchange, answer: httpx.Response, cut_after: int | None) -> None:
        events, buffer = 0, b""
        for chunk in answer.iter_raw():
            buffer += chunk
            while b"\n\n" in buffer:
                frame, buffer = buffer.split(b"\n\n", 1)
                frame += b"\n\n"
                exchange.write_chunk(frame)
                if frame.strip() and b"data:" in frame:
                    events += 1
                if cut_after is not None and events >= cut_after:
                    exchange.close_connection = True
                    return  # no final chunk: the client sees a broken stream
        exchange.end_chunks()
        exchange.close_connection = True

    def close(self) -> None:
        super().close()
        self.http.close()

    def posts(self, header: str | None = None) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST" and (header is None or s.header(header))]


@contextmanager
def proxy(upstream: str, fault: Fault) -> Iterator[Proxy]:
    with Proxy(upstream, fault) as made:
        yield made
