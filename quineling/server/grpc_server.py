"""The gRPC binding's server: a ``grpc.server`` with a thread pool serving ``lf.a2a.v1.A2AService`` (and
``grpc.health.v1.Health``) over the app's own service, store and guards (docs/decisions/0029-grpc-binding.md).

gRPC cannot live inside WSGI (it needs HTTP/2 trailers) and its objects do not survive a fork, so it runs
either as a process of its own (``quineling serve-grpc``, or the sibling ``quineling serve`` starts on a
shared store) or, on ``memory://``, as threads inside the one gthread worker that holds the store. Either
way it builds its servicer from the app that process loaded (:func:`edge_of`), so both bindings share one
service, one authenticator and one rate limiter.

TLS from QUINELING_GRPC_TLS_CERT_FILE/KEY_FILE; plaintext only on loopback unless
QUINELING_GRPC_ALLOW_PLAINTEXT. Stopping sets the edge's ``stopping`` event (open streams end within a poll
slice and clients subscribe again), then lets in-flight calls finish for up to the grace period. HTTP/2
keep-alive pings keep idle streams' connections open through proxies and NATs."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any

import grpc
from a2a.types import a2a_pb2_grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from quineling.a2a.grpc.servicer import SERVICE_NAME, A2AServicer, GrpcEdge
from quineling.a2a.stream_slots import StreamSlots
from quineling.settings import ConfigError, Settings, trusted_networks

log = logging.getLogger(__name__)

GRACE_SECONDS = 30.0  # as gunicorn's graceful_timeout: in-flight calls finish within it
KEEPALIVE_MS = (
    20_000  # a ping on an idle connection every 20 s, answered within 10 s or the connection closes
)
KEEPALIVE_TIMEOUT_MS = 10_000
CLIENT_PING_MS = 10_000  # the most often a client may ping (a client pinging more often is told to stop)


def edge_of(app: Any, stopping: threading.Event, also_stop: Callable[[], bool] = lambda: False) -> GrpcEdge:
    """The servicer's collaborators from a loaded app (``quineling.app.create_app``): its service, tenants,
    authenticator and rate limiter, and a stream cap of the gRPC server's own."""
    state = app.extensions["quineling"]
    settings: Settings = state.extras["settings"]
    return GrpcEdge(
        service=state.service,
        authenticator=state.extras.get("authenticator"),
        limiter=state.extras.get("rate_limiter"),
        trusted_proxies=trusted_networks(settings.trusted_proxies),
        tenants=state.tenants,
        streams=StreamSlots(settings.grpc_stream_limit),
        stopping=stopping,
        also_stop=also_stop,
    )


def server_options(settings: Settings) -> list[tuple[str, int]]:
    return [
        # A request larger than QUINELING_REQUEST_LIMIT_BYTES is refused (RESOURCE_EXHAUSTED), as HTTP's 413;
        # an answer is bounded by what the tasks it holds may weigh.
        ("grpc.max_receive_message_length", settings.request_limit_bytes),
        ("grpc.max_send_message_length", settings.task_max_bytes),
        ("grpc.keepalive_time_ms", KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.http2.min_ping_interval_without_data_ms", CLIENT_PING_MS),
        # A port already served is an error, not a second server sharing it unseen.
        ("grpc.so_reuseport", 0),
    ]


def credentials_of(settings: Settings) -> Any:
    """The server's TLS credentials, or ``None`` for plaintext; a :class:`ConfigError` naming an unreadable
    file."""
    if not settings.grpc_tls_cert_file:
        return None
    try:
        cert = Path(settings.grpc_tls_cert_file).read_bytes()
        key = Path(settings.grpc_tls_key_file).read_bytes()
    except OSError as exc:
        raise ConfigError(f"QUINELING_GRPC_TLS_CERT_FILE/KEY_FILE: {exc.strerror or exc}") from None
    return grpc.ssl_server_credentials([(key, cert)])


class GrpcServer:
    """One gRPC listener over ``app``; :meth:`start` binds and serves, :meth:`stop` ends it gracefully."""

    def __init__(
        self,
        app: Any,
        settings: Settings,
        also_stop: Callable[[], bool] = lambda: False,
        *,
        port: int | None = None,  # instead of QUINELING_GRPC_PORT (0: any free port)
    ) -> None:
        self.settings = settings
        self._bind_port = settings.grpc_port if port is None else port
        self.stopping = threading.Event()
        self._stopped = threading.Event()
        self.edge = edge_of(app, self.stopping, also_stop)
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=settings.grpc_threads, thread_name_prefix="grpc"),
            options=server_options(settings),
            # Beyond the pool, a call is refused RESOURCE_EXHAUSTED at once rather than queued behind streams.
            maximum_concurrent_rpcs=settings.grpc_threads,
        )
        servicer = A2AServicer(self.edge)
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(servicer, self._server)  # type: ignore[no-untyped-call]
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        self.port = 0

    @property
    def address(self) -> str:
        return f"{self.settings.host_in_url}:{self._bind_port}"

    def start(self) -> int:
        credentials = credentials_of(self.settings)
        try:
            if credentials is None:
                self.port = self._server.add_insecure_port(self.address)
            else:
                self.port = self._server.add_secure_port(self.address, credentials)
        except RuntimeError as exc:  # grpcio raises on a port it cannot bind
            raise ConfigError(f"cannot serve gRPC on {self.address}: {exc}") from None
        if not self.port:
            raise ConfigError(f"cannot serve gRPC on {self.address}: the port is in use or not allowed")
        self._server.start()
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info(
            "serving gRPC (%s) on %s, %s",
            SERVICE_NAME,
            self.address,
            "TLS" if credentials is not None else "plaintext",
        )
        return self.port

    def stop(self, grace: float = GRACE_SECONDS) -> None:
        """Streams end (they see ``stopping``), new calls are refused, in-flight ones finish within ``grace``."""
        if self.stopping.is_set():
            self._stopped.wait()
            return
        self.stopping.set()
        self.health.enter_graceful_shutdown()
        self._server.stop(grace).wait()
        self._stopped.set()
        log.info("gRPC server stopped")

    def wait(self) -> None:
        self._stopped.wait()


def serve_forever(settings: Settings) -> int:
    """``quineling serve-grpc``: load the app, serve gRPC until SIGTERM or SIGINT, stop gracefully."""
    from quineling.app import serving_app

    server = GrpcServer(serving_app(), settings)
    server.start()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("gRPC server stopping (signal %d)", signum)
        threading.Thread(target=server.stop, name="grpc-stop", daemon=True).start()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    server.wait()
    return 0
