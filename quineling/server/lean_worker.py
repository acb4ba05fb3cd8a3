"""gunicorn's gevent worker, with the JSON-RPC endpoint's common call answered before gunicorn parses it
(docs/performance.md, "The lean worker").

Of a GetTask's CPU on this server, gunicorn's own request handling was the largest share: its parser, the
environ, the response object, the hooks, a timer and two ``datetime`` calls per request. The lean JSON-RPC
path (quineling/a2a/http/lean_jsonrpc.py) already answers the common call without Flask; this worker hands it the
call without gunicorn's machinery around it:

- it reads a connection's next request head itself and, when that is a plain ``POST /a2a/jsonrpc HTTP/1.1``
  (quineling/server/request_head.py: strict, a subset of what gunicorn accepts), its body, and asks the lean path;
- the lean path answers (written in one ``sendall``, with gunicorn's status line and default headers), or
  declines: then every byte read so far is handed to gunicorn's own handler with the connection, which reads
  them first and serves that connection from then on, exactly as the stock worker does.

A request is judged from its head before its body is waited for (the lean path's ``admit``: a missing or
invalid credential, say, sends it to gunicorn and Flask at once, which refuse it unread and close), and a body
gets ``QUINELING_BODY_TIMEOUT_SECONDS`` to arrive (then 408, and the connection closes). Nothing else is
refused here: a request this worker does not serve reaches gunicorn byte for byte. What the lean
path counted against a rate budget before declining travels with the request (``carried``), so Flask does not
count it again. Without the lean path (``QUINELING_LEAN_JSONRPC=0``), with TLS, the PROXY protocol, HTTP/2
prior knowledge, keep-alive off or an access log in the text format, and on a Unix socket, every connection
is gunicorn's; the JSON access log's line of a call it answers is written here.

Imported by gunicorn in the master (a worker class is resolved there), so this module imports nothing of the
app: the lean path is found on the app each worker loads.
"""

from __future__ import annotations

import errno
import io
import time
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import gevent  # type: ignore[import-untyped]
import gevent.socket  # type: ignore[import-untyped]
from gunicorn import SERVER, util
from gunicorn.http2 import negotiation
from gunicorn.workers.ggevent import GeventWorker

from quineling.server.gunicorn_log import QuinelingLogger
from quineling.server.hooks import take_turn
from quineling.server.request_head import HEAD_END, content_length, read_head

# A head longer than this is gunicorn's to read (and, past its limits, to refuse).
HEAD_LIMIT = 64 * 1024
_QUIET_ERRNOS = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN)


