"""quineling.client: a synchronous client for any A2A agent (1.0 JSON-RPC and HTTP+JSON, v0.3 JSON-RPC), with
discovery, negotiation, typed results, a validating task state machine, safe retries, a circuit breaker,
latency tracking, ``delegate``, resuming subscriptions and a shared known-agents registry (docs/client.md).

It calls other agents: it never imports Flask or this project's server modules (tests/test_layering.py).
"""

from quineling.client.breaker import BreakerSettings, CircuitBreaker
from quineling.client.card import AgentCard, Interface, SecurityScheme, Skill, parse_card
from quineling.client.client import A2AClient
from quineling.client.credentials import Credentials
from quineling.client.discovery import CardCache, load_card
from quineling.client.errors import (
    A2AClientError,
    AgentError,
    AgentUnreachable,
    AuthenticationFailed,
    CardError,
    ClientTimeout,
    InvalidCredentials,
    ProtocolError,
)
from quineling.client.http import Timeouts
from quineling.client.models import (
    Artifact,
    ArtifactUpdate,
    DelegateResult,
    Message,
    Part,
    StatusUpdate,
    StreamEvent,
    Task,
    TaskPage,
    TaskState,
)
from quineling.client.origins import CredentialsNotSent
from quineling.client.registry import AgentRegistry, RegisteredAgent
from quineling.client.retry import RetryPolicy
from quineling.client.shared import SharedState
from quineling.client.states import TaskStateMachine

__all__ = [
    "A2AClient",
    "A2AClientError",
    "AgentCard",
    "AgentError",
    "AgentRegistry",
    "AgentUnreachable",
    "Artifact",
    "ArtifactUpdate",
    "AuthenticationFailed",
    "InvalidCredentials",
    "BreakerSettings",
    "CardCache",
    "CardError",
    "CircuitBreaker",
    "ClientTimeout",
    "Credentials",
    "CredentialsNotSent",
    "DelegateResult",
    "Interface",
    "Message",
    "Part",
    "ProtocolError",
    "RegisteredAgent",
    "RetryPolicy",
    "SecurityScheme",
    "SharedState",
    "Skill",
    "StatusUpdate",
    "StreamEvent",
    "Task",
    "TaskPage",
    "TaskState",
    "TaskStateMachine",
    "Timeouts",
    "load_card",
    "parse_card",
]
