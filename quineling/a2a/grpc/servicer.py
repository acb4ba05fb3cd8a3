"""``lf.a2a.v1.A2AService`` served from :class:`~quineling.a2a.service.A2AService`, with what the HTTP edge
does around each call, through the same shared pieces:

- **credentials** from the ``authorization`` metadata (``Bearer <token>``), checked by the same
  :class:`~quineling.auth.Authenticator` — same principals, same isolation — and re-checked while a stream is
  open (:mod:`quineling.auth.recheck`);
- **rate limits** counted by the same :class:`~quineling.a2a.rate_limits.RateLimiter`, so a caller has one
  budget across the bindings;
- ``a2a-version`` (absent: 1.0, since ``lf.a2a.v1`` exists only in 1.0), ``a2a-extensions`` (echoed in the
  initial metadata as activated), ``last-event-id`` (a resumed SubscribeToTask), ``idempotency-key`` (a
  retried send) and ``quineling-current-generation`` (a long-poll GetTask) from the metadata, the tenant from
  the request; the :class:`~quineling.a2a.context.CallContext` made by :func:`~quineling.a2a.context.
  call_context`, as on HTTP;
- each call counted, timed and logged by :func:`quineling.a2a.request_log.record` under the binding
  ``grpc``, its method and its outcome;
- streams from the same following code as SSE, each SubscribeToTask holding one of the server's stream
  slots; a stream ends when its client goes, or when the server stops (``stopping``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn
from urllib.parse import unquote

import grpc
from a2a.types import a2a_pb2_grpc
from google.protobuf.message import Message

from quineling.a2a import outcomes
from quineling.a2a.card import supported_versions
from quineling.a2a.client_address import Network
from quineling.a2a.context import CallContext, activated, call_context, split_extensions
from quineling.a2a.errors import A2AError, InvalidParamsError, UnavailableError, as_a2a_error
from quineling.a2a.grpc import messages
from quineling.a2a.grpc.status import CredentialsUnavailableError, UnauthenticatedError, status_of
from quineling.a2a.rate_limits import RateLimitedError, RateLimiter, caller_budget
from quineling.a2a.request_log import record, request_id
from quineling.a2a.rpc import METHODS
from quineling.a2a.service import A2AService
from quineling.a2a.stream_slots import StreamLimitError, StreamSlots
from quineling.a2a.versions import check_supported, normalize_version
from quineling.auth import AuthenticationFailed, AuthenticationUnavailable, Authenticator, Principal
from quineling.auth.recheck import STREAM_RECHECK_SECONDS, rechecked, still_valid
from quineling.observe import notes
from stores.errors import StoreError

log = logging.getLogger(__name__)

BINDING = "GRPC"  # the card's protocolBinding
SERVICE_NAME = "lf.a2a.v1.A2AService"
CURRENT_GENERATION_KEY = "quineling-current-generation"


@dataclass(slots=True)
class GrpcEdge:
    """What the servicer needs of the composition root: the service and the shared guards."""

    service: A2AService
    authenticator: Authenticator | None = None
    limiter: RateLimiter | None = None
    trusted_proxies: Sequence[Network] = ()
    tenants: frozenset[str] | None = frozenset()  # served besides the default tenant; None = any
    streams: StreamSlots = field(default_factory=lambda: StreamSlots(16))
    stopping: threading.Event = field(default_factory=threading.Event)  # set when the server stops
    # Streams end early also when this says so: the gunicorn worker the server runs in is stopping.
    also_stop: Callable[[], bool] = lambda: False


@dataclass(slots=True)
class _Call:
    method: str
    started: float
    peer: str
    metadata: dict[str, str]
    principal: Principal | None = None
    status: int = 200  # the HTTP status of the same answer, for the log line and the outcome label


def _peer_address(peer: str) -> str:
    """The address of grpc's peer string (``ipv4:127.0.0.1:5000``, ``ipv6:%5B::1%5D:5000``, ``unix:…``)."""
    kind, _, rest = unquote(peer).partition(":")
    if kind == "ipv6" and rest.startswith("["):
        return rest[1 : rest.find("]")]
    if kind == "ipv4":
        return rest.rsplit(":", 1)[0]
    return rest


