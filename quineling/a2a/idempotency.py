"""Idempotency keys on SendMessage and SendStreamingMessage (docs/decisions/0016-idempotency-keys.md).

A client that may retry a send names it with an ``Idempotency-Key`` header. The key is claimed in the task store
in the same atomic commit as the task the send creates or changes (``stores.base.KeyClaim``), together with
the request's fingerprint, so of any number of identical requests racing on any number of workers exactly one
commits; every other one — and every later retry within the key's lifetime — answers with the task the first
one named, and executes nothing. The same key with a different request is refused.

The fingerprint is a SHA-256 of the request's 1.0 ``params`` in canonical JSON (sorted keys, no spaces) with
``message.messageId`` left out, so a retry that mints a fresh message id still matches.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from quineling.a2a.errors import A2AError, InvalidParamsError
from quineling.a2a.executor import Execution
from quineling.a2a.generations import generation_of
from stores.base import KeyClaim
from stores.jsontypes import JSON

MAX_KEY_LENGTH = 255
_KEY = re.compile(rf"[\x21-\x7e]{{1,{MAX_KEY_LENGTH}}}")  # visible ASCII: no spaces, no control characters


def valid_key(header: str | None) -> str | None:
    """The ``Idempotency-Key`` header's key, ``None`` without one; :class:`InvalidParamsError` for a bad one."""
    if header is None:
        return None
    if not _KEY.fullmatch(header):
        raise InvalidParamsError(
            f"The Idempotency-Key header must be 1 to {MAX_KEY_LENGTH} visible ASCII characters (letters, "
            "digits and punctuation; no spaces or control characters)"
        )
    return header


def fingerprint(params: JSON) -> str:
    """What makes two sends "the same request": their params without ``message.messageId``, hashed."""
    message = params.get("message")
    if isinstance(message, dict):
        params = {**params, "message": {k: v for k, v in message.items() if k != "messageId"}}
    text = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def record(fingerprint_: str, task_id: str, first: int, last: int) -> JSON:
    """What a claim stores: the request's fingerprint, the task it named, and the generations its events
    span (after ``first``, through ``last``), so a streaming retry can replay them."""
    return {"fingerprint": fingerprint_, "taskId": task_id, "from": first, "to": last}


@dataclass(frozen=True, slots=True)
class Claiming:
    """A send's idempotency key and request fingerprint, claimed with its task's write."""

    key: str
    request: str
    ttl_seconds: float

    def claim(self, execution: Execution) -> KeyClaim:
        last = generation_of(execution.task)
        first = last - len(execution.events)
        return KeyClaim(self.key, record(self.request, execution.task["id"], first, last), self.ttl_seconds)


def well_formed(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("fingerprint"), str)
        and isinstance(value.get("taskId"), str)
        and all(isinstance(value.get(name), int) for name in ("from", "to"))
    )


class IdempotencyKeyReusedError(A2AError):
    """The key already names a different request: HTTP 409 on REST; JSON-RPC code -32020 with ErrorInfo reason
    ``IDEMPOTENCY_KEY_REUSED`` (domain ``quineling``: the protocol defines no such error)."""

    code: ClassVar[int] = -32020
    http_status: ClassVar[int] = 409
    status: ClassVar[str] = "ALREADY_EXISTS"
    reason: ClassVar[str] = "IDEMPOTENCY_KEY_REUSED"
    default_message: ClassVar[str] = "The Idempotency-Key was already used for a different request"

    def error_info(self) -> dict[str, Any]:
        return {**super().error_info(), "domain": "quineling"}

    def to_jsonrpc(self) -> dict[str, Any]:
        return {**super().to_jsonrpc(), "data": [self.error_info()]}
