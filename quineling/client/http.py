"""The HTTP layer every transport goes through: httpx with separate connect / read / stream timeouts, the
retry rule, the circuit breaker and latency tracking, and error mapping that never leaks a secret.

**The retry rule** (docs/client.md, "Retries"): an attempt is repeated — up to ``RetryPolicy.retries`` times,
with backoff and jitter, at least ``Retry-After`` apart — when it failed with a connection error before
anything was sent (any request: the agent never saw it), or, for a request that is *safe to repeat*, when it
timed out, the connection broke, or the agent answered 429, 502, 503 or 504. Safe to repeat: reading the card,
GetTask, ListTasks, SubscribeToTask, reading/listing/deleting push configs, the extended card, and a send that
carries an ``Idempotency-Key`` (the caller's promise that the agent deduplicates it). Any other send, a cancel
and a push-config create are never repeated after they may have reached the agent.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from httpx_sse import EventSource, SSEError

from quineling.client.breaker import CircuitBreaker
from quineling.client.credentials import Credentials
from quineling.client.errors import (
    A2A_CODES,
    A2AClientError,
    AgentError,
    AgentUnreachable,
    AuthenticationFailed,
    ClientTimeout,
    ProtocolError,
    error_info_reasons,
)
from quineling.client.latency import TRACKER, LatencyTracker
from quineling.client.origins import CredentialsNotSent, origin_of
from quineling.client.retry import RetryPolicy, parse_retry_after

RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_EVENT_BYTES = 4 * 1024 * 1024  # one SSE event's data; a larger one is refused (a runaway stream)
CHUNK = 64 * 1024
USER_AGENT = "quineling-client"


@dataclass(frozen=True)
class Timeouts:
    """Seconds. ``connect``: to open a connection; ``read``: for an answer to a request; ``stream``: of silence
    on an open event stream (servers send keepalives, so a long gap means a dead stream); ``card``: for a
    whole card fetch, from the first connection to the last byte, however slowly the agent sends it."""

    connect: float = 5.0
    read: float = 30.0
    stream: float = 300.0
    card: float = 30.0

    def httpx(self, *, streaming: bool = False) -> httpx.Timeout:
        read = self.stream if streaming else self.read
        return httpx.Timeout(connect=self.connect, read=read, write=self.read, pool=self.connect)


@dataclass
class HttpCall:
    method: str
    url: str
    body: Any = None  # JSON; None: no body
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    repeatable: bool = False
    stream: bool = False
    operation: str = ""
    read_timeout: float | None = None  # overrides the read (or stream) timeout, e.g. to meet a deadline
    deadline: float | None = None  # time.monotonic() by which the whole exchange, retries included, ends
    budget: float = 0.0  # the seconds that deadline allowed (for messages)
    trace: Callable[[str, dict[str, Any]], None] | None = None  # httpcore's trace extension


def public_url(url: str | httpx.URL) -> str:
    """``url`` without its query string and user info: what errors may show."""
    parts = urlsplit(str(url))
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class StreamCut(Exception):  # an outcome, not an error for callers: the stream ended early
    """An event stream broke before the agent closed it cleanly (caught by the resuming subscriber)."""


@dataclass(frozen=True)
class SSEItem:
    id: str  # the SSE id (the last one the server sent, "" if none)
    event: str  # the SSE event name ("message" unless set)
    data: Any  # decoded JSON


class Channel:
    """One agent's HTTP connection pool plus its resilience policy."""

    def __init__(
        self,
        agent: str,
        *,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        credentials: Credentials | None = None,
        headers: dict[str, str] | None = None,
        insecure: bool = False,
        latency: LatencyTracker = TRACKER,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.agent = agent
        self.timeouts = timeouts or Timeouts()
        self.retry = retry if retry is not None else RetryPolicy()
        self.breaker = breaker or CircuitBreaker()
        self.credentials = credentials or Credentials()
        self.latency = latency
        self.auth_headers: dict[str, str] = {}
        self.auth_query: dict[str, str] = {}
        # The only origins auth_headers/auth_query go to (set with them by A2AClient; see origins.py).
        self.credential_origins: frozenset[str] = frozenset()
        self.on_withheld: Callable[[CredentialsNotSent], None] = _warn
        self._withheld: set[str] = set()
        self.client = httpx.Client(
            verify=not insecure,
            timeout=self.timeouts.httpx(),
            headers={"User-Agent": USER_AGENT, **(headers or {})},
            transport=transport,
            trust_env=True,  # HTTP(S)_PROXY, NO_PROXY, SSL_CERT_FILE, as other HTTP tools honour them
        )

    def close(self) -> None:
        self.client.close()

    def redact(self, text: str) -> str:
        return self.credentials.redact(text)

    # --- one request, with retries -----------------------------------------------------------------------

    def send(self, call: HttpCall) -> httpx.Response:
        """Send ``call`` under the retry rule and the breaker. A streamed response is returned open (close it);
        others are read. Transport failures raise; HTTP errors are returned for the transport to map."""
        attempt = 0
        while True:
            self._check_deadline(call)
            self.breaker.before(self.agent)
            started = time.monotonic()
            try:
                response = self.client.send(self._build(call), stream=call.stream)
            except httpx.TransportError as exc:
                self.breaker.failure(self.agent)
                self._check_deadline(call)
                never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                error = self._transport_error(exc, call)
                wait = self.retry.delay(attempt, None) if (never_sent or call.repeatable) else None
                if wait is None or not self._time_for(call, wait):
                    raise error from None
            else:
                if not call.stream:  # a stream's latency is its first event's (see events())
                    self.latency.record(self.agent, time.monotonic() - started)
                status = response.status_code
                if status >= 500 or status == 429:
                    self.breaker.failure(self.agent)
                else:
                    self.breaker.success(self.agent)
                if status not in RETRY_STATUSES or not call.repeatable:
                    return response
                wait = self.retry.delay(attempt, parse_retry_after(response.headers.get("Retry-After")))
                if wait is None or not self._time_for(call, wait):
                    return response
                response.close()
            self.retry.sleep(wait)
            attempt += 1

    def _check_deadline(self, call: HttpCall) -> None:
        if call.deadline is not None and time.monotonic() >= call.deadline:
            raise self.deadline_error(call)

    @staticmethod
    def _time_for(call: HttpCall, wait: float) -> bool:
        return call.deadline is None or time.monotonic() + wait < call.deadline

    def deadline_error(self, call: HttpCall) -> ClientTimeout:
        return ClientTimeout(f"{call.operation or call.method} {public_url(call.url)}: not complete within "
                             f"{call.budget:g}s (the deadline for the whole exchange)",
                             hint="the agent is slow or stuck; raise the timeout or try later")  # fmt: skip

    def _credentials_for(self, url: str) -> tuple[dict[str, str], dict[str, str]]:
        """The credential headers and query parameters for ``url``: none unless its origin was named or
        allowed (the first request to any other origin reports it through ``on_withheld``)."""
        if not (self.auth_headers or self.auth_query):
            return {}, {}
        origin = origin_of(url) or url
        if origin in self.credential_origins:
            return self.auth_headers, self.auth_query
        if origin not in self._withheld:
            self._withheld.add(origin)
            self.on_withheld(CredentialsNotSent(origin, self.credential_origins))
        return {}, {}

    def _build(self, call: HttpCall) -> httpx.Request:
        auth_headers, auth_query = self._credentials_for(call.url)
        headers = {**call.headers, **auth_headers}
        params = {**call.params, **auth_query}
        content = None
        if call.body is not None:
            content = json.dumps(call.body, separators=(",", ":")).encode()
            headers.setdefault("Content-Type", "application/json")
        return self.client.build_request(
            call.method,
            call.url,
            content=content,
            params=params or None,
            headers=headers,
            timeout=self._timeout(call),
            extensions={"trace": call.trace} if call.trace else None,
        )

    def _timeout(self, call: HttpCall) -> httpx.Timeout:
        timeout = self.timeouts.httpx(streaming=call.stream)
        limit = call.read_timeout
        if call.deadline is not None:
            left = max(0.001, call.deadline - time.monotonic())
            limit = left if limit is None else min(limit, left)
        if limit is None:
            return timeout
        return httpx.Timeout(connect=min(self.timeouts.connect, limit), read=limit,
                             write=min(self.timeouts.read, limit), pool=min(self.timeouts.connect, limit))  # fmt: skip

    def _transport_error(self, exc: httpx.TransportError, call: HttpCall) -> A2AClientError:
        where = f"{call.operation or call.method} {public_url(call.url)}"
        if isinstance(exc, httpx.ConnectTimeout):
            return ClientTimeout(f"{where}: no connection within {self.timeouts.connect}s (connect timeout)",
                                 hint="is the agent up and reachable?")  # fmt: skip
        if isinstance(exc, httpx.TimeoutException):
            limit = call.read_timeout or (self.timeouts.stream if call.stream else self.timeouts.read)
            return ClientTimeout(f"{where}: no answer within {limit}s ({'stream' if call.stream else 'read'} "
                                 "timeout)", hint="the agent is slow or stuck; raise the timeout or try later")  # fmt: skip
        if isinstance(exc, httpx.ConnectError):
            return AgentUnreachable(f"{where}: cannot connect ({self.redact(type(exc).__name__)})",
                                    hint="is the agent up, and is the URL right?")  # fmt: skip
        return AgentUnreachable(f"{where}: the connection failed ({type(exc).__name__})")

    # --- reading answers ---------------------------------------------------------------------------------

    def json_body(self, response: httpx.Response, call: HttpCall) -> Any:
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            kind = response.headers.get("content-type", "no content type")
            raise ProtocolError(
                f"{call.operation or call.method} {public_url(call.url)}: the agent answered HTTP "
                f"{response.status_code} with a body that is not JSON ({kind})",
                hint="the card may point at something that is not this A2A binding",
            ) from None

    def http_error(self, response: httpx.Response, call: HttpCall, body: Any = None) -> A2AClientError:
        """The error for a non-2xx answer: authentication, unreachable (502-504), or the agent's A2A error
        (its ErrorInfo reason when given, else ``HTTP <status>``)."""
        status = response.status_code
        where = f"{call.operation or call.method} {public_url(call.url)}"
        error = body.get("error") if isinstance(body, dict) else None
        message = self.redact(str(error.get("message", ""))) if isinstance(error, dict) else ""
        reason = _error_reason(error) if isinstance(error, dict) else None
        detail = f": {message}" if message else ""
        if status in (401, 403):
            challenge = response.headers.get("WWW-Authenticate", "")
            return AuthenticationFailed(
                f"{where}: HTTP {status}{detail}",
                hint=(
                    "the agent wants credentials (--bearer / --api-key)"
                    if status == 401
                    else "the credentials are not allowed to do this"
                )
                + (f"; it asks for {challenge.split()[0]}" if challenge else ""),  # fmt: skip
            )
        retry_after = response.headers.get("Retry-After")
        later = f"; the agent asks to retry after {retry_after}s" if retry_after else ""
        if status in (502, 503, 504) and reason not in A2A_CODES:
            return AgentUnreachable(
                f"{where}: HTTP {status}{detail}", hint=f"the agent is unavailable{later}"
            )
        return AgentError(
            f"{where}: {reason or f'HTTP {status}'}{detail}",
            reason=reason or f"HTTP {status}",
            http_status=status,
            hint=f"rate limited{later}" if status == 429 else None,
        )

    # --- event streams -----------------------------------------------------------------------------------

    @contextmanager
    def open_stream(self, call: HttpCall) -> Iterator[httpx.Response]:
        call.stream = True
        response = self.send(call)
        try:
            yield response
        finally:
            response.close()

    def events(self, response: httpx.Response, call: HttpCall) -> Iterator[SSEItem]:
        """The SSE events of an open stream response; a broken stream raises :class:`StreamCut`, a silent
        one :class:`ClientTimeout`."""
        started = time.monotonic()
        first = True
        try:
            for sse in EventSource(response).iter_sse():
                if first:
                    first = False
                    self.latency.record(self.agent, time.monotonic() - started)
                if len(sse.data) > MAX_EVENT_BYTES:
                    raise ProtocolError(f"{call.operation}: an event of over {MAX_EVENT_BYTES} bytes")
                if not sse.data:
                    continue
                try:
                    data = json.loads(sse.data)
                except json.JSONDecodeError:
                    raise ProtocolError(
                        f"{call.operation} {public_url(call.url)}: an event whose data is not JSON"
                    ) from None
                yield SSEItem(sse.id, sse.event or "message", data)
        except httpx.TimeoutException:
            raise ClientTimeout(
                f"{call.operation} {public_url(call.url)}: no event for {call.read_timeout or self.timeouts.stream}s "
                "(stream timeout)"
            ) from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.NetworkError) as exc:
            raise StreamCut(type(exc).__name__) from None
        except SSEError as exc:
            raise ProtocolError(f"{call.operation}: {exc}") from None


