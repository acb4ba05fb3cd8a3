"""SSE event ids for resumable streams (docs/decisions/0014-resumable-streams.md).

An id names a task and a *cursor*: the generation up to which the client holds every change of the task (see
:mod:`quineling.a2a.generations`). A stream's events carry their own generation; a follow-up stream's opening
snapshot carries the generation before its first event, so resuming after it loses not that event either.

The id is opaque to clients: ``g`` and unpadded base64url of the cursor (8 bytes) and a 10-byte tag, a
SHA-256 over the caller's task scope, the task id and the cursor. The tag only tells an id of this task in this
caller's scope from any other id (another task's, another principal's, a mistyped one), so a wrong id gets a
clear error instead of a wrong resume. It is not a secret: every lookup is in the caller's own scope, so an id
can reveal nothing of another principal's tasks, and a forged one can at most resume the caller's own task.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct
from typing import Any

RETRY_MILLISECONDS = 2000  # the SSE ``retry:`` hint: how soon a cut client reconnects
MAX_ID_LENGTH = 64
_TAG_BYTES = 10


class StreamEvent(dict[str, Any]):
    """A stream event (StreamResponse JSON) together with its SSE ``id``; a plain dict to everything else."""

    event_id: str

    def __init__(self, event: dict[str, Any], event_id: str) -> None:
        super().__init__(event)
        self.event_id = event_id


def _tag(scope: str, task_id: str, cursor: int) -> bytes:
    material = "\0".join(("quineling-sse-event", scope, task_id, str(cursor))).encode()
    return hashlib.sha256(material).digest()[:_TAG_BYTES]


def encode(scope: str, task_id: str, cursor: int) -> str:
    raw = struct.pack(">Q", cursor) + _tag(scope, task_id, cursor)
    return "g" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode(event_id: str, scope: str, task_id: str) -> int | None:
    """The cursor ``event_id`` names for ``task_id`` in ``scope``; ``None`` when it is no id of this task here."""
    if not isinstance(event_id, str) or not event_id.startswith("g") or len(event_id) > MAX_ID_LENGTH:
        return None
    text = event_id[1:]
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 8 + _TAG_BYTES:
        return None
    (cursor,) = struct.unpack(">Q", raw[:8])
    return cursor if hmac.compare_digest(raw[8:], _tag(scope, task_id, cursor)) else None
