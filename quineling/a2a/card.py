"""The Quineling agent card: the pure 1.0 card, with its interfaces in the order clients should prefer."""

from __future__ import annotations

import json
from typing import Any

from quineling.a2a.endpoints import JSONRPC_PATH, REST_PREFIX
from quineling.a2a.versions import normalize_version

AGENT_VERSION = "0.0.0-experimental"

# Extensions this server honours beyond A2A 1.0 (docs/decisions/0017-card-extensions.md): URIs this project
# owns, never required, so a client that knows them can rely on the behaviour and any other ignores them.
EXTENSION_BASE = "https://quineling.dev/a2a/extensions/"
IDEMPOTENCY_EXTENSION = EXTENSION_BASE + "idempotency/v1"
RESUMABLE_STREAMS_EXTENSION = EXTENSION_BASE + "resumable-streams/v1"
LONG_POLL_EXTENSION = EXTENSION_BASE + "long-poll/v1"
EXTENSIONS = [
    {
        "uri": IDEMPOTENCY_EXTENSION,
        "description": (
            "SendMessage and SendStreamingMessage honour an Idempotency-Key request header: the same key and "
            "request from the same principal within the key's lifetime executes once and answers with the "
            "original task, so a keyed send is safe to retry."
        ),
        "required": False,
    },
    {
        "uri": RESUMABLE_STREAMS_EXTENSION,
        "description": (
            "Every event frame has an SSE id; SubscribeToTask with the Last-Event-ID header resumes exactly "
            "after that event, on any server, or refuses with InvalidParams saying to call GetTask."
        ),
        "required": False,
    },
    {
        "uri": LONG_POLL_EXTENSION,
        "description": (
            "Tasks carry metadata.generation; GetTask with currentGeneration=N answers as soon as the task's "
            "generation is above N, or after a bounded wait with the task as it is."
        ),
        "required": False,
    },
]

# What a result can be rendered as (acceptedOutputModes; quineling/a2a/executor.py): the JSON result, and a
# short human summary of it.
JSON_MODE = "application/json"
TEXT_MODE = "text/plain"
OUTPUT_MODES = [JSON_MODE, TEXT_MODE]

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
        "inputModes": ["application/json", "text/plain"],  # a text part is a thought to create from
        "outputModes": OUTPUT_MODES,
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
        "inputModes": ["application/json"],
        "outputModes": OUTPUT_MODES,
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
        "inputModes": ["application/json"],
        "outputModes": OUTPUT_MODES,
        "examples": [
            json.dumps({"operation": "run", "artifactId": "<artifact id>"}),
            json.dumps({"operation": "reproduce", "artifactId": "<artifact id>", "recordId": "<record id>"}),
        ],
    },
]


def build_card(
    base_url: str,
    *,
    legacy_compat: bool,
    provider: tuple[str, str] | None = None,
    grpc_url: str = "",
) -> dict[str, Any]:
    """The pure 1.0 card. The 1.0 interfaces come first: simple clients take the first entry per binding.
    ``provider``: (organization, URL) of who runs the agent, from the settings; absent when not set.
    ``grpc_url``: the gRPC listener's ``host:port`` when one is configured (QUINELING_GRPC_PORT or
    QUINELING_GRPC_URL); without it the card lists no GRPC interface."""
    base = base_url.rstrip("/")
    interfaces = [
        {"url": base + JSONRPC_PATH, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": base + REST_PREFIX, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    ]
    if grpc_url:
        interfaces.append({"url": grpc_url, "protocolBinding": "GRPC", "protocolVersion": "1.0"})
    if legacy_compat:
        interfaces.append(
            {"url": base + JSONRPC_PATH, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
        )
    card: dict[str, Any] = {
        "name": "Quineling",
        "description": (
            "Turns thoughts into validated Quineling programs (lifeforms) and runs the local runtime: build, "
            "ranch and explicit execution. Send one JSON data part {operation, ...} or one text thought."
        ),
        "version": AGENT_VERSION,
        "supportedInterfaces": interfaces,
        "capabilities": {
            "streaming": True,
            "pushNotifications": False,
            "extendedAgentCard": False,
            "extensions": json.loads(json.dumps(EXTENSIONS)),
        },
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": [JSON_MODE],  # what a send that names no acceptedOutputModes gets
        "skills": json.loads(json.dumps(_SKILLS)),
    }
    if provider is not None:
        card["provider"] = {"organization": provider[0], "url": provider[1]}
    return card


BEARER_SCHEME = "bearer"


def declare_bearer(card: dict[str, Any], *, keys: bool, jwt: bool) -> dict[str, Any]:
    """``card`` requiring ``Authorization: Bearer``: an HTTP bearer security scheme (``bearerFormat: JWT``
    when JWTs are accepted) and a security requirement naming it. No credential is ever part of a card."""
    kinds = " or ".join(kind for kind, on in (("an API key", keys), ("a JWT", jwt)) if on)
    scheme: dict[str, Any] = {"description": f"Authorization: Bearer <token>, {kinds}", "scheme": "Bearer"}
    if jwt:
        scheme["bearerFormat"] = "JWT"
    card["securitySchemes"] = {BEARER_SCHEME: {"httpAuthSecurityScheme": scheme}}
    card["securityRequirements"] = [{"schemes": {BEARER_SCHEME: {"list": []}}}]
    return card


def supported_versions(card: dict[str, Any], binding: str) -> frozenset[str]:
    return frozenset(
        normalize_version(i.get("protocolVersion"))
        for i in card.get("supportedInterfaces", [])
        if i.get("protocolBinding") == binding
    )
