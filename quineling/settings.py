"""Settings: defaults, then ``QUINELING_*`` environment variables, then an explicit mapping; validated at
start-up so a bad value fails with a message naming the variable.

No process code here: the gunicorn master's options and hooks are :mod:`quineling.server`'s, and the syntax of
hosts, origins and addresses is :mod:`quineling.network`'s. The gunicorn master imports this module before it
forks, so it imports neither Flask nor redis nor ssl (docs/deployment.md, "Worker model")."""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from quineling.auth import Authenticator, JwtPolicy, ParseError, is_url, jwt_verifier, watched_keys
from quineling.auth.policy import ALLOWED_ALGORITHMS, jwks_shape_problem
from quineling.network import host_pattern, is_loopback, parse_origin, split_host, split_list

MIB = 1024 * 1024
ENV_PREFIX = "QUINELING_"


class ConfigError(ValueError):
    """An invalid setting; the message names the variable and what it accepts."""


@dataclass(frozen=True, slots=True)
class Settings:
    a2a_host: str = "127.0.0.1"
    a2a_port: int = 8049
    base_url: str = ""  # advertised origin; defaults to http://<host>:<port>
    store_url: str = "memory://"
    store_prefix: str = "q"  # namespaces every Redis key, so deployments or test runs can share a server
    # Documents each worker keeps from a network store (see stores/cache.py); 0 turns the cache off.
    read_cache_entries: int = 4096
    # Redis deadlines: to connect, and for each reply (a blocking event read gets the keep-alive period on
    # top; stores/redis/store.py). A stalled server fails a request after this long instead of holding it.
    redis_connect_timeout_seconds: float = 2.0
    redis_timeout_seconds: float = 5.0
    # CA certificates (a PEM file) a TLS store URL's server certificate must chain to; empty: the system's
    # trust store. Verification of the certificate and its host name is always on (docs/deployment.md).
    redis_ca_file: str = ""
    # Redis connections per worker (docs/deployment.md, "Worker model"): one is held for the duration of a
    # store call only, so these bound the calls in flight, not the clients. Blocking event reads (open streams,
    # waiting GetTasks) lend from a pool of their own, so requests never wait behind them; 0: automatic, one per
    # stream and waiting GetTask the worker holds (Settings.blocking_store_limit).
    store_connections: int = 64
    blocking_store_connections: int = 0
    # Tenants served besides the default (empty) one: comma-separated names, or "*" for any. Task capacity
    # is per tenant, so every accepted tenant adds a full task budget; "*" leaves the total unbounded.
    tenants: str = ""
    legacy_compat: bool = True
    # Off: header-less discovery gets the pure 1.0 card, e.g. for a strict-schema TCK run (docs/compat-v03.md).
    card_superset: bool = True
    # Off: every JSON-RPC call goes through Flask, none through the lean path (docs/performance.md); answers are
    # the same either way, so this is for measuring and for ruling the lean path out.
    lean_jsonrpc: bool = True
    request_limit_bytes: int = 2 * MIB
    # A request body not fully received this long after its head is answered 408 and its connection closed
    # (docs/security.md, "Slow clients"): a client that trickles a body holds a connection for no longer.
    body_timeout_seconds: float = 30.0
    task_max: int = 128
    task_max_bytes: int = 64 * MIB
    task_max_task_bytes: int = 16 * MIB
    task_ttl_seconds: float = 15 * 60
    max_artifacts: int = 128
    max_records: int = 256
    # Runtime retention (docs/decisions/0024-retention.md); 0 keeps entries for good.
    record_ttl_seconds: float = 15 * 60
    runtime_idle_ttl_seconds: float = 24 * 3600
    # gevent: a connection or an open stream holds a greenlet, so many streams and slow clients cost little;
    # gthread: each holds one of ``threads`` (docs/deployment.md, "Worker model").
    worker_class: str = "gevent"
    workers: int = 1
    threads: int = 8  # gthread only
    worker_connections: int = 1000  # simultaneous connections per worker, streams included
    # Each worker accepts on a listening socket of its own (SO_REUSEPORT), so the kernel spreads new
    # connections over the workers evenly instead of to whichever accepts first (docs/performance.md).
    reuse_port: bool = False
    max_streams: int = 0  # open subscriptions per worker; 0: automatic (see Settings.stream_limit)
    card_max_age: int = 3600
    subscribe_max_seconds: float = 3600.0
    keepalive_seconds: float = 3.0  # below the official clients' read timeouts (a2a-sdk: 5 s)
    access_log: bool = True
    # Logs (docs/deployment.md, "Logs"): "auto" is text on a terminal, JSON otherwise.
    log_format: str = "auto"
    log_level: str = "info"
    # Lines below WARNING are written in batches at most this late; 0: each line at once.
    log_flush_seconds: float = 1.0
    # Metrics (docs/deployment.md, "Metrics"): the workers' shared metric files (empty: a temporary directory
    # made at start), and whether /metrics answers without credentials when authentication is on.
    metrics_dir: str = ""
    metrics_public: bool = False
    # Host names served besides the advertised host, the listener's and loopback (DNS rebinding defence):
    # comma-separated, ".example.com" for a domain and every name under it, "*" for any host.
    allowed_hosts: str = ""
    # Browser origins (https://app.example.com) allowed to call the agent cross-site, or "*" (CORS).
    cors_origins: str = ""
    # Principals who may read the operator view (GET /ui/api/operator: store usage, readiness, the agent
    # registry): comma-separated scope ids (a key's principal name, jwt~CLAIM for a JWT's), "anonymous" for
    # the caller of a server without authentication; empty: nobody.
    operators: str = ""
    # Requests per principal (per client address when anonymous) in the `limits` notation, e.g.
    # "20/second;600/minute"; empty: no limit (quineling/a2a/http/rate_limit.py).
    rate_limit: str = ""
    # Proxies (CIDRs) whose X-Forwarded-For names the client; by default none, so the peer is the client.
    trusted_proxies: str = ""
    # gunicorn's control socket (for gunicornc): a path, or empty for none. gunicorn's default is one fixed path
    # per user, which two servers on one host would take from each other.
    control_socket: str = ""
    # The card's ``provider`` (who runs this agent): both or neither, since A2A 1.0 requires both fields.
    provider_organization: str = ""
    provider_url: str = ""
    # The gRPC binding (docs/deployment.md, "gRPC"): its port on QUINELING_A2A_HOST (0: not served), the
    # ``host:port`` the card advertises for it (default: the advertised URL's host and this port), its
    # certificate and key (PEM files; without them plaintext, which is served on a loopback host only unless
    # grpc_allow_plaintext says otherwise), and the threads of its server (each open stream holds one).
    grpc_port: int = 0
    grpc_url: str = ""
    grpc_tls_cert_file: str = ""
    grpc_tls_key_file: str = ""
    grpc_allow_plaintext: bool = False
    grpc_threads: int = 32

    @property
    def grpc_advertised(self) -> str:
        """The card's GRPC interface URL (``host:port``), or "" when no gRPC listener is configured."""
        if self.grpc_url:
            return self.grpc_url
        if not self.grpc_port:
            return ""
        host = urlsplit(self.advertised_url).hostname or self.a2a_host
        return f"[{host}]:{self.grpc_port}" if ":" in host else f"{host}:{self.grpc_port}"

    @property
    def grpc_stream_limit(self) -> int:
        """Streams the gRPC server holds at once: each holds a thread, so half of them, the rest for calls."""
        return max(1, self.grpc_threads // 2)

    @property
    def stream_limit(self) -> int:
        """Subscriptions one worker holds at most; beyond it a new one gets 503 with ``Retry-After``. Automatic:
        half the connections (gevent) or half the threads (gthread), so other requests always find room."""
        if self.max_streams:
            return self.max_streams
        return max(1, (self.threads if self.worker_class == "gthread" else self.worker_connections) // 2)

    # Authentication (docs/security.md): API keys, JWTs, or both; with neither, only loopback is served
    # unless allow_anonymous says otherwise.
    auth_keys_file: str = ""
    auth_jwks: str = ""  # a JWKS file, or an https:// URL (http:// only to a loopback host)
    auth_jwt_issuer: str = ""
    auth_jwt_audience: str = ""
    auth_jwt_algorithms: str = "RS256,ES256"
    auth_jwt_principal_claim: str = "sub"
    auth_jwt_leeway_seconds: float = 30.0
    allow_anonymous: bool = False
    # Live scopes (principal × tenant) at once, and how long without a write makes one reclaimable.
    max_scopes: int = 1024
    scope_idle_seconds: float = 24 * 3600.0
    # Idempotency-Key on sends (docs/decisions/0016-idempotency-keys.md): how long a key names its request,
    # and how many live keys one tenant (per principal) holds at most.
    idempotency_ttl_seconds: float = 24 * 3600.0
    idempotency_max_keys: int = 1024
    # Long-poll GetTask (currentGeneration): the longest wait (at most 30 s) and the waiters one worker holds
    # at once (0: automatic, see long_poll_limit); beyond them GetTask answers at once.
    long_poll_seconds: float = 30.0
    max_long_polls: int = 0

    @property
    def long_poll_limit(self) -> int:
        """Waiting GetTasks one worker holds at most. Automatic: half the stream limit (gevent), or half the
        threads the streams leave, one kept free (gthread; possibly 0: then GetTask never waits)."""
        if self.max_long_polls:
            return self.max_long_polls
        if self.worker_class == "gthread":
            return max(0, (self.threads - self.stream_limit - 1) // 2)
        return max(1, self.stream_limit // 2)

    @property
    def blocking_store_limit(self) -> int:
        """Blocking Redis reads one worker holds at once: one per open stream and waiting GetTask unless
        QUINELING_BLOCKING_STORE_CONNECTIONS says otherwise."""
        return self.blocking_store_connections or self.stream_limit + self.long_poll_limit

    @property
    def authenticated(self) -> bool:
        return bool(self.auth_keys_file or self.auth_jwks)

    @property
    def jwt_algorithms(self) -> tuple[str, ...]:
        return tuple(name.strip() for name in self.auth_jwt_algorithms.split(",") if name.strip())

    @property
    def advertised_url(self) -> str:
        return (self.base_url or f"http://{self.host_in_url}:{self.a2a_port}").rstrip("/")

    @property
    def host_in_url(self) -> str:
        """``a2a_host`` as a URL or a bind address names it: a bare IPv6 address (``::1``) in brackets."""
        host = self.a2a_host
        return f"[{host}]" if ":" in host and not host.startswith("[") else host


_FALSE = {"0", "false", "off", "no"}
_TRUE = {"1", "true", "on", "yes"}
_POSITIVE = {
    "request_limit_bytes", "task_max", "task_max_bytes", "task_max_task_bytes", "task_ttl_seconds",
    "max_artifacts", "max_records", "workers", "threads", "subscribe_max_seconds", "keepalive_seconds",
    "redis_connect_timeout_seconds", "redis_timeout_seconds", "worker_connections",
    "max_scopes", "scope_idle_seconds", "idempotency_ttl_seconds", "idempotency_max_keys",
    "store_connections", "body_timeout_seconds", "grpc_threads",
}  # fmt: skip
MAX_LONG_POLL_SECONDS = 30.0
MAX_LOG_FLUSH_SECONDS = 60.0
MAX_REDIS_TIMEOUT = 3600.0
WORKER_CLASSES = ("gevent", "gthread")
LOG_FORMATS = ("auto", "json", "text")
LOG_LEVELS = ("debug", "info", "warning", "error")


def _convert(name: str, kind: Any, raw: Any) -> Any:
    label = ENV_PREFIX + name.upper()
    if kind == "bool" or kind is bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in _FALSE | _TRUE:
            return text in _TRUE
        raise ConfigError(f"{label} must be one of on/off, true/false, 1/0 (got {raw!r})")
    if kind == "int" or kind is int:
        try:
            value: Any = int(str(raw).strip()) if not isinstance(raw, int) or isinstance(raw, bool) else raw
        except ValueError:
            raise ConfigError(f"{label} must be an integer (got {raw!r})") from None
    elif kind == "float" or kind is float:
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{label} must be a number (got {raw!r})") from None
        if not math.isfinite(value):  # no duration or size is infinite (nor NaN)
            raise ConfigError(f"{label} must be a finite number (got {raw!r})")
    else:
        value = str(raw).strip()
    if name in _POSITIVE and not value > 0:
        raise ConfigError(f"{label} must be positive (got {raw!r})")
    return value


def load_settings(config: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Defaults ← environment ← ``config`` (keys as ``QUINELING_A2A_PORT`` or ``a2a_port``)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for f in fields(Settings):
        key = ENV_PREFIX + f.name.upper()
        if env.get(key) not in (None, ""):
            values[f.name] = _convert(f.name, f.type, env[key])
        for candidate in (key, f.name):
            if config and config.get(candidate) is not None:
                values[f.name] = _convert(f.name, f.type, config[candidate])
    settings = replace(Settings(), **values)
    _validate(settings)
    return settings


def _validate(settings: Settings) -> None:
    if not 0 < settings.a2a_port < 65536:
        raise ConfigError(f"QUINELING_A2A_PORT must be 1..65535 (got {settings.a2a_port})")
    if settings.base_url:
        parts = urlsplit(settings.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(
                f"QUINELING_BASE_URL must be an absolute http(s) origin (got {settings.base_url!r})"
            )
    if "://" not in settings.store_url:
        raise ConfigError("QUINELING_STORE_URL must be a URL such as memory:// or redis://host:6379/0")
    if settings.read_cache_entries < 0:
        raise ConfigError(
            f"QUINELING_READ_CACHE_ENTRIES must be 0 (off) or positive (got {settings.read_cache_entries})"
        )
    _validate_redis_tls(settings)
    for name in ("redis_connect_timeout_seconds", "redis_timeout_seconds"):
        if getattr(settings, name) > MAX_REDIS_TIMEOUT:
            raise ConfigError(
                f"{ENV_PREFIX}{name.upper()} must be at most {MAX_REDIS_TIMEOUT:g} seconds "
                f"(got {getattr(settings, name)})"
            )
    if not 0 <= settings.log_flush_seconds <= MAX_LOG_FLUSH_SECONDS:
        raise ConfigError(
            f"QUINELING_LOG_FLUSH_SECONDS must be 0 (each line at once) to {MAX_LOG_FLUSH_SECONDS:g} seconds "
            f"(got {settings.log_flush_seconds})"
        )
    for name in ("record_ttl_seconds", "runtime_idle_ttl_seconds"):
        value = getattr(settings, name)
        if not math.isfinite(value) or value < 0:
            raise ConfigError(
                f"{ENV_PREFIX}{name.upper()} must be 0 (kept for good) or positive (got {value!r})"
            )
    if not 0 <= settings.long_poll_seconds <= MAX_LONG_POLL_SECONDS:
        raise ConfigError(
            f"QUINELING_LONG_POLL_SECONDS must be 0 (no waiting) to {MAX_LONG_POLL_SECONDS:g} seconds "
            f"(got {settings.long_poll_seconds})"
        )
    if settings.blocking_store_connections < 0:
        raise ConfigError(
            "QUINELING_BLOCKING_STORE_CONNECTIONS must be 0 (automatic) or positive "
            f"(got {settings.blocking_store_connections})"
        )
    if settings.max_long_polls < 0:
        raise ConfigError(
            f"QUINELING_MAX_LONG_POLLS must be 0 (automatic) or positive (got {settings.max_long_polls})"
        )
    if settings.task_max_task_bytes > settings.task_max_bytes:
        raise ConfigError("QUINELING_TASK_MAX_TASK_BYTES must not exceed QUINELING_TASK_MAX_BYTES")
    for name, allowed in (("log_format", LOG_FORMATS), ("log_level", LOG_LEVELS)):
        if getattr(settings, name) not in allowed:
            raise ConfigError(
                f"{ENV_PREFIX}{name.upper()} must be one of {', '.join(allowed)} (got {getattr(settings, name)!r})"
            )
    if bool(settings.provider_organization) != bool(settings.provider_url):
        raise ConfigError(
            "QUINELING_PROVIDER_ORGANIZATION and QUINELING_PROVIDER_URL are set together or not at all "
            "(the card's provider needs both)"
        )
    if settings.provider_url:
        parts = urlsplit(settings.provider_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(
                f"QUINELING_PROVIDER_URL must be an absolute http(s) URL (got {settings.provider_url!r})"
            )
    _validate_origins(settings)
    _validate_rate_limits(settings)
    _validate_workers(settings)
    _validate_auth(settings)
    _validate_grpc(settings)


# --- TLS to Redis (QUINELING_REDIS_CA_FILE; quineling/app.py store_tls_options) ----------------------------

TLS_STORE_SCHEMES = ("rediss", "rediss+cluster")
# Query options of a rediss:// URL that redis-py would apply over ours: they could turn verification off or
# trust other CAs than the setting says. (A cluster URL takes no query at all.)
_TLS_QUERY_OPTIONS = frozenset(
    {"ssl_cert_reqs", "ssl_check_hostname", "ssl_ca_certs", "ssl_ca_path", "ssl_ca_data"}
)


def tls_store(settings: Settings) -> bool:
    """Whether the store URL is Redis over TLS (``rediss://`` or ``rediss+cluster://``)."""
    return settings.store_url.split("://", 1)[0].lower() in TLS_STORE_SCHEMES


def _validate_redis_tls(settings: Settings) -> None:
    if settings.redis_ca_file:
        if not tls_store(settings):
            raise ConfigError(
                "QUINELING_REDIS_CA_FILE is set, but QUINELING_STORE_URL is not Redis over TLS "
                "(rediss:// or rediss+cluster://)"
            )
        try:
            text = Path(settings.redis_ca_file).read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"QUINELING_REDIS_CA_FILE {settings.redis_ca_file}: {_reason(exc)}") from None
        if "-----BEGIN CERTIFICATE-----" not in text:
            raise ConfigError(
                f"QUINELING_REDIS_CA_FILE {settings.redis_ca_file}: no PEM certificate in it "
                "(-----BEGIN CERTIFICATE-----)"
            )
    if tls_store(settings):
        named = {name.lower() for name, _ in parse_qsl(urlsplit(settings.store_url).query)}
        if named & _TLS_QUERY_OPTIONS:
            raise ConfigError(
                f"QUINELING_STORE_URL must not set {', '.join(sorted(named & _TLS_QUERY_OPTIONS))}: the server's "
                "certificate is always verified, against QUINELING_REDIS_CA_FILE (or the system's CAs)"
            )


# --- hosts and origins (QUINELING_ALLOWED_HOSTS, QUINELING_CORS_ORIGINS; quineling/a2a/http/origin_guard.py) -----


def _validate_origins(settings: Settings) -> None:
    if settings.base_url and split_host(urlsplit(settings.base_url).netloc) is None:
        raise ConfigError(
            f"QUINELING_BASE_URL must name a host and optional port (got {settings.base_url!r})"
        )
    for entry in split_list(settings.allowed_hosts):
        if host_pattern(entry) is None:
            raise ConfigError(
                "QUINELING_ALLOWED_HOSTS takes comma-separated host names or IP addresses without a port "
                f"(IPv6 in brackets), '.example.com' for a domain and its subdomains, or '*' (got {entry!r})"
            )
    for entry in split_list(settings.cors_origins):
        if entry != "*" and parse_origin(entry) is None:
            raise ConfigError(
                "QUINELING_CORS_ORIGINS takes comma-separated origins such as https://app.example.com or "
                f"http://localhost:3000 (scheme, host, optional port; no path), or '*' (got {entry!r})"
            )


# --- rate limits (QUINELING_RATE_LIMIT, QUINELING_TRUSTED_PROXIES; quineling/a2a/http/rate_limit.py) -----------

# The `limits` notation, checked here without importing `limits` (it imports asyncio and so ssl, which the
# gunicorn master must not import before gevent patches its workers): "N/unit", "N per unit" or "N/M units",
# joined by ",", ";" or "|". tests/a2a/test_rate_limit_config.py holds it to limits.parse_many.
_RATE_ITEM = re.compile(
    r"\s*([0-9]+)\s*(?:/|\s*per\s*)\s*(?:[0-9]+\s*)?(?:second|minute|hour|day|month|year)s?\s*", re.IGNORECASE
)


def rate_limit_items(text: str) -> list[str]:
    """The items of a ``QUINELING_RATE_LIMIT`` value (empty: no limit); a :class:`ConfigError` for bad ones."""
    if not text.strip():
        return []
    items = re.split(r"[,;|]", text)
    for item in items:
        match = _RATE_ITEM.fullmatch(item)
        if match is None or int(match[1]) == 0:
            raise ConfigError(
                "QUINELING_RATE_LIMIT takes limits such as '20/second;600/minute' (a positive count, '/' "
                f"or 'per', an optional multiple, and second, minute, hour, day, month or year; got {item!r})"
            )
    return [item.strip() for item in items]


def trusted_networks(text: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The networks of ``QUINELING_TRUSTED_PROXIES`` (addresses or CIDRs, comma-separated)."""
    networks = []
    for entry in split_list(text):
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ConfigError(
                "QUINELING_TRUSTED_PROXIES takes comma-separated IP addresses or CIDR networks such as "
                f"10.0.0.0/8 or fd00::/8 (got {entry!r})"
            ) from None
    return networks


def _validate_rate_limits(settings: Settings) -> None:
    rate_limit_items(settings.rate_limit)
    trusted_networks(settings.trusted_proxies)


def _validate_workers(settings: Settings) -> None:
    if settings.worker_class not in WORKER_CLASSES:
        raise ConfigError(
            f"QUINELING_WORKER_CLASS must be one of {', '.join(WORKER_CLASSES)} (got {settings.worker_class!r})"
        )
    if settings.max_streams < 0:
        raise ConfigError(
            f"QUINELING_MAX_STREAMS must be 0 (automatic) or positive (got {settings.max_streams})"
        )
    # Every stream holds a connection (and with gthread a thread): at least one must stay free for the
    # requests that are not streams, or a full set of streams would starve them.
    if settings.stream_limit >= settings.worker_connections:
        raise ConfigError(
            f"QUINELING_MAX_STREAMS ({settings.stream_limit}) must be below QUINELING_WORKER_CONNECTIONS "
            f"({settings.worker_connections})"
        )
    if settings.worker_class == "gthread" and settings.stream_limit >= settings.threads:
        raise ConfigError(
            f"QUINELING_MAX_STREAMS ({settings.stream_limit}) must be below QUINELING_THREADS "
            f"({settings.threads}) with gthread workers, where every open stream holds a thread"
        )
    if (
        settings.worker_class == "gthread"
        and settings.stream_limit + settings.long_poll_limit >= settings.threads
    ):
        raise ConfigError(
            f"QUINELING_MAX_STREAMS ({settings.stream_limit}) and QUINELING_MAX_LONG_POLLS "
            f"({settings.long_poll_limit}) together must be below QUINELING_THREADS ({settings.threads}) with "
            "gthread workers, where every open stream and waiting GetTask holds a thread"
        )


MAX_JWT_LEEWAY_SECONDS = 300.0


def _validate_auth(settings: Settings) -> None:
    jwks = settings.auth_jwks
    if jwks.startswith(("http://", "https://")):
        parts = urlsplit(jwks)
        if not parts.hostname or (parts.scheme == "http" and not is_loopback(parts.hostname)):
            raise ConfigError(
                f"QUINELING_AUTH_JWKS must be a file or an https:// URL (http:// only to a loopback host); "
                f"got {jwks!r}"
            )
    if jwks and not (settings.auth_jwt_issuer and settings.auth_jwt_audience):
        raise ConfigError(
            "QUINELING_AUTH_JWKS needs QUINELING_AUTH_JWT_ISSUER and QUINELING_AUTH_JWT_AUDIENCE: a token is "
            "accepted only from that issuer and for that audience"
        )
    unknown = [name for name in settings.jwt_algorithms if name not in ALLOWED_ALGORITHMS]
    if unknown or not settings.jwt_algorithms:
        raise ConfigError(
            f"QUINELING_AUTH_JWT_ALGORITHMS must list some of {', '.join(sorted(ALLOWED_ALGORITHMS))} "
            f"(got {settings.auth_jwt_algorithms!r})"
        )
    if not settings.auth_jwt_principal_claim:
        raise ConfigError("QUINELING_AUTH_JWT_PRINCIPAL_CLAIM must name a claim, e.g. sub")
    if not 0 <= settings.auth_jwt_leeway_seconds <= MAX_JWT_LEEWAY_SECONDS:
        raise ConfigError(
            f"QUINELING_AUTH_JWT_LEEWAY_SECONDS must be 0..{MAX_JWT_LEEWAY_SECONDS:.0f} "
            f"(got {settings.auth_jwt_leeway_seconds})"
        )


# --- the gRPC binding (QUINELING_GRPC_*; quineling/server/grpc_server.py) ---------------------------------------


def _validate_grpc(settings: Settings) -> None:
    if not 0 <= settings.grpc_port < 65536:
        raise ConfigError(f"QUINELING_GRPC_PORT must be 0 (off) or 1..65535 (got {settings.grpc_port})")
    if settings.grpc_port and settings.grpc_port == settings.a2a_port:
        raise ConfigError(f"QUINELING_GRPC_PORT must differ from QUINELING_A2A_PORT ({settings.a2a_port})")
    if settings.grpc_url:
        parts = urlsplit("//" + settings.grpc_url)
        try:
            port = parts.port
        except ValueError:
            port = None
        if not parts.hostname or port is None or parts.path or "://" in settings.grpc_url:
            raise ConfigError(
                f"QUINELING_GRPC_URL must be host:port as clients dial it, e.g. a2a.example.com:8050 "
                f"(got {settings.grpc_url!r})"
            )
    if bool(settings.grpc_tls_cert_file) != bool(settings.grpc_tls_key_file):
        raise ConfigError(
            "QUINELING_GRPC_TLS_CERT_FILE and QUINELING_GRPC_TLS_KEY_FILE are set together or not at all"
        )
    if settings.grpc_stream_limit >= settings.grpc_threads:
        raise ConfigError(f"QUINELING_GRPC_THREADS must be at least 2 (got {settings.grpc_threads})")


def check_grpc_exposure(settings: Settings) -> None:
    """Refuse plaintext gRPC on a non-loopback host unless QUINELING_GRPC_ALLOW_PLAINTEXT (a proxy in front
    terminating TLS, say): bearer tokens would cross the network in the clear."""
    if settings.grpc_tls_cert_file or settings.grpc_allow_plaintext or is_loopback(settings.a2a_host):
        return
    raise ConfigError(
        f"refusing to serve gRPC on {settings.a2a_host} in plaintext: set QUINELING_GRPC_TLS_CERT_FILE and "
        "QUINELING_GRPC_TLS_KEY_FILE, or QUINELING_GRPC_ALLOW_PLAINTEXT=1 when a proxy in front terminates TLS"
    )


def check_auth_files(settings: Settings) -> None:
    """What :func:`authenticator` would refuse of the keys and JWKS files, without importing PyJWT (and so
    ``ssl``), for the gunicorn master, which must import neither before a gevent worker patches the standard
    library (quineling.auth.policy). The keys file is parsed in full; a JWKS file is checked for its shape,
    and each worker parses its keys when it creates the app (a bad key then stops that worker's start)."""
    if settings.auth_keys_file:
        try:
            watched_keys(settings.auth_keys_file)
        except (ParseError, OSError) as exc:
            raise ConfigError(f"QUINELING_AUTH_KEYS_FILE: {_reason(exc)}") from None
    if settings.auth_jwks and not is_url(settings.auth_jwks):
        try:
            problem = jwks_shape_problem(Path(settings.auth_jwks).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            problem = _reason(exc)
        if problem is not None:
            raise ConfigError(f"QUINELING_AUTH_JWKS {settings.auth_jwks}: {problem}")


def authenticator(settings: Settings) -> Authenticator | None:
    """The authenticator the settings configure (``None``: anonymous); a file that is missing or malformed
    is a :class:`ConfigError` naming its variable."""
    keys = verifier = None
    if settings.auth_keys_file:
        try:
            keys = watched_keys(settings.auth_keys_file)
        except (ParseError, OSError) as exc:
            raise ConfigError(f"QUINELING_AUTH_KEYS_FILE: {_reason(exc)}") from None
    if settings.auth_jwks:
        policy = JwtPolicy(
            settings.auth_jwt_issuer,
            settings.auth_jwt_audience,
            settings.jwt_algorithms,
            settings.auth_jwt_leeway_seconds,
            settings.auth_jwt_principal_claim,
        )
        try:
            verifier = jwt_verifier(settings.auth_jwks, policy)
        except (ParseError, OSError) as exc:
            raise ConfigError(f"QUINELING_AUTH_JWKS {settings.auth_jwks}: {_reason(exc)}") from None
    return None if keys is None and verifier is None else Authenticator(keys, verifier)


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)
