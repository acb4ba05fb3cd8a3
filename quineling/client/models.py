"""Typed results: tasks, messages, stream events and pages, each keeping its A2A 1.0 wire dict as ``raw``.

Results from v0.3 agents are translated to 1.0 shapes first (:mod:`quineling.client.v03`), so every model
reads one shape. Parsing is tolerant (unknown fields are kept in ``raw`` and otherwise ignored) but what a
model cannot be without — a task's id and status, a message's parts — must be there, or
:class:`~quineling.client.errors.ProtocolError` says what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from quineling.client.errors import ProtocolError
from quineling.protocol.states import INTERRUPTED_STATES, TERMINAL_STATES
from quineling.protocol.states import TaskState as TaskState  # re-exported

JSONDict = dict[str, Any]


# The protocol's states, re-exported: the client's models have always offered them.
TERMINAL = TERMINAL_STATES
INTERRUPTED = INTERRUPTED_STATES


def _dict(value: object, what: str) -> JSONDict:
    if not isinstance(value, dict):
        raise ProtocolError(f"the agent sent a {what} that is not a JSON object: {_short(value)}")
    return value


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _str(raw: JSONDict, name: str) -> str:
    value = raw.get(name)
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class Part:
    """One part: ``kind`` is ``text``, ``data``, ``url`` or ``raw``; ``value`` its content."""

    kind: str
    value: Any
    media_type: str = ""
    filename: str = ""
    raw: JSONDict = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: object) -> Part:
        part = _dict(raw, "part")
        for kind in ("text", "data", "url", "raw"):
            if kind in part:
                return cls(kind, part[kind], _str(part, "mediaType"), _str(part, "filename"), part)
        raise ProtocolError(f"the agent sent a part with no text, data, url or raw member: {_short(part)}")


def _parts(raw: JSONDict, what: str) -> list[Part]:
    parts = raw.get("parts")
    if not isinstance(parts, list):
        raise ProtocolError(f"the agent sent a {what} without a parts list: {_short(raw)}")
    return [Part.parse(p) for p in parts]


def _text(parts: list[Part]) -> str:
    return "\n".join(p.value for p in parts if p.kind == "text" and isinstance(p.value, str))


@dataclass(frozen=True)
class Message:
    message_id: str
    role: str
    parts: list[Part]
    context_id: str = ""
    task_id: str = ""
    metadata: JSONDict = field(default_factory=dict)
    raw: JSONDict = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: object) -> Message:
        msg = _dict(raw, "message")
        metadata = msg.get("metadata")
        return cls(_str(msg, "messageId"), _str(msg, "role"), _parts(msg, "message"), _str(msg, "contextId"),
                   _str(msg, "taskId"), metadata if isinstance(metadata, dict) else {}, msg)  # fmt: skip

    @property
    def text(self) -> str:
        return _text(self.parts)


@dataclass(frozen=True)
class Artifact:
    artifact_id: str
    parts: list[Part]
    name: str = ""
    description: str = ""
    raw: JSONDict = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: object) -> Artifact:
        art = _dict(raw, "artifact")
        return cls(
            _str(art, "artifactId"), _parts(art, "artifact"), _str(art, "name"), _str(art, "description"), art
        )

    @property
    def text(self) -> str:
        return _text(self.parts)


@dataclass(frozen=True)
class Task:
    id: str
    context_id: str
    state: TaskState
    status_message: Message | None
    timestamp: str
    artifacts: list[Artifact]
    history: list[Message]
    metadata: JSONDict = field(default_factory=dict)
    raw: JSONDict = field(default_factory=dict, repr=False)

    @property
    def generation(self) -> int | None:
        """The server's change counter (``metadata.generation``, Quineling's long-poll extension), if any."""
        value = self.metadata.get("generation")
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    @classmethod
    def parse(cls, raw: object) -> Task:
        task = _dict(raw, "task")
        if not _str(task, "id"):
            raise ProtocolError(f"the agent sent a task without an id: {_short(task)}")
        status = _dict(task.get("status"), "task status")
        message = status.get("message")
        artifacts = task.get("artifacts") or []
        history = task.get("history") or []
        metadata = task.get("metadata")
        return cls(
            id=task["id"],
            context_id=_str(task, "contextId"),
            state=TaskState.parse(status.get("state")),
            status_message=Message.parse(message) if message else None,
            timestamp=_str(status, "timestamp"),
            artifacts=[Artifact.parse(a) for a in artifacts] if isinstance(artifacts, list) else [],
            history=[Message.parse(m) for m in history] if isinstance(history, list) else [],
            metadata=metadata if isinstance(metadata, dict) else {},
            raw=task,
        )


@dataclass(frozen=True)
class StatusUpdate:
    task_id: str
    context_id: str
    state: TaskState
    message: Message | None
    timestamp: str
    raw: JSONDict = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: object) -> StatusUpdate:
        event = _dict(raw, "status update")
        status = _dict(event.get("status"), "status update's status")
        message = status.get("message")
        return cls(_str(event, "taskId"), _str(event, "contextId"), TaskState.parse(status.get("state")),
                   Message.parse(message) if message else None, _str(status, "timestamp"), event)  # fmt: skip


@dataclass(frozen=True)
class ArtifactUpdate:
    task_id: str
    context_id: str
    artifact: Artifact
    append: bool
    last_chunk: bool
    raw: JSONDict = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: object) -> ArtifactUpdate:
        event = _dict(raw, "artifact update")
        return cls(_str(event, "taskId"), _str(event, "contextId"), Artifact.parse(event.get("artifact")),
                   event.get("append") is True, event.get("lastChunk") is True, event)  # fmt: skip


StreamEvent = Task | Message | StatusUpdate | ArtifactUpdate


def parse_send_response(raw: object) -> Task | Message:
    """A SendMessageResponse: ``{"task": …}`` or ``{"message": …}``."""
    body = _dict(raw, "SendMessage result")
    if "task" in body:
        return Task.parse(body["task"])
    if "message" in body:
        return Message.parse(body["message"])
    raise ProtocolError(f"the agent's SendMessage result has neither task nor message: {_short(body)}")


def parse_stream_response(raw: object) -> StreamEvent:
    """A StreamResponse: exactly one of task, message, statusUpdate, artifactUpdate."""
    body = _dict(raw, "stream event")
    if "task" in body:
        return Task.parse(body["task"])
    if "message" in body:
        return Message.parse(body["message"])
    if "statusUpdate" in body:
        return StatusUpdate.parse(body["statusUpdate"])
    if "artifactUpdate" in body:
        return ArtifactUpdate.parse(body["artifactUpdate"])
    raise ProtocolError(f"the agent sent a stream event of no known kind: {_short(body)}")


@dataclass(frozen=True)
class TaskPage:
    tasks: list[Task]
    next_page_token: str
    total_size: int | None
    page_size: int | None
    raw: JSONDict = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, raw: object) -> TaskPage:
        page = _dict(raw, "ListTasks result")
        tasks = page.get("tasks") or []
        if not isinstance(tasks, list):
            raise ProtocolError(f"the agent's ListTasks result has no tasks list: {_short(page)}")
        total, size = page.get("totalSize"), page.get("pageSize")
        return cls([Task.parse(t) for t in tasks], _str(page, "nextPageToken"),
                   int(total) if isinstance(total, int | str) and str(total).isdigit() else None,
                   int(size) if isinstance(size, int | str) and str(size).isdigit() else None, page)  # fmt: skip


@dataclass(frozen=True)
class DelegateResult:
    """How a delegated task ended: ``outcome`` is completed, failed, rejected, canceled, input-required,
    auth-required or timeout; ``output`` the values of the result's parts (artifacts, else the status message
    or the reply message), ``text`` their text parts joined."""

    outcome: str
    task: Task | None
    message: Message | None
    output: list[Any]

    @property
    def text(self) -> str:
        return "\n".join(v for v in self.output if isinstance(v, str))

    @classmethod
    def of(cls, outcome: str, task: Task | None, message: Message | None = None) -> DelegateResult:
        parts: list[Part] = []
        if task is not None:
            parts = [p for a in task.artifacts for p in a.parts]
            if not parts and task.status_message is not None:
                parts = task.status_message.parts
        elif message is not None:
            parts = message.parts
        return cls(outcome, task, message, [p.value for p in parts])
