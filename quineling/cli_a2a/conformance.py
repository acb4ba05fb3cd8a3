"""``conformance``: a smoke check of a live agent along the lines of the A2A TCK's core checks — the card's
shape, a send, get and list round trip, the protocol's error for an unknown task (get and cancel), and a
stream where the card offers one. It is a quick check, not the TCK: it sends three small messages."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from quineling.cli_a2a import cardcheck
from quineling.cli_a2a.agent import translate
from quineling.cli_a2a.commands import Session, state_of
from quineling.client import A2AClientError, Message, Task
from quineling.client.messages import message as build_message


def _probe() -> Any:
    return build_message([{"text": "a2a conformance probe"}], context_id=None, task_id=None, metadata=None)


def conformance(session: Session) -> int:
    client = session.client
    results: list[dict[str, Any]] = []
    sent: dict[str, Any] = {}

    def check(name: str, body: Callable[[], str]) -> None:
        try:
            detail, result = body(), "pass"
        except _Skip as skip:
            detail, result = str(skip), "skip"
        except _Fail as exc:
            detail, result = str(exc), "fail"
        except A2AClientError as exc:
            problem = translate(exc, settings=session.settings)
            detail, result = f"{problem.code}: {problem.message}", "fail"
        results.append({"check": name, "result": result, "detail": detail})

    def card() -> str:
        found = cardcheck.problems(client.card.raw)
        require(not found, "; ".join(found))
        return f"valid; selected {client.interface.protocol_binding} {client.interface.protocol_version}"

    def version() -> str:
        require(client.interface.protocol_version == "1.0", f"speaks {client.interface.protocol_version}")
        return "the chosen interface speaks A2A 1.0"

    def send() -> str:
        result = client.send(_probe())
        require(isinstance(result, (Task, Message)), f"unexpected result {type(result).__name__}")
        if isinstance(result, Task):
            require(result.raw.get("id") and result.raw.get("contextId"), "the task lacks id or contextId")
            sent["task"] = result.raw
            return f"task {result.raw['id']} {state_of(result.raw)}"
        return "a direct message reply"

    def get() -> str:
        if "task" not in sent:
            raise _Skip("the send made no task")
        task = client.get_task(sent["task"]["id"]).raw
        require(task.get("id") == sent["task"]["id"], "GetTask returned another task")
        return f"state {state_of(task)}"

    def listing() -> str:
        page = client.list_page(page_size=5)
        require(isinstance(page.tasks, list), "ListTasks gave no task list")
        return f"{len(page.tasks)} task(s) on the first page"

    def unknown(operation: str) -> Callable[[], str]:
        def body() -> str:
            missing = f"conformance-{uuid.uuid4().hex}"
            try:
                getattr(client, operation)(missing)
            except A2AClientError as exc:
                code = translate(exc, settings=session.settings).code
                require(code == "TaskNotFoundError", f"answered {code}, not TaskNotFoundError")
                return "TaskNotFoundError"
            raise _Fail("an unknown task id was accepted")

        return body

    def stream() -> str:
        if not session.capability("streaming"):
            raise _Skip("the card declares no streaming")
        events = list(client.stream(_probe()))
        require(events, "the stream carried no event")
        require(isinstance(events[0], (Task, Message)), f"first event is a {type(events[0]).__name__}")
        return f"{len(events)} event(s), the first a {type(events[0]).__name__}"

    for name, body in (
        ("card", card),
        ("version", version),
        ("send", send),
        ("get", get),
        ("list", listing),
        ("get-unknown", unknown("get_task")),
        ("cancel-unknown", unknown("cancel")),
        ("stream", stream),
    ):
        check(name, body)
    passed = all(r["result"] != "fail" for r in results)
    out = session.out
    if out.json:
        out.document({"passed": passed, "checks": results})
    else:
        for r in results:
            out.field("Check", r["check"])
            out.field("Result", r["result"])
            out.field("Detail", r["detail"])
            out.blank()
        out.field("Passed", "yes" if passed else "no")
    return 0 if passed else 1


class _Skip(Exception):
    pass


class _Fail(Exception):
    pass


def require(condition: object, problem: str) -> None:
    """A check's condition (not ``assert``: ``python -O`` would drop it)."""
    if not condition:
        raise _Fail(problem)
