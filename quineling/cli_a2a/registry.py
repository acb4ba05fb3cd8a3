"""``agents add|list|check|remove``: the client's known-agents registry. It lives in the project's store
(``QUINELING_STORE_URL``, Redis), so every shell, worker and host sees the same agents; with the default
in-memory store nothing would outlive the command, so that is refused."""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from quineling.cli_a2a.agent import WELL_KNOWN, card_reference, client_errors
from quineling.cli_a2a.commands import Session
from quineling.cli_a2a.errors import CliError, usage
from quineling.client import AgentRegistry, Credentials, RetryPolicy


def _registry(session: Session) -> AgentRegistry:
    url = os.environ.get("QUINELING_STORE_URL", "")
    if not url or url.startswith("memory:"):
        raise usage(
            "agents: the registry is kept in the project's store: set QUINELING_STORE_URL=redis://…",
            hint="example: QUINELING_STORE_URL=redis://127.0.0.1:6379/0 quineling agents list",
        )
    settings = session.settings
    with client_errors(settings=settings):
        return AgentRegistry(
            url,
            retry=RetryPolicy(retries=0 if settings["no_retry"] else settings["retries"]),
            credentials=Credentials(bearer=settings["bearer"], api_key=settings["api_key"]),
            insecure=settings["insecure"],
        )


def _key(ref: str) -> str:
    """One spelling per agent: ``host``, ``http://host`` and its well-known card URL all name its origin."""
    url = card_reference(ref)
    return url.removesuffix(WELL_KNOWN) if url.endswith(WELL_KNOWN) else url


def _when(stamp: float | None) -> str:
    return "never" if stamp is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def _show(session: Session, agents: list[Any]) -> None:
    out = session.out
    if out.json:
        out.document({"agents": [_doc(agent) for agent in agents]})
        return
    for agent in agents:
        out.field("Agent", agent.url)
        out.field("Name", agent.name)
        out.field("Health", agent.health)
        out.field("Last-Seen", _when(agent.last_seen))
        out.field("Latency", "unknown" if agent.latency_ms is None else f"{agent.latency_ms:.0f} ms")
        if agent.ready is not None:
            out.field("Ready", "yes" if agent.ready else "no")
        if agent.last_error:
            out.field("Last-Error", agent.last_error)
        out.field("Skills", ",".join(agent.skills))
        out.blank()
    out.field("Agents", len(agents))


def _doc(agent: Any) -> dict[str, Any]:
    return {
        "url": agent.url,
        "name": agent.name,
        "description": agent.description,
        "skills": list(agent.skills),
        "health": agent.health,
        "registeredAt": agent.registered_at,
        "lastSeen": agent.last_seen,
        "lastChecked": agent.last_checked,
        "latencyMs": agent.latency_ms,
        "ready": agent.ready,
        "lastError": agent.last_error,
    }


def agents_add(session: Session, args: argparse.Namespace) -> int:
    registry = _registry(session)
    with client_errors(settings=session.settings, card=True):
        agent = registry.register(_key(args.ref))
    _show(session, [agent])
    return 0


def agents_list(session: Session, args: argparse.Namespace) -> int:
    registry = _registry(session)
    with client_errors(settings=session.settings):
        agents = registry.find(args.skill) if args.skill else registry.list()
    _show(session, agents)
    return 0


def agents_check(session: Session, args: argparse.Namespace) -> int:
    registry = _registry(session)
    with client_errors(settings=session.settings):
        ref = None if args.ref is None else _key(args.ref)
        if ref is not None and registry.get(ref) is None:
            raise CliError(
                "A2ACLI_ERR_CARD_NOT_FOUND", f"{args.ref} is not a known agent", hint="quineling agents list"
            )
        agents = registry.check(ref)
    _show(session, agents)
    return 0


def agents_remove(session: Session, args: argparse.Namespace) -> int:
    registry = _registry(session)
    with client_errors(settings=session.settings):
        removed = registry.remove(_key(args.ref))
    if not removed:
        raise CliError(
            "A2ACLI_ERR_CARD_NOT_FOUND", f"{args.ref} is not a known agent", hint="quineling agents list"
        )
    if session.out.json:
        session.out.document({"removed": args.ref})
    else:
        session.out.field("Removed", args.ref)
    return 0
