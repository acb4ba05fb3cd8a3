"""Output: ``text`` is one ``Label: value`` per line with stable labels and multi-line content as blocks (a
``Label:`` line, the content, one blank line); ``json`` is the protocol's own objects, one document, or one
compact line per object under ``--stream``. No terminal control codes ever reach the output: they are shown as
``\\xNN`` escapes, whatever the agent sent."""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from quineling.protocol.states import INTERRUPTED_STATES, TERMINAL_STATES

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
TERMINAL = TERMINAL_STATES  # re-exported for the commands
INTERRUPTED = INTERRUPTED_STATES


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def clean_line(value: object) -> str:
    """A field value: one line, no control characters (a newline or tab is escaped too)."""
    return _CONTROL_LINE.sub(_escape, str(value))


def clean_block(value: str) -> str:
    """Block content: newlines and tabs kept, every other control character escaped."""
    return _CONTROL.sub(_escape, value.replace("\r\n", "\n").replace("\r", "\n")).rstrip("\n")


class Out:
    """stdout for the payload, stderr for everything else; flushed per line so a pipe sees events live."""

    def __init__(
        self,
        fmt: str,
        *,
        stream: bool,
        verbose: bool,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.json = fmt == "json"
        self.stream = stream
        self.verbose = verbose
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr

    # --- plain writers ---------------------------------------------------------------------------------
    def field(self, label: str, value: object) -> None:
        self.stdout.write(f"{label}: {clean_line(value)}\n")
        self.stdout.flush()

    def block(self, label: str, content: str) -> None:
        self.stdout.write(f"{label}:\n{clean_block(content)}\n\n")
        self.stdout.flush()

    def blank(self) -> None:
        self.stdout.write("\n")

    def document(self, value: Any) -> None:
        """One JSON document (pretty) or, under ``--stream``, one compact line."""
        if self.stream:
            self.stdout.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
        else:
            self.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
        self.stdout.flush()

    def warn(self, message: str) -> None:
        self.stderr.write(clean_block(message) + "\n")
        self.stderr.flush()

    # --- protocol objects in text ----------------------------------------------------------------------
    def task(self, task: dict[str, Any], *, resume: str | None = None) -> None:
        self.field("Task-Id", task.get("id", ""))
        self.field("Context-Id", task.get("contextId", ""))
        status = task.get("status") or {}
        self.field("State", status.get("state", "TASK_STATE_UNSPECIFIED"))
        if status.get("timestamp") and self.verbose:
            self.field("Updated", status["timestamp"])
        if isinstance(status.get("message"), dict):
            self.parts("Status", status["message"].get("parts") or [])
        for artifact in task.get("artifacts") or []:
            self.artifact(artifact)
        if self.verbose:
            for message in task.get("history") or []:
                self.message(message, heading="History")
            if task.get("metadata"):
                self.block("Metadata", json.dumps(task["metadata"], indent=2, ensure_ascii=False))
        if resume is not None:
            self.field("Resume", resume)

    def artifact(self, artifact: dict[str, Any]) -> None:
        self.field("Artifact", artifact.get("artifactId", ""))
        if artifact.get("name"):
            self.field("Artifact-Name", artifact["name"])
        if self.verbose and artifact.get("description"):
            self.field("Artifact-Description", artifact["description"])
        answer = None if self.verbose else runtime_answer(artifact)
        if answer is not None:
            self.runtime_result(answer)
            self.field("Details", "--verbose or -o json shows the whole result")
            return
        self.parts("Artifact", artifact.get("parts") or [])

    def runtime_result(self, answer: dict[str, Any]) -> None:
        """What a person reads of a Quineling runtime result; the rest (a lifeform's genome, anatomy, trace)
        runs to hundreds of lines and is shown with --verbose or -o json."""
        result = answer.get("result")
        self.field("Operation", answer.get("operation", ""))
        if not isinstance(result, dict):
            self.block("Result", json.dumps(result, indent=2, ensure_ascii=False))
            return
        if "status" in result:
            self.field("Result-Status", result["status"])
        made = result.get("artifact")
        artifact_id = made.get("id") if isinstance(made, dict) else result.get("artifactId")
        if artifact_id:
            self.field("Result-Artifact-Id", artifact_id)
        if isinstance(result.get("id"), str):
            self.field("Record-Id", result["id"])
        if "outputs" in result:
            self.field("Outputs", json.dumps(result["outputs"], ensure_ascii=False))
        for diagnostic in result.get("diagnostics") or []:
            self.field("Diagnostic", json.dumps(diagnostic, ensure_ascii=False))

    def message(self, message: dict[str, Any], *, heading: str = "Message") -> None:
        self.field(f"{heading}-Id", message.get("messageId", ""))
        self.field(f"{heading}-Role", message.get("role", ""))
        if heading == "Message":
            if message.get("contextId"):
                self.field("Context-Id", message["contextId"])
            if message.get("taskId"):
                self.field("Task-Id", message["taskId"])
        self.parts(heading, message.get("parts") or [])

    def parts(self, owner: str, parts: Iterable[Any]) -> None:
        """Every part is shown: text as text, data as indented JSON, a file by name, type and size."""
        for part in parts:
            if not isinstance(part, dict):
                self.block(f"{owner}-Part", json.dumps(part, ensure_ascii=False))
                continue
            media = part.get("mediaType")
            if "text" in part:
                self.block(f"{owner}-Text", str(part["text"]))
            elif "data" in part:
                self.block(f"{owner}-Data", json.dumps(part["data"], indent=2, ensure_ascii=False))
            elif "raw" in part or "url" in part:
                self.field(f"{owner}-File", part.get("filename") or "(unnamed)")
                self.field(f"{owner}-File-Media-Type", media or "(not given)")
                if "raw" in part:
                    self.field(f"{owner}-File-Size", f"{len(_decoded(part['raw']))} bytes")
                else:
                    self.field(f"{owner}-File-Url", part["url"])
                continue
            else:
                self.block(f"{owner}-Part", json.dumps(part, indent=2, ensure_ascii=False))
                continue
            if self.verbose and media:
                self.field(f"{owner}-Media-Type", media)

    def status_update(self, event: dict[str, Any]) -> None:
        self.field("Event", "status-update")
        self.field("Task-Id", event.get("taskId", ""))
        self.field("Context-Id", event.get("contextId", ""))
        status = event.get("status") or {}
        self.field("State", status.get("state", "TASK_STATE_UNSPECIFIED"))
        if isinstance(status.get("message"), dict):
            self.parts("Status", status["message"].get("parts") or [])

    def artifact_update(self, event: dict[str, Any]) -> None:
        self.field("Event", "artifact-update")
        self.field("Task-Id", event.get("taskId", ""))
        self.field("Context-Id", event.get("contextId", ""))
        if event.get("append"):
            self.field("Append", "true")
        self.artifact(event.get("artifact") or {})


RESULT_ARTIFACT = "quineling-result"


def runtime_answer(artifact: dict[str, Any]) -> dict[str, Any] | None:
    """The ``{operation, result}`` a Quineling agent's result artifact carries, or ``None`` for any other."""
    if artifact.get("artifactId") != RESULT_ARTIFACT:
        return None
    for part in artifact.get("parts") or []:
        data = part.get("data") if isinstance(part, dict) else None
        if isinstance(data, dict) and "operation" in data and "result" in data:
            return data
    return None


def _decoded(raw: object) -> bytes:
    try:
        return base64.b64decode(str(raw), validate=False)
    except ValueError:
        return str(raw).encode()
