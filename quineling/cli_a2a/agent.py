"""The one place the CLI meets :mod:`quineling.client`: connecting with the effective settings, and turning
the client's errors into the CLI's envelope (A2A error names for the agent's errors, ``A2ACLI_ERR_*`` for the
rest, with matching exit codes)."""

from __future__ import annotations

import ipaddress
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from quineling.cli_a2a import errors
from quineling.cli_a2a.errors import CliError, usage
from quineling.cli_a2a.settings import Settings
from quineling.client import (
    A2AClient,
    A2AClientError,
    AgentError,
    AgentRegistry,
    AgentUnreachable,
    AuthenticationFailed,
    CardError,
    ClientTimeout,
    Credentials,
    CredentialsNotSent,
    InvalidCredentials,
    RetryPolicy,
    Timeouts,
)
from quineling.client.origins import parse_origin
from quineling.protocol.errors import ERRORS
from stores.errors import StoreError

WELL_KNOWN = "/.well-known/agent-card.json"
BINDINGS = {
    "jsonrpc": "JSONRPC",
    "json-rpc": "JSONRPC",
    "http+json": "HTTP+JSON",
    "http-json": "HTTP+JSON",
    "rest": "HTTP+JSON",
    "grpc": "GRPC",
}
# ErrorInfo reasons (what the client reports) and the A2A error names the envelope carries; INVALID_ARGUMENT is
# the REST status name some agents put where the reason goes.
A2A_NAMES = {spec.name: spec.type_name for spec in ERRORS} | {"INVALID_ARGUMENT": "InvalidParamsError"}
DEBUG_HINT = "rerun with --debug to see the protocol exchange"


def card_reference(ref: str | None) -> str:
    """``-a``: ``file://…`` or an existing path is a file; a URL with a path is the card's URL; a bare host or
    origin gets the well-known path. A bare host is https, except loopback names, which are http."""
    if not ref:
        raise usage(
            "no agent: give -a/--agent-card REF or set A2ACLI_AGENT_CARD",
            hint="example: quineling card get -a http://127.0.0.1:8049",
        )
    path = Path(urlsplit(ref).path) if ref.startswith("file://") else Path(ref)
    if (
        ref.startswith("file://")
        or "://" not in ref
        and (path.exists() or ref.endswith(".json") and "/" in ref)
    ):
        if not path.is_file():
            raise CliError(
                errors.CARD_NOT_FOUND, f"no agent card file at {path}", hint="check -a/--agent-card"
            )
        return str(path)
    url = ref if "://" in ref else f"{'http' if _loopback(ref) else 'https'}://{ref}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise usage(f"-a/--agent-card: {ref!r} is neither a card file nor an http(s) host or URL")
    if parts.path in ("", "/"):
        return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}"
    return url


def registered_agent(ref: str | None, settings: Settings) -> str | None:
    """``-a NAME``: the name of an agent in the registry (``agents add``, kept in ``QUINELING_STORE_URL``)
    stands for its URL. Only a reference that cannot be a host is looked up — no ``.``, ``:`` or ``/``, not
    ``localhost``, not an existing file — and only with a shared store: a host or URL never waits on Redis."""
    store = os.environ.get("QUINELING_STORE_URL", "")
    if not ref or not store or store.startswith("memory:") or ref == "localhost" or Path(ref).exists():
        return ref
    if any(c in ref for c in ".:/"):
        return ref
    try:
        with client_errors(settings=settings):
            agents = AgentRegistry(store).list()
    except StoreError as exc:
        raise CliError(
            errors.UNREACHABLE,
            f"-a {ref}: the agent registry (QUINELING_STORE_URL) cannot be read: {exc}",
            hint="give the agent's URL, or check the store",
        ) from None
    named = [agent.url for agent in agents if agent.name.casefold() == ref.casefold()]
    if len(named) > 1:
        raise usage(
            f"-a {ref}: {len(named)} registered agents have that name ({', '.join(sorted(named))})",
            hint="give the agent's URL instead",
        )
    return named[0] if named else ref


