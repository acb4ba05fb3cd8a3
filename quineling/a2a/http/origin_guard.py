"""The cross-site defences in front of every route but the health probes (docs/decisions/0006-security-defaults.md),
in the order they are checked:

1. **Host** (DNS rebinding): a web page whose own name is made to resolve to this agent reaches it with that
   name in ``Host``. Only the advertised host, the listener's, the loopback names and
   ``QUINELING_ALLOWED_HOSTS`` are served; any other is 421 Misdirected Request.
2. **Origin**: a browser names the page behind a request in ``Origin``. A page of another origin is refused
   (403) unless ``QUINELING_CORS_ORIGINS`` lists it; then its preflights are answered and its responses carry
   ``Access-Control-*`` headers.
3. **No simple requests**: a state-changing request needs a JSON ``Content-Type`` or an ``A2A-Version``
   header. A cross-site form or "simple" fetch can send neither without a preflight, which the agent answers
   only for the origins it allows (415; JSON-RPC 400, as for any other media-type error there).

Rules 1 and 2 are one hook that runs first of all; rule 3 is a second hook, which the app registers after
authentication (when that is configured), so an unauthenticated caller gets 401 before any media-type answer.
Refusals are in the shape of the binding asked for, and plain JSON elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from flask import Response, request

from quineling.a2a.endpoints import HEALTH_PATH, JSONRPC_PATH, READY_PATH, REST_PREFIX, under
from quineling.a2a.errors import A2AError, ContentTypeNotSupportedError, InvalidRequestError
from quineling.a2a.http.binding import is_json_media_type
from quineling.a2a.http.sse import compact
from quineling.network import DEFAULT_PORTS, Origin, host_pattern, parse_origin, split_host, split_list
from quineling.settings import Settings

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
# Orchestrators probe by pod IP; the probes disclose nothing and change nothing.
EXEMPT_PATHS = frozenset({HEALTH_PATH, READY_PATH})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# What a CORS caller may send (the methods and request headers the agent serves and reads) and read.
CORS_METHODS = "GET, POST, DELETE"
# Authorization carries the bearer token (docs/security.md); a page sets it itself, so it is a request header
# to allow like any other, not a CORS credential (those are cookies, which the agent never reads).
CORS_REQUEST_HEADERS = (
    "Content-Type, A2A-Version, A2A-Extensions, X-A2A-Extensions, If-None-Match, If-Modified-Since, "
    "Authorization"
)
CORS_EXPOSED_HEADERS = "ETag, Retry-After, WWW-Authenticate, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy"
CORS_MAX_AGE = "600"


@dataclass(frozen=True, slots=True)
class OriginGuard:
    hosts: frozenset[str]  # exact host names, lowercase, IPv6 without brackets
    domains: tuple[str, ...]  # ".example.com": that name and every name under it
    any_host: bool
    advertised: Origin | None
    cors: frozenset[Origin]
    any_cors: bool
    # Host headers seen and served: a handful per deployment, checked on every request. Only served ones are
    # kept, and only so many, so foreign names cannot grow it.
    _served: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> OriginGuard:
        advertised = urlsplit(settings.advertised_url)
        patterns = [host_pattern(entry) for entry in split_list(settings.allowed_hosts)]
        listener = settings.a2a_host
        if ":" in listener and not listener.startswith("["):  # a bare IPv6 address
            listener = f"[{listener}]"
        hosts = {*LOOPBACK_HOSTS, advertised.netloc, listener}
        names = {found[0] for found in map(split_host, hosts) if found is not None}
        names |= {p for p in patterns if p is not None and p != "*" and not p.startswith(".")}
        origins = split_list(settings.cors_origins)
        return cls(
            hosts=frozenset(names),
            domains=tuple(p for p in patterns if p is not None and p.startswith(".")),
            any_host="*" in patterns,
            advertised=parse_origin(f"{advertised.scheme}://{advertised.netloc}"),
            cors=frozenset(o for o in map(parse_origin, origins) if o is not None),
            any_cors="*" in origins,
        )

    # --- the hooks -------------------------------------------------------------------------------------

    def before_request(self) -> Response | None:
        """Flask ``before_request``, rules 1 and 2: a refusal, a preflight answer, or ``None`` to go on."""
        path = request.path
        if path in EXEMPT_PATHS:
            return None
        environ = request.environ  # read once: each access through the request proxy costs a lookup
        host: str | None = environ.get("HTTP_HOST")
        if host is not None and not self.host_allowed(host):
            # No Host at all is no browser (HTTP/1.0), so no rebinding page either.
            return _refuse(
                InvalidRequestError(
                    f"Host {host!r} is not served here: this agent answers to its advertised host "
                    "(QUINELING_BASE_URL), its listener address and loopback names; add other names to "
                    "QUINELING_ALLOWED_HOSTS",
                    http_status=421,
                )
            )
        method: str = environ.get("REQUEST_METHOD", "GET")
        origin: str | None = environ.get("HTTP_ORIGIN")
        if origin is not None:
            if self.cors_allowed(origin):
                if method == "OPTIONS" and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in environ:
                    return _preflight()
            elif not self.own_origin(origin, host, environ.get("wsgi.url_scheme", "http")):
                return _refuse(
                    InvalidRequestError(
                        f"Origin {origin!r} may not call this agent: a web page of another origin needs "
                        "to be listed in QUINELING_CORS_ORIGINS",
                        http_status=403,
                    )
                )
        return None

    def refuse_simple_request(self) -> Response | None:
        """Flask ``before_request``, rule 3: a refusal of a "simple" state-changing request, or ``None``. A hook
        of its own, registered after the authentication hook (quineling/app.py): like every media-type check
        it is for authenticated callers only, while a foreign Host or Origin is refused before any
        credential is looked at."""
        path = request.path
        if path in EXEMPT_PATHS:
            return None
        environ = request.environ
        method: str = environ.get("REQUEST_METHOD", "GET")
        if (
            method not in SAFE_METHODS
            and "HTTP_A2A_VERSION" not in environ
            and not is_json_media_type(environ.get("CONTENT_TYPE"))
            and request.routing_exception is None  # an unknown route or verb keeps its own 404 / 405
        ):
            return _refuse(
                ContentTypeNotSupportedError(
                    f"A {method} needs Content-Type: application/json or an A2A-Version header "
                    "(a cross-site form can send neither)",
                    http_status=400 if under(path, JSONRPC_PATH) else 415,
                )
            )
        return None

    def after_request(self, response: Response) -> Response:
        """Flask ``after_request``: with CORS configured, every answer varies by ``Origin``, and one to an
        allowed cross-site origin says so."""
        if not (self.cors or self.any_cors):
            return response
        response.vary.add("Origin")
        origin = request.environ.get("HTTP_ORIGIN")
        if origin is not None and self.cors_allowed(origin):
            response.headers["Access-Control-Allow-Origin"] = origin.strip()
            response.headers["Access-Control-Expose-Headers"] = CORS_EXPOSED_HEADERS
        return response

    # --- the rules -------------------------------------------------------------------------------------

    def host_allowed(self, header: str) -> bool:
        if self.any_host or header in self._served:
            return True
        if not self._host_allowed(header):
            return False
        if len(self._served) < 64:
            self._served[header] = True
        return True

    def _host_allowed(self, header: str) -> bool:
        found = split_host(header)
        if found is None:
            return False
        name = found[0]
        return name in self.hosts or any(name == d[1:] or name.endswith(d) for d in self.domains)

    def cors_allowed(self, header: str) -> bool:
        return self.any_cors or parse_origin(header) in self.cors

    def own_origin(self, header: str, host: str | None, scheme: str) -> bool:
        """The advertised origin, or the origin of the request's own ``Host`` and ``scheme`` (a page this agent
        served under an allowed name, such as the API page, calling back). The scheme counts: an https page
        is another origin than the http server of the same host and port."""
        origin = parse_origin(header)
        if origin is None:  # "null" (sandboxed frames, file: pages) or garbage
            return False
        if origin == self.advertised:
            return True
        found = split_host(host) if host is not None else None
        if found is None:
            return False
        return (
            origin[0] == scheme
            and origin[1] == found[0]
            and origin[2] == (DEFAULT_PORTS[origin[0]] if found[1] is None else found[1])
        )


def _preflight() -> Response:
    response = Response(status=204)
    response.headers["Access-Control-Allow-Methods"] = CORS_METHODS
    response.headers["Access-Control-Allow-Headers"] = CORS_REQUEST_HEADERS
    response.headers["Access-Control-Max-Age"] = CORS_MAX_AGE
    return response


def _refuse(error: A2AError) -> Response:
    """The refusal in the shape of the binding whose path was asked for: nothing of the body is read."""
    if under(request.path, JSONRPC_PATH):
        body = {"jsonrpc": "2.0", "id": None, "error": error.to_jsonrpc()}
    elif under(request.path, REST_PREFIX):
        body = error.to_rest()
    else:
        body = {"error": {"code": error.status_code, "message": error.message}}
    return Response(compact(body), status=error.status_code, mimetype="application/json")