class Watchdog:
    """Ends one exchange at its deadline however the agent paces it: httpx's read timeout is per read, so an
    agent sending one byte a second (in the head or the body) would hold it for ever. Every connection the
    exchange opens is seen through httpcore's ``trace`` extension (and the answer's ``network_stream``), and
    a timer shuts those sockets down when the deadline passes, which wakes the blocked read; :attr:`fired`
    then tells the caller the failure was the deadline's. The request carries ``Connection: close`` so it
    never shares a pooled connection another request could be using."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False
        self._done = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            self._done = True

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            self.watch(info.get("return_value"))

    def watch(self, stream: Any) -> None:
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.append(sock)
                if self.fired:
                    _cut(sock)

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            for sock in self._sockets:
                _cut(sock)


def _cut(sock: socket.socket) -> None:
    try:  # the plain socket's shutdown, also for a TLS one: it only wakes the reader, leaving TLS state alone
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def read_capped(channel: Channel, response: httpx.Response, call: HttpCall, limit: int,
                watchdog: Watchdog | None = None) -> bytes:  # fmt: skip
    """The body of a streamed ``response``, refused once it passes ``limit`` bytes (decoded, so a compressed
    bomb counts at its real size) or ``call.deadline``; the response is closed either way."""
    where = f"{call.operation or call.method} {public_url(call.url)}"
    too_big = ProtocolError(f"{where}: the answer is larger than {limit} bytes, the most accepted",
                            hint="is this an A2A agent? a card or health answer is a few kilobytes")  # fmt: skip
    if watchdog is not None:
        watchdog.watch(response.extensions.get("network_stream"))
    try:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit and not response.headers.get("Content-Encoding"):
            raise too_big
        body = bytearray()
        for chunk in response.iter_bytes(CHUNK):
            body += chunk
            if len(body) > limit:
                raise too_big
            if call.deadline is not None and time.monotonic() >= call.deadline:
                raise channel.deadline_error(call)
    except (httpx.HTTPError, OSError) as exc:
        if watchdog is not None and watchdog.fired or isinstance(exc, httpx.TimeoutException):
            raise channel.deadline_error(call) from None
        raise AgentUnreachable(
            f"{where}: the connection failed while reading ({type(exc).__name__})"
        ) from None
    finally:
        response.close()
    if watchdog is not None and watchdog.fired:  # cut short: what arrived may end where the cut fell
        raise channel.deadline_error(call)
    return bytes(body)


def _warn(notice: CredentialsNotSent) -> None:
    warnings.warn(notice, stacklevel=4)


def _error_reason(error: dict[str, Any]) -> str | None:
    """The ErrorInfo reason of a google.rpc.Status body (domain a2a-protocol.org when given)."""
    reasons = error_info_reasons(error.get("details"))
    if reasons:
        return reasons[0]
    status = error.get("status")
    return str(status) if isinstance(status, str) and status else None


def is_event_stream(response: httpx.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")
