"""Every path the service answers on, named once."""

from __future__ import annotations

CARD_PATH = "/.well-known/agent-card.json"
JSONRPC_PATH = "/a2a/jsonrpc"
REST_PREFIX = "/a2a/rest"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
CONSOLE_PATH = "/ui"
OPERATOR_PATH = "/ui/api/operator"


def under(path: str, prefix: str) -> bool:
    """Whether request ``path`` is ``prefix`` or below it."""
    return path == prefix or path.startswith(prefix + "/")