class LeanGeventWorker(GeventWorker):
    """``QUINELING_WORKER_CLASS=gevent``: see the module docstring."""

    lean: Any = None  # the app's LeanJsonRpc, when this worker answers its calls itself
    access_line: Callable[..., None] | None = None  # the JSON access log's, for the calls it answers
    _date: tuple[int, str] = (0, "")  # the Date header line, made once a second

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.lean = self.access_line = None
        cfg = self.cfg
        if cfg.is_ssl or cfg.proxy_protocol != "off" or not cfg.keepalive:
            return
        # The JSON access line (quineling.server.gunicorn_log) is written here too; gunicorn's text line reads
        # its own request and response objects, so with it every connection stays gunicorn's.
        if cfg.accesslog:
            if not (isinstance(self.log, QuinelingLogger) and self.log.log_format == "json"):
                return
            self.access_line = self.log.access
        from quineling.a2a.http.lean_jsonrpc import EXTENSION_KEY  # in the worker, after gevent's patching

        lean = getattr(self.wsgi, "extensions", {}).get(EXTENSION_KEY)
        if lean is not None and lean.enabled:
            self.attach(lean)
            self.log.info("Answering the common JSON-RPC calls before gunicorn's parser (the lean worker)")

    def attach(self, lean: Any) -> None:
        """Answer ``lean``'s calls on this worker's connections (``lean``: the app's LeanJsonRpc)."""
        self.lean = lean
        self._request_line = b"POST " + lean.path.encode("ascii") + b" HTTP/1.1"
        self.wsgi = _carrying(self.wsgi)

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        if (
            self.lean is None
            or not isinstance(addr, tuple)
            or negotiation.prior_knowledge_allowed(self.cfg, addr)
        ):
            super().handle(listener, client, addr)
            return
        client.setblocking(True)
        # Named now: by the time a request is handed over the worker may be stopping, its listener closed.
        listener = _Listener(listener.getsockname())
        handoff = None
        try:
            handoff = self._serve(client, addr)
        except OSError as exc:
            if exc.errno not in _QUIET_ERRNOS:
                self.log.exception("Socket error processing request.")
        except Exception as exc:  # noqa: BLE001 - the lean path's own fault: gunicorn's 500, then the connection closes
            self.handle_error(None, client, addr, exc)
        finally:  # also when the greenlet is killed (a stop past graceful_timeout)
            if handoff is None:
                util.close(client)
        if handoff is not None:
            pending, carried = handoff
            super().handle(listener, _Replayed(client, pending, carried), addr)

    def _serve(self, client: Any, addr: tuple[Any, ...]) -> tuple[bytes, dict[str, Any]] | None:
        """Answer the connection's requests while the lean path serves them. ``None``: the connection is done
        (closed by the client, idle past keep-alive, or the worker is stopping); else the bytes read and not
        answered, with what the lean path's look at them must take along, for gunicorn."""
        lean, cfg = self.lean, self.cfg
        buffer = b""
        while True:
            end = buffer.find(HEAD_END)
            if end < 0:
                buffer, end = self._read_head(client, buffer)
                if end == -2:
                    return None
                if end < 0:
                    return buffer, lean.carried({})
            fields = read_head(
                buffer[:end], self._request_line, cfg.limit_request_fields, cfg.limit_request_field_size
            )
            length = None if fields is None else content_length(fields, lean.state.request_limit_bytes)
            # Judged from the head before any of the body is waited for: a request the lean path would decline
            # (no valid credential, say) goes to gunicorn and Flask now, which refuse it unread and close.
            if fields is None or length is None or not lean.admit(fields):
                return buffer, lean.carried({})
            started = time.perf_counter()
            start = end + len(HEAD_END)
            stop = start + length
            if len(buffer) < stop:
                whole = self._read_body(client, buffer, stop)
                if whole is None:
                    return None
                buffer = whole
            environ: dict[str, Any] = fields
            environ.update(
                REQUEST_METHOD="POST",
                PATH_INFO=lean.path,
                QUERY_STRING="",
                SERVER_PROTOCOL="HTTP/1.1",
                REMOTE_ADDR=addr[0],
            )
            environ["wsgi.input"] = io.BytesIO(buffer[start:stop])
            environ["gunicorn.socket"] = client
            answered = lean.serve(environ)
            if answered is None:
                return buffer, lean.carried(environ)
            headers, payload = answered
            self.nr += 1
            if self.nr >= self.max_requests and self.alive:
                self.log.info("Autorestarting worker after current request.")
                self.alive = False
            closing = not self.alive
            client.sendall(self._response(headers, payload, closing))
            if self.access_line is not None:
                elapsed = timedelta(seconds=time.perf_counter() - started)
                self.access_line(_Sent(headers, len(payload)), None, environ, elapsed)
            if closing:
                return None
            buffer = buffer[stop:]
            take_turn(self, None, environ, None)

    def _read_body(self, client: Any, buffer: bytes, stop: int) -> bytes | None:
        """``buffer`` read on to ``stop`` bytes; ``None``: the client closed first (it is not answered), or the
        body did not arrive within the body deadline (answered 408, and the connection closes)."""
        timer = gevent.Timeout.start_new(self.lean.state.body_timeout_seconds)
        try:
            while len(buffer) < stop:
                data = client.recv(max(65536, stop - len(buffer)))
                if not data:
                    return None
                buffer += data
            return buffer
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
            status, headers, payload = self.lean.timed_out()
            client.sendall(self._response(headers, payload, True, f"{status} Request Timeout"))
            return None
        finally:
            timer.close()

    def _read_head(self, client: Any, buffer: bytes) -> tuple[bytes, int]:
        """``buffer`` read on until it holds a whole head, with the head's end; -1: the head is gunicorn's (not
        the lean path's request line, or too long); -2: the client closed, or sent no whole head within the
        keep-alive time (gunicorn's deadline for a head), counted from the first wait."""
        timer = None  # armed at the first read that has to wait: under load the next request is usually there
        try:
            while True:
                line = self._request_line
                if not (buffer.startswith(line) if len(buffer) >= len(line) else line.startswith(buffer)):
                    return buffer, -1
                if len(buffer) > HEAD_LIMIT or buffer.count(b"\n") != buffer.count(b"\r\n"):
                    return buffer, -1  # a bare LF: a head this reader never ends; gunicorn refuses it (400)
                data = _ready(client) if timer is None else None
                if data is None:
                    timer = timer or gevent.Timeout.start_new(self.cfg.keepalive)
                    data = client.recv(65536)
                if not data:
                    return buffer, -2
                buffer += data
                end = buffer.find(HEAD_END, max(0, len(buffer) - len(data) - len(HEAD_END)))
                if end >= 0:
                    return buffer, end
        except gevent.Timeout as exc:
            if exc is not timer:
                raise
            return buffer, -2
        finally:
            if timer is not None:
                timer.close()

    def _response(
        self, headers: list[tuple[str, str]], payload: bytes, closing: bool, status: str = "200 OK"
    ) -> bytes:
        """The response as gunicorn writes one: its status line and default headers, then the app's."""
        now = int(time.time())
        if self._date[0] != now:
            self._date = (now, f"Date: {util.http_date(now)}\r\n")
        head = [
            f"HTTP/1.1 {status}\r\nServer: {SERVER}\r\n",
            self._date[1],
            "Connection: close\r\n" if closing else "Connection: keep-alive\r\n",
            *[f"{name}: {value}\r\n" for name, value in headers],
            "\r\n",
        ]
        return "".join(head).encode("latin-1") + payload


