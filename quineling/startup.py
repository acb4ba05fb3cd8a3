"""What the gunicorn master says when it is ready: a one-line banner, and a clear error when the store cannot
be reached (docs/deployment.md, "Start-up and shutdown").

The master imports neither redis nor ssl (docs/deployment.md, "Worker model"), so the store is probed with a
plain connect to its address: enough to tell "nothing listens there" from "something does"; a server that
refuses the credentials shows in ``/readyz`` and the workers' log. An unreachable store does not stop the
start: the workers serve, ``/readyz`` answers 503 until the store answers, and everything recovers by itself
when it does.
"""

from __future__ import annotations

import errno
import socket
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from quineling.version import __version__
from stores.redis.cluster_url import cluster_hosts

SECRET_QUERY_KEYS = frozenset({"password", "pass", "passwd", "pwd", "token", "secret"})


class Facts(Protocol):
    """The settings the banner reports (a :class:`quineling.config.Settings`)."""

    @property
    def advertised_url(self) -> str: ...
    @property
    def store_url(self) -> str: ...
    @property
    def worker_class(self) -> str: ...
    @property
    def workers(self) -> int: ...
    @property
    def threads(self) -> int: ...
    @property
    def worker_connections(self) -> int: ...
    @property
    def auth_keys_file(self) -> str: ...
    @property
    def auth_jwks(self) -> str: ...
    @property
    def allow_anonymous(self) -> bool: ...
    @property
    def rate_limit(self) -> str: ...
    @property
    def redis_connect_timeout_seconds(self) -> float: ...


def redacted_url(url: str) -> str:
    """``url`` without its password: in the user part (``redis://user:***@host``) and in the query
    (``?password=***``)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if k.lower() in SECRET_QUERY_KEYS else v) for k, v in pairs], safe="*")
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    # Put together by hand: urlunsplit drops the "//" of an empty host (unix:///path).
    return (
        f"{parts.scheme}://{netloc}{parts.path}"
        + (f"?{query}" if query else "")
        + (f"#{parts.fragment}" if parts.fragment else "")
    )


def version() -> str:
    return __version__


def _auth_mode(facts: Facts) -> str:
    kinds = [name for name, on in (("api-keys", facts.auth_keys_file), ("jwt", facts.auth_jwks)) if on]
    if kinds:
        return "+".join(kinds)
    return "anonymous (allowed on any address)" if facts.allow_anonymous else "anonymous (loopback only)"


def _workers(facts: Facts) -> str:
    if facts.worker_class == "gthread":
        return f"{facts.workers}×gthread ({facts.threads} threads/worker)"
    return f"{facts.workers}×{facts.worker_class} ({facts.worker_connections} connections/worker)"


def banner(facts: Facts, binds: list[str]) -> str:
    """The start line: version, advertised URL, listeners, store (no password), workers, auth, limits."""
    return (
        f"quineling {version()} serving {facts.advertised_url} on {', '.join(binds)}"
        f" | store {redacted_url(facts.store_url)} | workers {_workers(facts)} | auth {_auth_mode(facts)}"
        f" | rate limit {facts.rate_limit or 'off'}"
    )


def store_unreachable(url: str, timeout: float) -> str | None:
    """Why the store at ``url`` cannot be reached, or ``None`` when something listens at its address (or the
    store is in-process)."""
    parts = urlsplit(url)
    try:
        if parts.scheme == "unix":
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout)
                sock.connect(unquote(parts.path))
        elif parts.scheme in ("redis", "rediss"):
            with socket.create_connection((parts.hostname or "localhost", parts.port or 6379), timeout):
                pass
        elif parts.scheme in ("redis+cluster", "rediss+cluster"):
            return _no_node_listens(url, timeout)
    except (OSError, ValueError) as exc:  # ValueError: a port that is no number
        return f"{type(exc).__name__}: {exc}"
    return None


def _no_node_listens(url: str, timeout: float) -> str | None:
    """A cluster is reachable while any listed node is (the client learns the rest from it)."""
    problem = "no node listed"
    for host, port in cluster_hosts(url):  # a malformed URL: the caller's ValueError
        try:
            with socket.create_connection((host, port), timeout):
                return None
        except OSError as exc:
            problem = f"{type(exc).__name__}: {exc}"
    return problem


def when_ready_hook(facts: Facts) -> Any:
    """gunicorn's ``when_ready`` hook (the master, once it listens): log the banner, then probe the store."""

    def when_ready(server: Any) -> None:
        server.log.info(banner(facts, [str(bind) for bind in server.cfg.bind]))
        problem = store_unreachable(facts.store_url, facts.redis_connect_timeout_seconds)
        if problem is not None:
            server.log.error(
                "quineling: the store %s cannot be reached at start-up (%s); serving anyway: /readyz answers "
                "503 and requests that need the store get the retryable 503 until it can be reached",
                redacted_url(facts.store_url),
                problem,
            )

    return when_ready


def port_taken(host: str, port: int) -> str | None:
    """Why ``quineling serve`` cannot listen on ``host:port``, or ``None`` when it can. Checked before gunicorn
    starts, which would otherwise retry the bind for several seconds and then exit with its own trace. The
    socket is bound as gunicorn binds it (``SO_REUSEADDR``), so a port left in TIME_WAIT is not "in use"."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:  # socket.gaierror: a host name that does not resolve
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except PermissionError:
            return f"port {port} on {host} needs privileges to listen on (choose one above 1023)"
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            return f"port {port} on {host} is in use ({_holder(host, port)})"
    return None


def _holder(host: str, port: int) -> str:
    """A guess at what holds the port: a Quineling server answers ``/healthz``; anything else is named no
    further. A plain socket (no http.client: this runs in the gunicorn master, which must not import ssl)."""
    target = "127.0.0.1" if host in ("", "0.0.0.0") else "::1" if host == "::" else host
    try:
        with socket.create_connection((target, port), timeout=1) as peer:
            peer.sendall(b"GET /healthz HTTP/1.0\r\nHost: localhost\r\nA2A-Version: 1.0\r\n\r\n")
            answer = b""
            while len(answer) < 4096 and (chunk := peer.recv(4096)):
                answer += chunk
    except OSError:
        return "by a program that does not answer HTTP"
    if answer.startswith(b"HTTP/") and b'"status"' in answer:
        return "a Quineling server answers there: is one already running?"
    return "by another program"
