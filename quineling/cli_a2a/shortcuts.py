"""Quineling shortcuts: ``create THOUGHT`` and ``op OPERATION [--field K=V …] [--data FILE|-]`` send one
runtime request as a data part (docs/runtime-operations.md), wait, and print the runtime's ``result`` from the
task's ``quineling-result`` artifact. A request the runtime refused (the task FAILED with
``metadata.quinelingError``) is an error: vendor code ``QUINELING_<CODE>``, exit 1."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from quineling.cli_a2a.commands import Session, state_of
from quineling.cli_a2a.errors import CliError, usage
from quineling.cli_a2a.render import RESULT_ARTIFACT
from quineling.client import Task
from quineling.client.messages import message as build_message
from quineling.runtime.frame_svg import frame_svg

PICTURED = ("frame", "offspringFrame")  # the operations whose result is a frame (offspringFrame's in "frame")


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    request: dict[str, Any] = {}
    if args.op_data is not None:
        try:
            if args.op_data == "-":
                base = json.load(sys.stdin)
            else:
                with open(args.op_data, encoding="utf-8") as handle:
                    base = json.load(handle)
        except (OSError, ValueError) as exc:
            raise usage(f"--data {args.op_data}: {exc}", hint=None) from None
        if not isinstance(base, dict):
            raise usage("--data: the request's fields must be a JSON object", hint=None)
        request.update(base)
    for item in args.field:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise usage(f"--field: {item!r} is not KEY=VALUE", hint=None)
        try:
            request[key] = json.loads(text)
        except ValueError:
            request[key] = text
    return request


def create(session: Session, args: argparse.Namespace) -> int:
    return _run(session, {"operation": "create", "thought": args.thought})


def op(session: Session, args: argparse.Namespace) -> int:
    request = _fields(args)
    request.pop("operation", None)
    picture = getattr(args, "svg", None)
    if picture is not None and args.operation not in PICTURED:
        raise usage(f"--svg: only {' and '.join(PICTURED)} sample a body to draw", hint=None)
    return _run(session, {"operation": args.operation, **request}, picture)


def _run(session: Session, request: dict[str, Any], picture: str | None = None) -> int:
    settings = session.settings
    message = build_message(
        [{"data": request, "mediaType": "application/json"}],
        context_id=settings["context_id"],
        task_id=settings["task_id"],
        metadata=settings["metadata"],
    )
    result = session.call(session.client.send, message)
    if not isinstance(result, Task):
        raise CliError(
            "InvalidAgentResponseError",
            "the agent answered with a message, not a task: is it a Quineling agent?",
            hint=None,
        )
    task = session.follow(result.raw)
    state = state_of(task)
    if state == "TASK_STATE_FAILED":
        status = (task.get("status") or {}).get("message") or {}
        error = (status.get("metadata") or {}).get("quinelingError") or {}
        code = str(error.get("code") or "failed").upper().replace("-", "_")
        text = error.get("message") or " ".join(p.get("text", "") for p in status.get("parts") or [])
        where = f" [at {error['path']}]" if error.get("path") else ""
        raise CliError(f"QUINELING_{code}", f"{text}{where}", hint=f"task {task.get('id')}")
    answer = next(
        (
            p.get("data")
            for a in task.get("artifacts") or []
            if a.get("artifactId") == RESULT_ARTIFACT
            for p in a.get("parts") or []
            if isinstance(p.get("data"), dict)
        ),
        None,
    )
    if answer is None:
        raise CliError(
            "InvalidAgentResponseError",
            f"task {task.get('id')} ended {state} without a {RESULT_ARTIFACT} artifact",
            hint=None,
        )
    if picture is not None:
        _draw(answer.get("result"), request, picture)
    out = session.out
    if out.json:
        out.document(answer.get("result"))
    else:
        out.field("Task-Id", task.get("id", ""))
        out.field("Context-Id", task.get("contextId", ""))
        out.field("State", state)
        if out.verbose:
            out.field("Operation", answer.get("operation", request["operation"]))
            out.block("Result", json.dumps(answer.get("result"), indent=2, ensure_ascii=False))
        else:
            out.runtime_result({"operation": request["operation"], **answer})
            out.field("Details", "--verbose or -o json shows the whole result")
        hint = session.resume(task)
        if hint:
            out.field("Resume", hint)
    session.outcome(task)
    return 0


def _draw(result: Any, request: dict[str, Any], path: str) -> None:
    frame = (
        result.get("frame")
        if request["operation"] == "offspringFrame" and isinstance(result, dict)
        else result
    )
    if not isinstance(frame, dict) or not isinstance(frame.get("points"), list):
        raise CliError("InvalidAgentResponseError", "the result holds no frame to draw", hint=None)
    title = f"{request.get('artifactId') or request['operation']} at phase {request.get('phase')}"
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(frame_svg(frame, title))
    except OSError as exc:
        raise usage(f"--svg {path}: {exc.strerror}", hint=None) from None
