"""The known-agents registry: agents registered by URL (their card fetched and validated first), listed, found
by skill, health-checked and removed. Entries — with last-seen time, latency and health — are documents of the
project's state store (:class:`SharedState`): with a Redis URL every worker and host sees the same registry.

A health check fetches the card afresh (no cache) and, where the agent offers one, its readiness endpoint
(``GET <origin>/readyz``: 2xx ready, 404/405 not offered, anything else not ready). An agent is ``healthy``
when its card is readable, still speakable, and it is not reporting itself unready.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from quineling.client.card import AgentCard, parse_card
from quineling.client.credentials import Credentials
from quineling.client.discovery import CardCache, load_card
from quineling.client.errors import A2AClientError
from quineling.client.http import Channel, HttpCall, Timeouts, Watchdog, public_url, read_capped
from quineling.client.negotiation import candidates
from quineling.client.retry import RetryPolicy
from quineling.client.shared import SharedState, local_state

INDEX = ("agents", "index")
READINESS_PATH = "/readyz"
CHECK_SECONDS = 10.0  # a whole health check (card and readiness), however slowly the agent answers
MAX_READINESS_BYTES = 64 * 1024
JSONDict = dict[str, Any]


@dataclass(frozen=True)
class RegisteredAgent:
    url: str
    name: str
    description: str
    skills: tuple[str, ...]
    health: str  # healthy, unhealthy, unknown
    registered_at: float
    last_seen: float | None  # the last time the agent answered
    last_checked: float | None
    latency_ms: float | None
    ready: bool | None  # None: no readiness endpoint offered (or never checked)
    last_error: str | None
    raw: JSONDict = field(default_factory=dict, repr=False)

    @property
    def card(self) -> AgentCard:
        return parse_card(self.raw.get("card"), source=self.raw.get("card_url", self.url))

    @classmethod
    def of(cls, doc: JSONDict) -> RegisteredAgent:
        return cls(doc["url"], doc.get("name", ""), doc.get("description", ""), tuple(doc.get("skills", ())),
                   doc.get("health", "unknown"), doc.get("registered_at", 0.0), doc.get("last_seen"),
                   doc.get("last_checked"), doc.get("latency_ms"), doc.get("ready"), doc.get("last_error"), doc)  # fmt: skip


def normalize(url: str) -> str:
    return public_url(url.strip()).rstrip("/")


class AgentRegistry:
    def __init__(
        self,
        state: SharedState | str | None = None,
        *,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        credentials: Credentials | None = None,
        insecure: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state = SharedState.from_url(state) if isinstance(state, str) else (state or local_state())
        self.timeouts = timeouts or Timeouts(connect=5, read=CHECK_SECONDS, card=CHECK_SECONDS)
        self.retry = retry if retry is not None else RetryPolicy(retries=1)
        self.credentials = credentials
        self.insecure = insecure
        self.clock = clock

    @staticmethod
    def _key(url: str) -> tuple[str, str]:
        return ("agent", url)

    def _channel(self, url: str) -> Channel:
        return Channel(url, timeouts=self.timeouts, retry=self.retry, credentials=self.credentials,
                       insecure=self.insecure)  # fmt: skip

    def register(self, url: str) -> RegisteredAgent:
        """Fetch and validate ``url``'s card (it must have a name and an interface this client speaks), then
        record the agent (again: a re-registration refreshes the card)."""
        key_url = normalize(url)
        channel = self._channel(key_url)
        try:
            started = time.monotonic()
            card = load_card(url, channel=channel, cache=CardCache())
            latency = round(1000 * (time.monotonic() - started), 3)
        finally:
            channel.close()
        candidates(card)  # raises CardError when nothing on it is speakable
        now = self.clock()
        doc: JSONDict = {
            "url": key_url, "card_url": card.source, "name": card.name, "description": card.description,
            "skills": [s.id for s in card.skills], "card": card.raw, "health": "healthy", "registered_at": now,
            "last_seen": now, "last_checked": now, "latency_ms": latency, "ready": None, "last_error": None,
        }  # fmt: skip
        stored = self.state.update(
            self._key(key_url), lambda current: {**doc, "registered_at": (current or doc)["registered_at"]}
        )
        self.state.update(INDEX, lambda idx: _with(idx, key_url))
        return RegisteredAgent.of(stored or doc)

    def urls(self) -> builtins.list[str]:
        index = self.state.get(INDEX) or {}
        return list(index.get("urls", []))

    def get(self, url: str) -> RegisteredAgent | None:
        doc = self.state.get(self._key(normalize(url)))
        return RegisteredAgent.of(doc) if doc else None

    def list(self) -> builtins.list[RegisteredAgent]:
        urls = self.urls()
        docs = self.state.get_many([self._key(u) for u in urls]) if urls else {}
        return [RegisteredAgent.of(d) for d in docs.values() if d]

    def find(self, skill: str) -> builtins.list[RegisteredAgent]:
        """Agents with a skill whose id, name or a tag is ``skill`` (or whose description contains it)."""
        return [agent for agent in self.list() if agent.card.find_skills(skill)]

    def remove(self, url: str) -> bool:
        key_url = normalize(url)
        existed = self.state.get(self._key(key_url)) is not None
        self.state.update(self._key(key_url), lambda _current: None)
        self.state.update(INDEX, lambda idx: _without(idx, key_url))
        return existed

    def check(self, url: str | None = None) -> builtins.list[RegisteredAgent]:
        """Health-check one agent, or every registered one; returns the updated entries."""
        urls = [normalize(url)] if url else self.urls()
        return [self._check(u) for u in urls if self.state.get(self._key(u)) is not None]

    def _check(self, url: str) -> RegisteredAgent:
        channel = self._channel(url)
        now = self.clock()
        update: JSONDict = {"last_checked": now}
        started = time.monotonic()
        deadline = started + self.timeouts.card
        try:
            card = load_card(url, channel=channel, cache=CardCache(), deadline=deadline)
            update["latency_ms"] = round(1000 * (time.monotonic() - started), 3)
            update["last_seen"] = now
            candidates(card)
            update.update(card=card.raw, card_url=card.source, name=card.name, description=card.description,
                          skills=[s.id for s in card.skills])  # fmt: skip
            update["ready"] = self._ready(channel, card.source or url, deadline)
            update["health"] = "unhealthy" if update["ready"] is False else "healthy"
            update["last_error"] = (
                None if update["ready"] is not False else "the readiness endpoint says not ready"
            )
        except A2AClientError as error:
            update.update(health="unhealthy", last_error=error.message)
        finally:
            channel.close()
        doc = self.state.update(self._key(url), lambda current: {**current, **update} if current else None)
        return RegisteredAgent.of(doc or {"url": url, **update})

    def _ready(self, channel: Channel, card_url: str, deadline: float) -> bool | None:
        parts = urlsplit(card_url)
        if parts.scheme not in ("http", "https"):
            return None
        call = HttpCall("GET", f"{parts.scheme}://{parts.netloc}{READINESS_PATH}", repeatable=True,
                        operation="readiness", stream=True, deadline=deadline,
                        budget=self.timeouts.card, headers={"Connection": "close"})  # fmt: skip
        try:
            with Watchdog(deadline) as watchdog:
                call.trace = watchdog.trace
                response = channel.send(call)
                read_capped(channel, response, call, MAX_READINESS_BYTES, watchdog)
        except A2AClientError:
            return False
        if response.status_code in (404, 405):
            return None
        return response.status_code < 300


def _with(index: JSONDict | None, url: str) -> JSONDict:
    urls = list((index or {}).get("urls", []))
    return {"urls": urls if url in urls else [*urls, url]}


def _without(index: JSONDict | None, url: str) -> JSONDict | None:
    urls = [u for u in (index or {}).get("urls", []) if u != url]
    return {"urls": urls} if urls else None
