"""The Quineling agent card (seed "Discovery and versioning", reference §4) and its version rules (§9)."""

from __future__ import annotations

import json
from typing import Any

AGENT_VERSION = "0.0.0-experimental"
JSONRPC_PATH = "/a2a/jsonrpc"
REST_PATH = "/a2a/rest"

_CREATE = {"operation": "create", "thought": "[2,3,4] | square | sum | report total"}
_SKILLS = [
    {
        "id": "build",
        "name": "Build",
        "description": (
            "Source preparation and inspection: parse and create from a thought, compile a typed intent, "
            "inspect a stored artifact, recover a program from source or a genome, and sample frames."
        ),
        "tags": ["build", "parse", "create", "compile", "inspect", "recover", "frame"],
        "examples": [
            "[2,3,4] | square | sum | report total",
            json.dumps(_CREATE),
            json.dumps({"operation": "inspect", "artifactId": "<artifact id>"}),
        ],
    },
    {
        "id": "ranch",
        "name": "Ranch",
        "description": (
            "Offspring preparation and admission, lineage, annotation and explicit world control. "
            "Ranch operations never run tasks."
        ),
        "tags": ["ranch", "offspring", "lineage", "annotate", "world"],
        "examples": [
            json.dumps(
                {"operation": "worldCreate", "worldKey": "a2a-garden", "seed": 23, "affinity": "neutral"}
            ),
            json.dumps({"operation": "lineage", "limit": 16}),
        ],
    },
    {
        "id": "execute",
        "name": "Execute",
        "description": "Explicit execution: run a stored artifact, or reproduce it from a retained execution record.",
        "tags": ["execute", "run", "reproduce"],
        "examples": [
            json.dumps({"operation": "run", "artifactId": "<artifact id>"}),
            json.dumps({"operation": "reproduce", "artifactId": "<artifact id>", "recordId": "<record id>"}),
        ],
    },
]


def build_card(base_url: str, *, legacy_compat: bool) -> dict[str, Any]:
    """The pure 1.0 card. The 1.0 interfaces come first: simple clients take the first entry per binding."""
    base = base_url.rstrip("/")
    interfaces = [
        {"url": base + JSONRPC_PATH, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": base + REST_PATH, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    ]
    if legacy_compat:
        interfaces.append(
            {"url": base + JSONRPC_PATH, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
        )
    return {
        "name": "Quineling",
        "description": (
            "Turns thoughts into validated Quineling programs (lifeforms) and runs the local runtime: build, "
            "ranch and explicit execution. Send one JSON data part {operation, ...} or one text thought."
        ),
        "version": AGENT_VERSION,
        "supportedInterfaces": interfaces,
        "capabilities": {"streaming": True, "pushNotifications": False, "extendedAgentCard": False},
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": json.loads(json.dumps(_SKILLS)),
    }


def normalize_version(value: str | None) -> str:
    """``Major.Minor`` of a version string; absent or empty means ``0.3`` (spec §3.6, D4)."""
    text = (value or "").strip()
    if not text:
        return "0.3"
    parts = text.split(".")
    if len(parts) == 1:
        parts.append("0")
    return ".".join(p.strip() for p in parts[:2])


def supported_versions(card: dict[str, Any], binding: str) -> frozenset[str]:
    return frozenset(
        normalize_version(i.get("protocolVersion"))
        for i in card.get("supportedInterfaces", [])
        if i.get("protocolBinding") == binding
    )


def is_legacy_request(version: str | None) -> bool:
    """Header absent/empty or a 0.x version (the superset card is for these)."""
    return normalize_version(version).split(".")[0] == "0"
