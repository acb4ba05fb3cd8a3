"""Finding an agent's card: from an origin (``https://host`` → ``/.well-known/agent-card.json``), a card URL,
or a file, with cards cached by their HTTP caching headers.

The cache keeps each card for its ``Cache-Control: max-age`` (``no-store``/``no-cache`` or no max-age: not
fresh, but revalidated); a stale entry with an ``ETag`` (or ``Last-Modified``) is revalidated with
``If-None-Match`` (``If-Modified-Since``), and a 304 refreshes it without a download. Card fetches are safe
to repeat, so they follow the retry rule.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from quineling.client.card import AgentCard, parse_card
from quineling.client.errors import A2AClientError, AgentError, CardError, ProtocolError
from quineling.client.http import Channel, HttpCall, Watchdog, public_url, read_capped

WELL_KNOWN = "/.well-known/agent-card.json"
MAX_CARD_BYTES = 1024 * 1024  # a real card is a few kilobytes; a larger answer is refused, not read on
LEGACY_WELL_KNOWN = "/.well-known/agent.json"  # A2A before 0.3


@dataclass
class _Entry:
    card: AgentCard
    etag: str
    last_modified: str
    fresh_until: float


class CardCache:
    def __init__(self, clock: object = time.monotonic) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def now(self) -> float:
        return self._clock()  # type: ignore[operator, no-any-return]

    def get(self, url: str) -> _Entry | None:
        with self._lock:
            return self._entries.get(url)

    def put(self, url: str, entry: _Entry) -> None:
        with self._lock:
            self._entries[url] = entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


CACHE = CardCache()


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


_BARE_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?(?:/.*)?$")
_LOOPBACK = ("localhost", "127.", "[::1]")


def resolve_source(source: str | Path) -> str | Path:
    """``file://…`` and existing paths are files; a bare host (``agent.example``, ``localhost:8049/x`` — a first
    segment with a dot or a port that is no existing file) gets ``https://``, or ``http://`` for loopback hosts,
    which rarely have TLS; anything else is a file path."""
    text = str(source)
    if is_url(text):
        return text
    if text.startswith("file://"):
        return Path(text.removeprefix("file://"))
    if isinstance(source, Path) or Path(text).expanduser().exists():
        return Path(text)
    host = text.split("/")[0]
    if (
        _BARE_HOST.match(text)
        and ("." in host or ":" in host or host == "localhost")
        and not host.endswith(".json")
    ):
        scheme = "http" if text.startswith(_LOOPBACK) else "https"
        return f"{scheme}://{text}"
    return Path(text)


def card_urls(source: str) -> list[str]:
    """Where to look for the card of ``source``: an origin gets the well-known paths; a URL with a path is the
    card itself (then, if that is not a card, the well-known path under it)."""
    parts = urlsplit(source)
    if parts.path in ("", "/"):
        origin = f"{parts.scheme}://{parts.netloc}"
        return [origin + WELL_KNOWN, origin + LEGACY_WELL_KNOWN]
    if parts.path.endswith(".json") or "/.well-known/" in parts.path:
        return [source]
    return [source, source.rstrip("/") + WELL_KNOWN]


def _max_age(cache_control: str) -> float | None:
    directives = [d.strip().lower() for d in cache_control.split(",")]
    if "no-store" in directives or "no-cache" in directives:
        return None
    for directive in directives:
        if directive.startswith("max-age="):
            try:
                return max(0.0, float(directive.split("=", 1)[1]))
            except ValueError:
                return None
    return None


def fetch_card(
    channel: Channel, url: str, cache: CardCache = CACHE, *, deadline: float | None = None
) -> AgentCard:
    """The card at ``url`` (cached, see :class:`CardCache`): at most :data:`MAX_CARD_BYTES`, and complete by
    ``deadline`` (``time.monotonic()``; default ``Timeouts.card`` from now) however slowly it is sent."""
    cached = cache.get(url)
    now = cache.now()
    if cached and now < cached.fresh_until:
        return cached.card
    headers = {"A2A-Version": "1.0", "Accept": "application/json", "Connection": "close"}
    if cached and cached.etag:
        headers["If-None-Match"] = cached.etag
    elif cached and cached.last_modified:
        headers["If-Modified-Since"] = cached.last_modified
    if deadline is None:
        deadline = time.monotonic() + channel.timeouts.card
    call = HttpCall("GET", url, headers=headers, repeatable=True, operation="GetAgentCard", stream=True,
                    deadline=deadline, budget=channel.timeouts.card)  # fmt: skip
    with Watchdog(deadline) as watchdog:
        call.trace = watchdog.trace
        started = time.monotonic()
        response = channel.send(call)
        status = response.status_code
        try:
            body = read_capped(channel, response, call, MAX_CARD_BYTES, watchdog)
        except ProtocolError as exc:
            raise CardError(f"the agent card at {public_url(url)} is larger than {MAX_CARD_BYTES} bytes",
                            hint=exc.hint) if status < 400 else exc from None  # fmt: skip
    channel.latency.record(channel.agent, time.monotonic() - started)  # streamed, so send() did not
    max_age = _max_age(response.headers.get("Cache-Control", ""))
    if status == 304 and cached:
        cached.fresh_until = now + (max_age or 0)
        return cached.card
    if status >= 400:
        raise channel.http_error(response, call, _json_or_none(body))
    try:
        raw = json.loads(body)
    except ValueError:
        raise CardError(
            f"the agent card at {public_url(url)} is not JSON (HTTP {status}, "
            f"{response.headers.get('content-type', 'no content type')})",
            hint="is this an A2A agent? its card is served at /.well-known/agent-card.json",
        ) from None
    card = parse_card(raw, source=str(response.url))
    cache.put(url, _Entry(card, response.headers.get("ETag", ""), response.headers.get("Last-Modified", ""),
                          now + (max_age or 0)))  # fmt: skip
    return card


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def load_card(
    source: str | Path,
    *,
    channel: Channel | None = None,
    cache: CardCache = CACHE,
    deadline: float | None = None,
) -> AgentCard:
    """The card of ``source``: an origin URL, a card URL, a bare host (see :func:`resolve_source`) or a file
    path. Raises :class:`CardError` when it is unusable (or over :data:`MAX_CARD_BYTES`),
    :class:`AgentUnreachable` / :class:`ClientTimeout` when it cannot be fetched — in all, trying every
    well-known path, by ``deadline`` (``time.monotonic()``; default: the channel's ``Timeouts.card`` from
    now)."""
    resolved = resolve_source(source)
    text = str(resolved)
    if not is_url(text):
        path = Path(text).expanduser()
        try:
            with path.open("rb") as file:
                data = file.read(MAX_CARD_BYTES + 1)
            if len(data) > MAX_CARD_BYTES:
                raise CardError(f"the agent card file {path} is larger than {MAX_CARD_BYTES} bytes")
            raw = json.loads(data)
        except FileNotFoundError:
            raise CardError(
                f"no agent card file at {path}", hint="give an http(s) URL or a card file"
            ) from None
        except (OSError, ValueError) as exc:
            raise CardError(f"cannot read the agent card file {path}: {type(exc).__name__}") from None
        return parse_card(raw, source=str(path))
    own = channel is None
    chan = channel or Channel(public_url(text))
    if deadline is None:
        deadline = time.monotonic() + chan.timeouts.card
    try:
        urls = card_urls(text)
        last: A2AClientError | None = None
        for url in urls:
            try:
                return fetch_card(chan, url, cache, deadline=deadline)
            except (CardError, AgentError) as exc:
                if isinstance(exc, AgentError) and exc.http_status not in (404, 405):
                    raise
                last = exc
        assert last is not None
        if len(urls) > 1:
            raise CardError(f"no agent card at {', '.join(public_url(u) for u in urls)}: {last.message}",
                            hint=last.hint) from None  # fmt: skip
        raise last
    finally:
        if own:
            chan.close()
