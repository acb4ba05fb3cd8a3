"""A2A v0.3 ⇄ 1.0 names (docs/compat-v03.md): JSON-RPC methods, task states, roles, and the part and file
fields. The server's v0.3 layer (validating what legacy clients send) and the client's v0.3 transport
(tolerant of what legacy agents answer) both translate with these tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quineling.protocol.states import ROLE_AGENT, ROLE_USER, TERMINAL_STATES, TaskState

# --- methods -------------------------------------------------------------------------------------------

# The 1.0 operation of each v0.3 method (v0.3 has no ListTasks). The two method grammars are disjoint.
METHODS: dict[str, str] = {
    "SendMessage": "message/send",
    "SendStreamingMessage": "message/stream",
    "GetTask": "tasks/get",
    "CancelTask": "tasks/cancel",
    "SubscribeToTask": "tasks/resubscribe",
    "CreateTaskPushNotificationConfig": "tasks/pushNotificationConfig/set",
    "GetTaskPushNotificationConfig": "tasks/pushNotificationConfig/get",
    "ListTaskPushNotificationConfigs": "tasks/pushNotificationConfig/list",
    "DeleteTaskPushNotificationConfig": "tasks/pushNotificationConfig/delete",
    "GetExtendedAgentCard": "agent/getAuthenticatedExtendedCard",
}
METHODS_TO_V1: dict[str, str] = {v03: v1 for v1, v03 in METHODS.items()}
V03_METHODS: frozenset[str] = frozenset(METHODS_TO_V1)
# The methods answered as an SSE stream.
V03_STREAM_METHODS: frozenset[str] = frozenset({METHODS["SendStreamingMessage"], METHODS["SubscribeToTask"]})

# --- task states ---------------------------------------------------------------------------------------

# The v0.3 name of each 1.0 state, in proto-number order (so the index is the number).
STATE_PAIRS: tuple[tuple[str, TaskState], ...] = (
    ("unknown", TaskState.UNSPECIFIED),
    ("submitted", TaskState.SUBMITTED),
    ("working", TaskState.WORKING),
    ("completed", TaskState.COMPLETED),
    ("failed", TaskState.FAILED),
    ("canceled", TaskState.CANCELED),
    ("input-required", TaskState.INPUT_REQUIRED),
    ("rejected", TaskState.REJECTED),
    ("auth-required", TaskState.AUTH_REQUIRED),
)
STATES_TO_V03: dict[str, str] = {v1.value: v03 for v03, v1 in STATE_PAIRS}
STATES_TO_V1: dict[str, str] = {v03: v1.value for v03, v1 in STATE_PAIRS}
UNKNOWN_STATE_V03 = STATE_PAIRS[0][0]
TERMINAL_V03_STATES: frozenset[str] = frozenset(STATES_TO_V03[state] for state in TERMINAL_STATES)


def state_to_v03(state: object) -> str:
    """The v0.3 name of a 1.0 state given by name or proto number; ``unknown`` for anything else."""
    if isinstance(state, int) and not isinstance(state, bool):
        return STATE_PAIRS[state][0] if 0 <= state < len(STATE_PAIRS) else UNKNOWN_STATE_V03
    return STATES_TO_V03.get(state, UNKNOWN_STATE_V03) if isinstance(state, str) else UNKNOWN_STATE_V03


# --- roles ---------------------------------------------------------------------------------------------

ROLES_TO_V1: dict[str, str] = {"user": ROLE_USER, "agent": ROLE_AGENT}


def is_user_role(role: object) -> bool:
    """Whether a 1.0 role (by name or proto number) is the user's. v0.3 knows only two roles: everything
    that is not the user is the agent (the JS and Python SDKs agree)."""
    return role == ROLE_USER or (role == 1 and not isinstance(role, bool))


# --- parts ---------------------------------------------------------------------------------------------

# v0.3 tells parts apart by ``kind``; 1.0 by which content member is present.
PART_KINDS: tuple[str, ...] = ("text", "file", "data")
# A 1.0 file part's content member → the v0.3 ``file`` object's (exactly one of them is present).
FILE_CONTENT_TO_V03: dict[str, str] = {"raw": "bytes", "url": "uri"}
FILE_CONTENT_TO_V1: dict[str, str] = {v03: v1 for v1, v03 in FILE_CONTENT_TO_V03.items()}
# The optional fields that describe the file, each copied only when non-empty.
_FILE_LABELS_TO_V03 = {"filename": "name", "mediaType": "mimeType"}


def file_labels_to_v03(part: Mapping[str, Any]) -> dict[str, Any]:
    """A 1.0 file part's non-empty ``filename``/``mediaType`` as the v0.3 ``file`` object's fields."""
    return {v03: part[v1] for v1, v03 in _FILE_LABELS_TO_V03.items() if part.get(v1)}


def file_labels_to_v1(file: Mapping[str, Any]) -> dict[str, Any]:
    """A v0.3 ``file`` object's non-empty ``name``/``mimeType`` as the 1.0 part's fields."""
    return {v1: file[v03] for v1, v03 in _FILE_LABELS_TO_V03.items() if file.get(v03)}


# Marks a v0.3 data part that wraps a non-object 1.0 value as {"value": …} (v0.3 data must be an object), so
# the hop back to 1.0 can unwrap it.
DATA_PART_COMPAT = "data_part_compat"