def _ready(client: Any) -> bytes | None:
    """What the client has sent that can be read without waiting (``b""``: it closed); ``None``: nothing yet."""
    client.settimeout(0.0)
    try:
        return client.recv(65536)  # type: ignore[no-any-return]
    except BlockingIOError:
        return None
    finally:
        client.settimeout(None)


@dataclass(frozen=True, slots=True)
class _Sent:
    """What the JSON access line reads of a response gunicorn sent, for one this worker sent."""

    headers: list[tuple[str, str]]
    sent: int
    status_code: int = 200


class _Listener:
    """What gunicorn's handler asks of the listening socket of a connection it is handed: its name."""

    def __init__(self, name: Any) -> None:
        self.name = name

    def getsockname(self) -> Any:
        return self.name


class _Replayed(gevent.socket.socket):  # type: ignore[misc]
    """A client connection whose first bytes this worker already read: gunicorn's parser gets them first.

    The same socket (its descriptor moved over, so it is still a ``socket.socket`` to whoever checks), with
    what the lean path's look at its request must take to the app (``carried``)."""

    def __init__(self, client: Any, pending: bytes, carried: dict[str, Any]) -> None:
        super().__init__(client.family, client.type, client.proto, fileno=client.detach())
        self._pending = pending
        self.carried = carried

    def recv(self, size: int, flags: int = 0) -> bytes:
        if not self._pending:
            return super().recv(size, flags)  # type: ignore[no-any-return]
        data = self._pending[:size]
        if not flags:
            self._pending = self._pending[size:]
        return data


WSGIApp = Callable[
    [MutableMapping[str, Any], Callable[[str, Iterable[tuple[str, str]]], None]], Iterable[bytes]
]


def _carrying(app: WSGIApp) -> WSGIApp:
    """The app, taking into a handed-over request's environ what the lean path noted of it."""

    def serve(
        environ: MutableMapping[str, Any], start_response: Callable[[str, Iterable[tuple[str, str]]], None]
    ) -> Iterable[bytes]:
        carried = getattr(environ.get("gunicorn.socket"), "carried", None)
        if carried:
            environ.update(carried)
            environ["gunicorn.socket"].carried = None  # the first request only
        return app(environ, start_response)

    return serve