def _loopback(ref: str) -> bool:
    host = urlsplit(f"//{ref}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bindings(tokens: tuple[str, ...]) -> tuple[str, ...]:
    chosen = []
    for token in tokens:
        binding = BINDINGS.get(token.lower())
        if binding is None:
            raise usage(f"--transport: {token!r} is not a binding (JSONRPC, HTTP+JSON or GRPC)")
        if binding not in chosen:
            chosen.append(binding)
    return tuple(chosen)


def service_params(items: tuple[str, ...]) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition(":")
        key = key.strip()
        if not sep or not key or any(c in key for c in ' \t()<>@,;:\\"/[]?={}') or not key.isascii():
            raise usage(f"--svc-param: {item!r} is not KEY:VALUE with an HTTP header name as KEY")
        if key.lower() == "a2a-version":
            raise usage("--svc-param: A2A-Version is set by --a2a-version")
        params[key] = value.strip()
    return params


def secrets_of(settings: Settings) -> list[str]:
    found = [settings["bearer"], settings["api_key"], *service_params(settings["svc_param"]).values()]
    return [value for value in found if value]


class Redactor(logging.Filter):
    """Replaces every credential value in a diagnostic, whatever the log level or flag."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if len(s) >= 1}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.scrub(record.getMessage())
        record.args = None
        return True


def configure_debug(settings: Settings) -> None:
    """``--debug``: the client's diagnostics and raw wire on stderr, credentials redacted."""
    if not settings["debug"]:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(Redactor(secrets_of(settings)))
    handler.setFormatter(logging.Formatter("debug: %(name)s: %(message)s"))
    for name in ("quineling.client", "quineling.cli"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)


wire = logging.getLogger("quineling.cli.wire")
_SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key"}


def _headers(headers: Any) -> str:
    return ", ".join(
        f"{k}: {'[redacted]' if k.lower() in _SECRET_HEADERS else v}" for k, v in headers.items()
    )


def attach_wire_log(client: Any) -> None:
    """``--debug`` at Tier 2: every request and every non-streamed answer, headers and body, on stderr through
    the redacting handler. (The card fetch precedes this; the card itself is what ``card get`` prints.)"""
    if not wire.isEnabledFor(logging.DEBUG):
        return

    def on_request(request: Any) -> None:
        wire.debug(
            "> %s %s\n> %s\n> %s",
            request.method,
            request.url,
            _headers(request.headers),
            request.content.decode("utf-8", "replace") if request.content else "",
        )

    def on_response(response: Any) -> None:
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        body = (
            "(event stream: events follow as output)"
            if streamed
            else response.read().decode("utf-8", "replace")
        )
        wire.debug(
            "< %s %s\n< %s\n< %s",
            response.status_code,
            response.request.url,
            _headers(response.headers),
            body,
        )

    client.channel.client.event_hooks = {"request": [on_request], "response": [on_response]}


def _say_withheld(notice: CredentialsNotSent) -> None:
    sys.stderr.write(
        f"warning: the card points to {notice.origin}, which is not the agent's origin you named "
        f"({', '.join(notice.allowed) or 'none'}): the request goes there WITHOUT your credentials "
        f"(--allow-origin {notice.origin} sends them)\n"
    )


def allowed_origins(settings: Settings) -> tuple[str, ...]:
    """``--allow-origin``: each an origin (see :func:`quineling.client.origins.parse_origin`), or exit 2."""
    found = []
    for text in settings["allow_origin"]:
        try:
            found.append(parse_origin(text))
        except ValueError as exc:
            raise usage(
                f"--allow-origin: {exc}", hint="example: --allow-origin https://agent.example"
            ) from None
    return tuple(found)


def asked_version(settings: Settings) -> str | None:
    """``--a2a-version``: 1.0 (the default, the highest this tool speaks), or 0.3 by explicit opt-in only."""
    asked: str | None = settings["a2a_version"]
    if asked is not None and asked not in ("1.0", "0.3"):
        raise usage(f"--a2a-version: {asked!r} is not a version this tool speaks (1.0, or 0.3 by opt-in)")
    return asked


def connect(settings: Settings, *, wait_seconds: float | None = None) -> Any:
    """A client for ``-a``: the card fetched, validated and an interface chosen."""
    ref = card_reference(registered_agent(settings["agent_card"], settings))
    timeout = settings["timeout"] or 3600.0
    read = max(30.0, wait_seconds or 3600.0)  # a blocking send may take as long as the wait allows
    retries = 0 if settings["no_retry"] else settings["retries"]
    if settings["insecure"]:
        sys.stderr.write("WARNING: --insecure: TLS certificates are NOT verified (development only)\n")
        if settings["bearer"] or settings["api_key"]:
            sys.stderr.write(
                "WARNING: --insecure: your credentials go to a server whose identity is NOT verified\n"
            )
    asked = asked_version(settings)
    allowed = allowed_origins(settings)
    with client_errors(card=True, settings=settings):
        client = A2AClient.connect(
            ref,
            transports=bindings(settings["transport"]) or None,
            allow_v03=asked == "0.3",
            credentials=Credentials(bearer=settings["bearer"], api_key=settings["api_key"]),
            timeouts=Timeouts(connect=min(10.0, timeout), read=read, stream=timeout, card=min(30.0, timeout)),
            retry=RetryPolicy(retries=retries),
            insecure=settings["insecure"],
            headers=service_params(settings["svc_param"]),
            allowed_origins=allowed,
        )
    client.channel.on_withheld = _say_withheld
    attach_wire_log(client)
    chosen = client.interface.protocol_version
    if asked is not None and chosen != asked:
        # Never a silent change of version: the caller asked for one and the agent (or client) chose another.
        offered = ", ".join(f"{i.protocol_binding} {i.protocol_version}" for i in client.card.interfaces)
        client.close()
        raise CliError(
            "VersionNotSupportedError",
            f"--a2a-version {asked}: no usable interface at {asked} "
            f"(the card offers {offered}; {chosen} would be used)",
            hint="drop --a2a-version 0.3 to speak 1.0",
        )
    return client


@contextmanager
def client_errors(*, settings: Settings, card: bool = False) -> Iterator[None]:
    try:
        yield
    except A2AClientError as exc:
        raise translate(exc, settings=settings, card=card) from exc


def translate(exc: A2AClientError, *, settings: Settings, card: bool = False) -> CliError:
    message, hint = exc.message, exc.hint
    if isinstance(exc, InvalidCredentials):
        return CliError(errors.USAGE, message, hint=hint)
    if card and isinstance(exc, AgentError) and (exc.reason.startswith("HTTP ") or exc.http_status == 404):
        # No card where the reference points (404, whatever its body says, or a server error without an A2A
        # reason): the reference did not resolve.
        return CliError(
            errors.CARD_NOT_FOUND, message, hint=hint or "check -a/--agent-card", a2a_code=exc.a2a_code
        )
    if isinstance(exc, AgentError):
        name = A2A_NAMES.get(exc.reason, exc.reason if exc.reason.endswith("Error") else "")
        if not name:
            return CliError(errors.INTERNAL, message, hint=hint or DEBUG_HINT, a2a_code=exc.a2a_code)
        return CliError(name, message, hint=hint or DEBUG_HINT, a2a_code=exc.a2a_code)
    if isinstance(exc, AuthenticationFailed):
        given = bool(settings["bearer"] or settings["api_key"])
        code = errors.AUTH_FAILED if given else errors.CREDENTIALS_MISSING
        hint = hint or (
            "check the token or key"
            if given
            else "give --bearer TOKEN or --api-key KEY (or A2ACLI_BEARER / A2ACLI_API_KEY)"
        )
        return CliError(code, message, hint=hint, a2a_code=exc.a2a_code)
    if isinstance(exc, ClientTimeout):
        return CliError(errors.TIMEOUT, message, hint=hint or "raise --timeout", a2a_code=exc.a2a_code)
    if isinstance(exc, AgentUnreachable):
        code = errors.CARD_NOT_FOUND if card else errors.UNREACHABLE
        return CliError(
            code,
            message,
            hint=hint or "check -a/--agent-card and that the agent is up",
            a2a_code=exc.a2a_code,
        )
    if isinstance(exc, CardError):
        return CliError(errors.CARD_INVALID, message, hint=hint, a2a_code=exc.a2a_code)
    return CliError(
        errors.INTERNAL if card else "InvalidAgentResponseError",
        message,
        hint=hint or DEBUG_HINT,
        a2a_code=exc.a2a_code,
    )