class A2AServicer(a2a_pb2_grpc.A2AServiceServicer):
    def __init__(self, edge: GrpcEdge) -> None:
        self.edge = edge
        card = edge.service.card("1.0")
        self._versions = supported_versions(card, BINDING) or frozenset({"1.0"})
        extensions = card.get("capabilities", {}).get("extensions", [])
        self._declared = frozenset(e["uri"] for e in extensions)

    # -- the methods (bound below the class, one per A2A method) ---------------------------------------

    # -- around every call -----------------------------------------------------------------------------

    def _unary(self, method: str, request: Message, context: grpc.ServicerContext) -> Message:
        call = self._begin(method, context)
        try:
            ctx, params = self._prepare(call, request, context)
            result = METHODS[method].call(self.edge.service, params, ctx)
            outcomes.note_result(result)
            return messages.response_of(method, result)
        except Exception as exc:  # noqa: BLE001 - every failure is answered as a gRPC status
            self._fail(call, context, exc)
        finally:
            self._finish(call)

    def _stream(self, method: str, request: Message, context: grpc.ServicerContext) -> Iterator[Message]:
        call = self._begin(method, context)
        release: Callable[[], None] | None = None
        events: Iterator[Any] | None = None
        try:
            ctx, params = self._prepare(call, request, context)
            spec = METHODS[method]
            # The call checks the task (or runs the send) before a slot is taken, as on HTTP.
            events = iter(spec.call(self.edge.service, params, ctx))
            if spec.subscription:
                release = self.edge.streams.acquire()
                if release is None:
                    raise StreamLimitError(self.edge.streams.limit)
            if call.principal is not None and self.edge.authenticator is not None:
                events = self._rechecked(events, call)
            for event in events:
                if event is None:
                    continue  # a keep-alive: HTTP/2 pings keep an idle gRPC stream's connection alive
                yield messages.stream_response(event)
        except Exception as exc:  # noqa: BLE001 - every failure is answered as a gRPC status
            self._fail(call, context, exc)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
            if release is not None:
                release()
            self._finish(call)

    def _rechecked(self, events: Iterator[Any], call: _Call) -> Iterator[Any]:
        authenticator, principal = self.edge.authenticator, call.principal
        assert authenticator is not None and principal is not None
        header = call.metadata.get("authorization")
        return rechecked(
            events, lambda: still_valid(authenticator, header, principal), STREAM_RECHECK_SECONDS
        )

    def _begin(self, method: str, context: grpc.ServicerContext) -> _Call:
        metadata: dict[str, str] = {}
        for key, value in context.invocation_metadata() or ():
            if isinstance(value, str):
                metadata.setdefault(key.lower(), value)
        notes.begin(request_id(metadata.get("x-request-id")), "grpc", method)
        return _Call(method, time.perf_counter(), context.peer() or "", metadata)

    def _prepare(
        self, call: _Call, request: Message, context: grpc.ServicerContext
    ) -> tuple[CallContext, dict[str, Any]]:
        """Authenticate, count, check the version, and make the call's context and params."""
        metadata, edge = call.metadata, self.edge
        if edge.authenticator is not None:
            try:
                call.principal = edge.authenticator.authenticate(metadata.get("authorization"))
            except AuthenticationFailed:
                raise UnauthenticatedError() from None
            except AuthenticationUnavailable:
                raise CredentialsUnavailableError() from None
        if edge.limiter is not None:
            budget = caller_budget(
                call.principal,
                _peer_address(call.peer),
                metadata.get("x-forwarded-for"),
                edge.trusted_proxies,
            )
            try:
                verdict = edge.limiter.check(budget)
            except StoreError as exc:
                raise UnavailableError("Rate limiting is unavailable; retry later") from exc
            if not verdict.allowed:
                if verdict.first_refusal:
                    log.info("rate limited: %s is over %s", budget, verdict.limit.text)
                raise RateLimitedError(verdict.limit.text, verdict.reset_seconds)
        version = normalize_version(metadata.get("a2a-version") or "1.0")
        check_supported(BINDING, version, self._versions)
        params = messages.params_of(request)
        generation = metadata.get(CURRENT_GENERATION_KEY)
        if generation is not None and call.method == "GetTask":
            if not generation.isdecimal():
                raise InvalidParamsError(f"{CURRENT_GENERATION_KEY} must be a non-negative integer")
            params["currentGeneration"] = int(generation)
        notes.note_task(params.get("id") if call.method != "SendMessage" else None)
        requested = split_extensions(metadata.get("a2a-extensions"))
        ctx = call_context(
            params.get("tenant"),
            version,
            call.principal,
            edge.tenants,
            extensions=requested,
            should_stop=lambda: edge.stopping.is_set() or edge.also_stop() or not context.is_active(),
            last_event_id=metadata.get("last-event-id"),
            idempotency_key=metadata.get("idempotency-key"),
        )
        echoed = activated(requested, self._declared)
        if echoed:
            context.send_initial_metadata((("a2a-extensions", echoed),))
        return ctx, params

    def _fail(self, call: _Call, context: grpc.ServicerContext, exc: Exception) -> NoReturn:
        error: A2AError = as_a2a_error(exc)
        outcomes.note_error(error)
        call.status = error.status_code
        context.abort_with_status(status_of(error))
        raise AssertionError("abort_with_status raises")  # pragma: no cover

    def _finish(self, call: _Call) -> None:
        current = notes.current()
        if current is not None:
            record(
                current,
                status=call.status,
                seconds=time.perf_counter() - call.started,
                client=_peer_address(call.peer) or None,
                principal=call.principal,
                http_method="POST",
                path=f"/{SERVICE_NAME}/{call.method}",
            )
        notes.end()


def _unary_method(name: str) -> Callable[[A2AServicer, Message, grpc.ServicerContext], Message]:
    def method(self: A2AServicer, request: Message, context: grpc.ServicerContext) -> Message:
        return self._unary(name, request, context)

    method.__name__ = name
    return method


def _stream_method(name: str) -> Callable[[A2AServicer, Message, grpc.ServicerContext], Iterator[Message]]:
    def method(self: A2AServicer, request: Message, context: grpc.ServicerContext) -> Iterator[Message]:
        return self._stream(name, request, context)

    method.__name__ = name
    return method


# Every method of lf.a2a.v1.A2AService, by its A2A name: the streaming ones are server streams.
for _name, _spec in METHODS.items():
    setattr(A2AServicer, _name, (_stream_method if _spec.streaming else _unary_method)(_name))
