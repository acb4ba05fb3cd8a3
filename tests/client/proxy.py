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
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

DROP = "drop"
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


Fault = Callable[[int, Seen], "str | int | None"]


class Proxy:
    def __init__(self, upstream: str, fault: Fault) -> None:
        self.upstream = upstream.rstrip("/")
        self.fault = fault
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.http = httpx.Client(timeout=60)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                seen = Seen(self.command, self.path, dict(self.headers.items()))
                with proxy.lock:
                    index = len(proxy.seen)
                    proxy.seen.append(seen)
                fault = proxy.fault(index, seen)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                request = proxy.http.build_request(self.command, proxy.upstream + self.path, content=body,
                                                   headers=headers)  # fmt: skip
                answer = proxy.http.send(request, stream=True)
                try:
                    if fault == DROP:
                        answer.read()
                        self.close_connection = True
                        return
                    self.send_response(answer.status_code)
                    for k, v in answer.headers.items():
                        if k.lower() not in HOP:
                            self.send_header(k, v)
                    streaming = "text/event-stream" in answer.headers.get("content-type", "")
                    if not streaming:
                        payload = answer.read()
                        self.send_header("Content-Length", str(len(payload)))
                        self.end_headers()
                        self.wfile.write(payload)
                        return
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self._relay(answer, fault if isinstance(fault, int) else None)
                finally:
                    answer.close()

            def _relay(self, answer: httpx.Response, cut_after: int | None) -> None:
                events, buffer = 0, b""
                for chunk in answer.iter_raw():
                    buffer += chunk
                    while b"\n\n" in buffer:
                        frame, buffer = buffer.split(b"\n\n", 1)
                        frame += b"\n\n"
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                        self.wfile.flush()
                        if frame.strip() and b"data:" in frame:
                            events += 1
                        if cut_after is not None and events >= cut_after:
                            self.close_connection = True
                            return  # no final chunk: the client sees a broken stream
                self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

            do_GET = do_POST = do_DELETE = _any  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def posts(self, header: str | None = None) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST" and (header is None or s.header(header))]


@contextmanager
def proxy(upstream: str, fault: Fault) -> Iterator[Proxy]:
    made = Proxy(upstream, fault)
    thread = threading.Thread(target=made.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        made.httpd.shutdown()
        made.httpd.server_close()
        made.http.close()
