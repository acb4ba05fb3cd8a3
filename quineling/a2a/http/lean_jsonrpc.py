"""The JSON-RPC endpoint's common case served without Flask (docs/performance.md, "The lean JSON-RPC path").

Flask and werkzeug's request machinery took about a third of a GetTask's CPU and more than a quarter of a
SendMessage's. This WSGI middleware answers, itself, the one kind of request that makes nearly all of the
traffic: a well-formed 1.0 call of a non-streaming method, ``POST /a2a/jsonrpc`` with a JSON body of a stated
length, an acceptable Host and no browser ``Origin``, from a caller whose credential is valid and whose rate
budget is not spent. It is the second adapter over the JSON-RPC core (quineling/a2a/rpc.py), beside the Flask
view: the core judges the envelope (:func:`quineling.a2a.rpc.request_of`), holds the method table and answers
(:func:`quineling.a2a.rpc.answer`); the rest are the Flask endpoint's own pieces — the call context, the
authenticator, the rate limiter, the request's notes, metrics and log line — so the answer is byte for byte
the one the endpoint gives.

Anything else goes to the Flask app unchanged, which then answers it as always, errors included: the lean
path only decides to *serve* a request, never to refuse one. Before handing a request on it has read, at
most, the body (put back as the WSGI input) and checked a credential (pure); a rate-limit refusal it counted
travels with the request, so the Flask hook answers it without counting it twice. Nothing else happens
before the point where the request is the lean path's to answer.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from quineling.a2a.client_address import Network
from quineling.a2a.context import activated
from quineling.a2a.endpoints import JSONRPC_PATH
from quineling.a2a.errors import A2AError
from quineling.a2a.http import body as request_body
from quineling.a2a.http import observation
from quineling.a2a.http.binding import A2AState, is_json_media_type, make_call_context
from quineling.a2a.http.origin_guard import OriginGuard
from quineling.a2a.http.rate_limit import VERDICT_KEY, RateLimiter, Verdict, identity_of
from quineling.a2a.http.sse import compact
from quineling.a2a.rpc import METHODS, Method, Reject, answer, is_notification, params_of, request_of
from quineling.a2a.versions import normalize_version
from quineling.auth import AuthenticationFailed, AuthenticationUnavailable, Authenticator, Principal
from quineling.observe import notes
from quineling.worker_state import close_connection, within, worker_stopping
from stores.errors import StoreError

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# The non-streaming 1.0 methods: a stream's answer is Flask's (its slot, its keep-alives, its rechecks).
LEAN_METHODS: dict[str, Method] = {
    name: method for name, method in METHODS.items() if not (method.streaming or method.subscription)
}
# Where the app publishes this path in ``app.extensions``, for the lean worker (quineling/server/lean_worker.py).
EXTENSION_KEY = "quineling.lean_jsonrpc"
_SERVER_INPUT = "quineling.lean.server_input"
_DECLINED = "quineling.lean.declined"  # the lean worker declined the request: Flask's alone
_PRINCIPAL = "quineling.lean.principal"  # who the head's credential names (admit)
_HANDED_ON = object()  # what _count says of a request that Flask is to answer
_ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})


@dataclass(frozen=True, slots=True)
class _Call:
    rpc_id: Any
    name: str
    method: Method
    params: dict[str, Any]
    principal: Principal | None


class LeanJsonRpc:
    """WSGI middleware in front of the Flask app (``app.wsgi_app``): see the module docstring."""

    def __init__(
        self,
        app: WSGIApp,
        state: A2AState,
        guard: OriginGuard,
        authenticator: Authenticator | None,
        limiter: RateLimiter | None,
        trusted_proxies: Sequence[Network],
    ) -> None:
        self.app = app
        self.state = state
        self.guard = guard
        self.authenticator = authenticator
        self.limiter = limiter
        self.trusted_proxies = trusted_proxies
        # With CORS configured every answer varies by Origin (the guard's after-request hook): Flask's then; and
        # a card that offers no 1.0 JSON-RPC leaves every call to the endpoint's version check.
        self.enabled = not (guard.cors or guard.any_cors) and "1.0" in state.supported_versions("JSONRPC")
        self.path = JSONRPC_PATH

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if (
            self.enabled
            and _DECLINED not in environ  # the lean worker's look at it, handed over: not a second one
            and environ.get("PATH_INFO") == JSONRPC_PATH
            and environ.get("REQUEST_METHOD") == "POST"
        ):
            try:
                answered = self.serve(environ)
            except TimeoutError:  # the body did not arrive in time: 408, and the connection closes
                close_connection(environ.get(_SERVER_INPUT, environ.get("wsgi.input")))
                status, headers, payload = self.timed_out()
                start_response(f"{status} Request Timeout", headers)
                return [payload]
            if answered is not None:
                headers, payload = answered
                start_response("200 OK", headers)
                return [payload]
        return self.app(environ, start_response)

    def serve(self, environ: dict[str, Any]) -> tuple[list[tuple[str, str]], bytes] | None:
        """The answer's headers and body (status 200), or ``None``: Flask's to answer (the body put back if it
        was read, and what Flask must know of the look taken in :meth:`carried`)."""
        started = time.perf_counter()
        accepted = self._accept(environ)
        if accepted is None:
            return None
        try:
            ctx = make_call_context(
                environ, accepted.params.get("tenant"), "1.0", accepted.principal, self.state.tenants
            )
        except A2AError:
            return None  # an unserved tenant, say: the endpoint answers it
        verdict = self._count(environ, accepted.principal)
        if verdict is _HANDED_ON:
            return None
        current = notes.begin(
            observation.request_id(environ.get("HTTP_X_REQUEST_ID")), "jsonrpc", accepted.name
        )
        try:
            envelope = answer(accepted.method, self.state.service, accepted.params, ctx, accepted.rpc_id)
            payload = compact(envelope).encode("utf-8")
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
            if ctx.extensions and (echoed := activated(ctx.extensions, self.state.declared_extensions())):
                headers.append(("A2A-Extensions", echoed))  # as binding.echo_extensions does
            if isinstance(verdict, Verdict):
                headers += verdict.headers().items()
            headers.append((observation.REQUEST_ID_HEADER, current.request_id))
            observation.record(
                current,
                status=200,
                seconds=time.perf_counter() - started,
                client=environ.get("REMOTE_ADDR"),
                principal=accepted.principal,
                http_method="POST",
                path=JSONRPC_PATH,
            )
            if worker_stopping():  # told to stop while answering: close after it, as close_if_stopping does
                close_connection(environ[_SERVER_INPUT])
            return headers, payload
        finally:
            notes.end()

    @staticmethod
    def carried(environ: dict[str, Any]) -> dict[str, Any]:
        """What a request :meth:`serve` declined must take to Flask when it reaches Flask in another environ
        (the lean worker's hand-over): that it was declined, so this middleware does not look at it (count it,
        authenticate it) again, and a rate-limit refusal already counted."""
        if VERDICT_KEY in environ:
            return {_DECLINED: True, VERDICT_KEY: environ[VERDICT_KEY]}
        return {_DECLINED: True}

    def admit(self, environ: dict[str, Any]) -> bool:
        """Whether the request may be the lean path's, judged from its head alone, before any of its body is
        read: a head the lean path would decline (missing or invalid credentials, a declared length over the
        limit, a browser Origin…) goes to Flask unread, which refuses it before reading the body and closes
        the connection — so a client without credentials cannot make a worker wait for a body. The principal
        found is kept in the environ: a request is authenticated here once."""
        if (
            environ.get("QUERY_STRING")
            or "HTTP_ORIGIN" in environ
            or "HTTP_TRANSFER_ENCODING" in environ
            or "HTTP_CONTENT_ENCODING" in environ
            or normalize_version(environ.get("HTTP_A2A_VERSION")) != "1.0"
            or not is_json_media_type(environ.get("CONTENT_TYPE"))
            or worker_stopping()  # the endpoint closes the connection after its answer
        ):
            return False
        host = environ.get("HTTP_HOST")
        if host is not None and not self.guard.host_allowed(host):
            return False
        length = environ.get("CONTENT_LENGTH") or ""
        if not length.isdigit() or not 0 < int(length) <= self.state.request_limit_bytes:
            return False
        principal: Principal | None = None
        if self.authenticator is not None:
            try:
                principal = self.authenticator.authenticate(environ.get("HTTP_AUTHORIZATION"))
            except (AuthenticationFailed, AuthenticationUnavailable):
                return False
        environ[_PRINCIPAL] = principal
        return True

    def timed_out(self) -> tuple[int, list[tuple[str, str]], bytes]:
        """The answer to a call whose body did not arrive within the deadline: as the Flask endpoint's."""
        error = request_body.body_timed_out(self.state.body_timeout_seconds)
        payload = compact({"jsonrpc": "2.0", "id": None, "error": error.to_jsonrpc()}).encode("utf-8")
        return (
            error.status_code,
            [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
            payload,
        )

    def _accept(self, environ: dict[str, Any]) -> _Call | None:
        """The call, when it is one the lean path serves."""
        if _PRINCIPAL not in environ and not self.admit(environ):
            return None
        length = int(environ["CONTENT_LENGTH"])
        original = environ["wsgi.input"]
        # The lean worker's input holds the whole body; a server's stream is read within the body deadline
        # (a TimeoutError then reaches __call__, which answers 408).
        if isinstance(original, io.BytesIO):
            raw = original.read(length)
        else:
            with within(environ.get("gunicorn.socket"), self.state.body_timeout_seconds):
                raw = original.read(length)
        environ["wsgi.input"] = io.BytesIO(raw)  # for Flask, should it answer after all
        environ[_SERVER_INPUT] = (
            original  # what the server knows the request by (worker_state.close_connection)
        )
        request_body.mark_read(environ)
        if len(raw) != length:
            return None
        # The core judges the envelope; whatever it refuses, or the lean path does not serve (a member beyond
        # the envelope's, a stream, an unknown or v0.3 method, bad params), the endpoint answers.
        try:
            document = request_of(raw)
        except Reject:
            return None
        method = LEAN_METHODS.get(document["method"])
        if method is None or is_notification(document) or not document.keys() <= _ENVELOPE_KEYS:
            return None
        try:
            params = params_of(method, document.get("params"))
        except A2AError:
            return None
        return _Call(document["id"], document["method"], method, params, environ[_PRINCIPAL])

    def _count(self, environ: dict[str, Any], principal: Principal | None) -> Verdict | None | object:
        """The request counted against its rate budget: its verdict when allowed, ``None`` without limits,
        ``_HANDED_ON`` when Flask is to answer (a refusal, handed on with the request; or a store that cannot
        count, which the Flask hook then meets itself)."""
        if self.limiter is None:
            return None
        try:
            verdict = self.limiter.check(identity_of(environ, principal, self.trusted_proxies))
        except StoreError:
            return _HANDED_ON
        if not verdict.allowed:
            environ[VERDICT_KEY] = verdict
            return _HANDED_ON
        return verdict
