"""The A2A commands: ``card get``, ``send`` and ``task …``, each printing the protocol's own objects
(``-o json``) or ``Label: value`` text, identifiers and state first, with the command that continues."""

from __future__ import annotations

import argparse
import logging
import shlex
import time
from collections.abc import Iterable
from typing import Any

from quineling.cli_a2a import cardcheck, errors, parts
from quineling.cli_a2a.agent import DEBUG_HINT, client_errors, connect, translate
from quineling.cli_a2a.errors import CliError, usage
from quineling.cli_a2a.render import INTERRUPTED, TERMINAL, Out
from quineling.cli_a2a.settings import Settings, waits
from quineling.client import A2AClientError, AgentError, ArtifactUpdate, Message, StatusUpdate, Task
from quineling.client.messages import message as build_message

log = logging.getLogger("quineling.cli")
BACKOFF = 1.5  # each poll waits 1.5x longer than the last, up to 5x --poll-interval


def state_of(task: dict[str, Any]) -> str:
    return str((task.get("status") or {}).get("state") or "TASK_STATE_UNSPECIFIED")


class Session:
    """One invocation: its settings, its output and, once needed, its client."""

    def __init__(self, settings: Settings, out: Out) -> None:
        self.settings = settings
        self.out = out
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = connect(self.settings, wait_seconds=self.settings["timeout"])
            interface = self._client.interface
            log.debug(
                "interface: %s %s at %s%s",
                interface.protocol_binding,
                interface.protocol_version,
                interface.url,
                f" (tenant {interface.tenant})" if interface.tenant else "",
            )
        return self._client

    def close(self) -> None:
        """Close the client's connections (an embedding caller — or a test running ``main()`` in process —
        must not be left with open sockets)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def capability(self, name: str) -> bool:
        """What the card declares (the client reads v0.3 and older cards into the same fields)."""
        card = self.client.card
        return bool(
            {
                "streaming": card.streaming,
                "pushNotifications": card.push_notifications,
                "extendedAgentCard": card.extended_card,
            }[name]
        )

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        with client_errors(settings=self.settings):
            result = fn(*args, **kwargs)
        log.debug("%s took %.0f ms", getattr(fn, "__name__", "call"), (time.monotonic() - started) * 1000)
        return result

    # --- hints -----------------------------------------------------------------------------------------
    def _prefix(self) -> str:
        ref = self.settings["agent_card"]
        return "quineling" + (
            f" -a {shlex.quote(ref)}" if self.settings.source("agent_card") == "flag" else ""
        )

    def resume(self, task: dict[str, Any]) -> str | None:
        state = state_of(task)
        if state == "TASK_STATE_INPUT_REQUIRED":
            return f'{self._prefix()} send --task-id {shlex.quote(task.get("id", ""))} "<reply>"'
        if state == "TASK_STATE_AUTH_REQUIRED":
            return f"{self._prefix()} task get --wait {shlex.quote(task.get('id', ''))}"
        if state not in TERMINAL:
            return f"{self._prefix()} task get --wait {shlex.quote(task.get('id', ''))}"
        return None

    def outcome(self, task: dict[str, Any]) -> None:
        """A non-success or paused outcome is named on stderr; the exit code stays 0."""
        state = state_of(task)
        if state in TERMINAL - {"TASK_STATE_COMPLETED"}:
            self.out.warn(f"warning: task {task.get('id')} ended {state}")
        elif state in INTERRUPTED:
            self.out.warn(f"warning: task {task.get('id')} is waiting: {state}")

    # --- printing --------------------------------------------------------------------------------------
    def print_task(self, task: dict[str, Any]) -> None:
        if self.out.json:
            self.out.document(task)
        else:
            self.out.task(task, resume=self.resume(task))
        self.outcome(task)

    def print_send_result(self, result: Any) -> None:
        if isinstance(result, Task):
            if self.out.json:
                self.out.document({"task": result.raw})
            else:
                self.out.task(result.raw, resume=self.resume(result.raw))
            self.outcome(result.raw)
        elif self.out.json:
            self.out.document({"message": result.raw})
        else:
            self.out.message(result.raw)

    # --- waiting ---------------------------------------------------------------------------------------
    def follow(self, task: dict[str, Any]) -> dict[str, Any]:
        """Poll until a terminal or interrupted state (UNSPECIFIED keeps polling), bounded by --timeout. An
        agent that declares Quineling's long-poll extension is asked to hold each GetTask until the task's
        generation changes (docs/cli.md, "Waiting"); others are polled from --poll-interval."""
        limit = self.settings["timeout"]
        deadline = time.monotonic() + limit if limit else None
        first = interval = max(0.05, self.settings["poll_interval"])
        announced = False
        while state_of(task) not in TERMINAL | INTERRUPTED:
            if not announced:
                # On stderr before the first wait, so an interrupted wait still leaves the id behind.
                self.out.warn(
                    f"waiting: task {task.get('id')} (context {task.get('contextId')}) is "
                    f"{state_of(task)}; Ctrl-C stops waiting, the task goes on"
                )
                announced = True
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise CliError(
                    errors.TIMEOUT,
                    f"task {task.get('id')} was still {state_of(task)} after --timeout {limit:g}s",
                    hint=f"{self._prefix()} task get --wait {task.get('id')}",
                )
            generation = Task.parse(task).generation if self.client.long_polls else None
            if generation is not None:
                wait = None if deadline is None else max(0.05, deadline - now)
                task = self.call(
                    self.client.get_task, task["id"], current_generation=generation, wait=wait
                ).raw
                continue
            time.sleep(interval if deadline is None else max(0.0, min(interval, deadline - now)))
            interval = min(interval * BACKOFF, first * 5)
            task = self.call(self.client.get_task, task["id"]).raw
        return task


def card_get(session: Session, args: argparse.Namespace) -> int:
    client = session.client
    card = client.card
    if args.extended:
        if not card.extended_card:
            raise CliError(
                "UnsupportedOperationError",
                "the agent's card declares no extended card (capabilities.extendedAgentCard)",
                hint=None,
            )
        card = session.call(client.get_extended_card)
    found = cardcheck.problems(card.raw) if args.validate else []
    out = session.out
    if out.json:
        if found:
            raise CliError(
                errors.CARD_INVALID,
                "the card is not a valid A2A 1.0 AgentCard: " + "; ".join(found),
                hint=None,
            )
        out.document(card.raw)
        return 0
    out.field("Name", card.name)
    out.field("Description", card.description)
    out.field("Version", card.version)
    out.field("Card-Generation", card.generation)
    provider = card.raw.get("provider") or {}
    if isinstance(provider, dict) and provider.get("organization"):
        out.field("Provider", f"{provider['organization']} {provider.get('url', '')}".strip())
    out.field("Streaming", "yes" if card.streaming else "no")
    out.field("Push-Notifications", "yes" if card.push_notifications else "no")
    out.field("Extended-Card", "yes" if card.extended_card else "no")
    for entry in card.interfaces:
        tenant = f" tenant={entry.tenant}" if entry.tenant else ""
        out.field("Interface", f"{entry.protocol_binding} {entry.protocol_version} {entry.url}{tenant}")
    chosen = client.interface
    out.field("Selected-Interface", f"{chosen.protocol_binding} {chosen.protocol_version} {chosen.url}")
    for name, scheme in card.security_schemes.items():
        detail = " ".join(x for x in (scheme.scheme, scheme.location, scheme.name) if x)
        out.field("Security-Scheme", f"{name} {scheme.kind} {detail}".rstrip())
    for skill in card.skills:
        out.field("Skill", f"{skill.id} {skill.name}".rstrip())
        if out.verbose and skill.description:
            out.field("Skill-Description", skill.description)
    if args.validate:
        out.field("Valid", "no" if found else "yes")
        for problem in found:
            out.field("Problem", problem)
        if found:
            raise CliError(errors.CARD_INVALID, f"the card has {len(found)} problem(s)", hint=None)
    return 0


def _message(session: Session, args: argparse.Namespace) -> Any:
    settings = session.settings
    return build_message(
        parts.build(args.message, getattr(args, "parts", None) or []),
        context_id=settings["context_id"],
        task_id=settings["task_id"],
        metadata=settings["metadata"],
    )


def send(session: Session, args: argparse.Namespace) -> int:
    settings = session.settings
    wait = waits(settings)
    if settings["stream"] and not wait:
        raise usage("--stream follows the task live; it cannot be combined with --async")
    message = _message(session, args)
    client = session.client
    key = settings["idempotency_key"]  # None: the client mints one when the agent declares the extension
    if settings["task_id"]:
        log.debug("continuing task %s; a rejected id fails, no new task is started", settings["task_id"])
    if settings["stream"]:
        if session.capability("streaming"):
            return stream_events(session, session.call(client.stream, message, idempotency_key=key))
        session.out.warn("note: the agent's card declares no streaming; sent as a blocking request")
        result = session.call(client.send, message, idempotency_key=key)
        return stream_events(session, [result])
    result = session.call(client.send, message, return_immediately=not wait, idempotency_key=key)
    if wait and isinstance(result, Task) and state_of(result.raw) not in TERMINAL | INTERRUPTED:
        session.print_send_result(Task.parse(session.follow(result.raw)))
        return 0
    session.print_send_result(result)
    return 0


def stream_response(event: Any) -> dict[str, Any]:
    """The StreamResponse of one event: its oneof key says what it is."""
    for kind, key in (
        (Task, "task"),
        (Message, "message"),
        (StatusUpdate, "statusUpdate"),
        (ArtifactUpdate, "artifactUpdate"),
    ):
        if isinstance(event, kind):
            return {key: event.raw}
    raise CliError(
        "InvalidAgentResponseError", f"unexpected stream event {type(event).__name__}", hint=DEBUG_HINT
    )


def stream_events(session: Session, events: Iterable[Any]) -> int:
    """Each event as it arrives: one JSONL line, or one text block; the last text restates ids and state."""
    out = session.out
    last: dict[str, Any] = {}
    restated = True
    iterator = iter(events)
    while True:
        try:
            event = next(iterator)
        except StopIteration:
            break
        except A2AClientError as exc:
            raise translate(exc, settings=session.settings) from exc
        response = stream_response(event)
        if out.json:
            session.out.stream = True
            out.document(response)
        kind, body = next(iter(response.items()))
        if kind == "task":
            last = {"id": body.get("id"), "contextId": body.get("contextId"), "status": body.get("status")}
        elif kind == "statusUpdate":
            last = {
                "id": body.get("taskId"),
                "contextId": body.get("contextId"),
                "status": body.get("status"),
            }
        elif kind == "artifactUpdate":
            last = {**last, "id": body.get("taskId"), "contextId": body.get("contextId")}
        if not out.json:
            if kind == "task":
                out.task(body)
            elif kind == "message":
                out.message(body)
            elif kind == "statusUpdate":
                out.status_update(body)
            else:
                out.artifact_update(body)
            out.blank()
        restated = kind in ("task", "statusUpdate", "message")
    if last and not out.json:
        if not restated:
            out.field("Task-Id", last.get("id", ""))
            out.field("Context-Id", last.get("contextId", ""))
            out.field("State", state_of(last))
        hint = session.resume(last)
        if hint:
            out.field("Resume", hint)
    if last:
        session.outcome(last)
    return 0


def task_get(session: Session, args: argparse.Namespace) -> int:
    task = session.call(session.client.get_task, args.task, history_length=args.history).raw
    if session.settings.values["wait"].value:
        task = session.follow(task)
    session.print_task(task)
    return 0


def task_cancel(session: Session, args: argparse.Namespace) -> int:
    client = session.client
    try:
        with client_errors(settings=session.settings):
            try:
                task = client.cancel(args.task).raw
            except AgentError as exc:
                # Cancelling is idempotent: a task that is already canceled is reported as it is.
                if exc.reason != "TASK_NOT_CANCELABLE":
                    raise
                task = client.get_task(args.task).raw
                if state_of(task) != "TASK_STATE_CANCELED":
                    raise exc from None
    except CliError as exc:
        if exc.code == "TaskNotCancelableError":
            exc.hint = f"the task is already in a final state: {session._prefix()} task get {args.task}"
        raise
    session.print_task(task)
    return 0


_STATES = {
    "submitted",
    "working",
    "input_required",
    "auth_required",
    "completed",
    "failed",
    "canceled",
    "rejected",
}


def _status_filter(text: str | None) -> str | None:
    if text is None:
        return None
    folded = text.strip().lower().replace("-", "_")
    folded = folded.removeprefix("task_state_")
    if folded not in _STATES:
        raise usage(f"--status: {text!r} is not a task state ({', '.join(sorted(_STATES))})")
    return f"TASK_STATE_{folded.upper()}"


def task_list(session: Session, args: argparse.Namespace) -> int:
    client = session.client
    status = _status_filter(args.status)
    token, pages = args.page_token, []
    while True:
        page = session.call(
            client.list_page,
            context_id=session.settings["context_id"],
            status=status,
            page_size=args.page_size,
            history_length=args.history,
            page_token=token,
        )
        pages.append(page)
        token = page.next_page_token
        if not (args.all and token):
            break
    tasks = [task.raw for page in pages for task in page.tasks]
    out = session.out
    if out.json and session.settings["stream"]:
        for task in tasks:
            out.document(task)
    elif out.json:
        document = dict(pages[-1].raw)
        document["tasks"] = tasks
        out.document(document)
    else:
        for task in tasks:
            out.field("Task-Id", task.get("id", ""))
            out.field("Context-Id", task.get("contextId", ""))
            out.field("State", state_of(task))
            out.blank()
        out.field("Tasks", len(tasks))
        if pages[-1].total_size is not None:
            out.field("Total-Size", pages[-1].total_size)
        out.field("Next-Page-Token", token or "")
        if token:
            out.field("Next-Page", _next_page(session, args, token))
    return 0


def _next_page(session: Session, args: argparse.Namespace, token: str) -> str:
    """The command that continues this listing: the same filters and page size, the next token."""
    words = [session._prefix(), "task list"]
    context = session.settings["context_id"]
    if context:
        words.append(f"--context-id {shlex.quote(context)}")
    if args.status is not None:
        words.append(f"--status {shlex.quote(args.status)}")
    if args.page_size is not None:
        words.append(f"--page-size {args.page_size}")
    if args.history is not None:
        words.append(f"--history {args.history}")
    words.append(f"--page-token {shlex.quote(token)}")
    return " ".join(words)


def task_subscribe(session: Session, args: argparse.Namespace) -> int:
    if not session.capability("streaming"):
        raise CliError(
            "UnsupportedOperationError",
            "the agent's card declares no streaming, so a task cannot be subscribed to",
            hint=f"poll instead: {session._prefix()} task get --wait {args.task}",
        )
    events = session.call(session.client.subscribe, args.task, resume=True)
    if session.settings["stream"]:
        return stream_events(session, events)
    with client_errors(settings=session.settings):
        for _ in events:
            pass
    session.print_task(session.call(session.client.get_task, args.task).raw)
    return 0
