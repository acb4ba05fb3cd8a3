"""``task push-config create|get|list|delete`` and ``task download``."""

from __future__ import annotations

import argparse
import base64
import json
import re
from pathlib import Path
from typing import Any

from quineling.cli_a2a.commands import Session
from quineling.cli_a2a.errors import CliError, usage


def _push_checked(session: Session) -> Any:
    """The card is read before a push-config call: no request goes to an agent that declares no push."""
    if not session.capability("pushNotifications"):
        raise CliError(
            "PushNotificationNotSupportedError",
            "the agent's card declares no push notifications (capabilities.pushNotifications)",
            hint=None,
        )
    return session.client


def _print_config(session: Session, config: dict[str, Any]) -> None:
    if session.out.json:
        session.out.document(config)
        return
    session.out.field("Task-Id", config.get("taskId", ""))
    session.out.field("Config-Id", config.get("id", ""))
    session.out.field("Url", config.get("url", ""))
    session.out.field("Token", "(set)" if config.get("token") else "(none)")


def _raw(value: Any) -> dict[str, Any]:
    return value.raw if hasattr(value, "raw") else dict(value)


def push_create(session: Session, args: argparse.Namespace) -> int:
    client = _push_checked(session)
    created = session.call(
        client.set_push_config, args.task, args.url, config_id=args.config_id, token=args.token
    )
    _print_config(session, _raw(created))
    return 0


def push_get(session: Session, args: argparse.Namespace) -> int:
    client = _push_checked(session)
    _print_config(session, _raw(session.call(client.get_push_config, args.task, args.config_id)))
    return 0


def push_list(session: Session, args: argparse.Namespace) -> int:
    client = _push_checked(session)
    configs = [_raw(c) for c in session.call(client.list_push_configs, args.task)]
    if session.out.json and not session.settings["stream"]:
        session.out.document({"configs": configs})
        return 0
    for config in configs:
        _print_config(session, config)
        if not session.out.json:
            session.out.blank()
    return 0


def push_delete(session: Session, args: argparse.Namespace) -> int:
    client = _push_checked(session)
    session.call(client.delete_push_config, args.task, args.config_id)
    if session.out.json:
        session.out.document({})
    else:
        session.out.field("Deleted", args.config_id)
    return 0


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _safe_name(name: str, fallback: str) -> str:
    """A file name from the agent, reduced to one harmless path component."""
    base = _UNSAFE.sub("_", Path(name.replace("\\", "/")).name).lstrip(".")
    return base[:120] or fallback


def task_download(session: Session, args: argparse.Namespace) -> int:
    """Every artifact part to its own file: text as .txt, data as .json, inline files under their name.
    A file given by URL is reported, not fetched: the CLI does not download from third parties."""
    folder = Path(args.dir)
    if not folder.is_dir():
        raise usage(f"--dir: {folder} is not a folder", hint=None)
    task = session.call(session.client.get_task, args.task).raw
    out, saved, taken = session.out, [], set[str]()
    for artifact in task.get("artifacts") or []:
        stem = _safe_name(str(artifact.get("artifactId") or "artifact"), "artifact")
        for index, part in enumerate(artifact.get("parts") or []):
            if "text" in part:
                name, content = f"{stem}-{index}.txt", str(part["text"]).encode()
            elif "data" in part:
                name, content = f"{stem}-{index}.json", (json.dumps(part["data"], indent=2) + "\n").encode()
            elif "raw" in part:
                name = _safe_name(str(part.get("filename") or ""), f"{stem}-{index}.bin")
                try:
                    content = base64.b64decode(str(part["raw"]), validate=True)
                except ValueError:
                    raise CliError(
                        "InvalidAgentResponseError",
                        f"artifact {stem} part {index}: bytes are not base64",
                        hint=None,
                    ) from None
            elif "url" in part:
                out.warn(f"note: artifact {stem} part {index} is at {part['url']}: not fetched")
                continue
            else:
                continue
            while name in taken:
                name = f"{stem}-{index}-{len(taken)}-{name}"
            taken.add(name)
            target = folder / name
            if target.exists() and not args.force:
                raise usage(f"{target} exists: pass --force to overwrite it", hint=None)
            target.write_bytes(content)
            saved.append(
                {
                    "artifactId": artifact.get("artifactId"),
                    "part": index,
                    "path": str(target),
                    "bytes": len(content),
                }
            )
    if out.json:
        out.document(
            {
                "taskId": task.get("id"),
                "contextId": task.get("contextId"),
                "state": (task.get("status") or {}).get("state"),
                "saved": saved,
            }
        )
    else:
        out.field("Task-Id", task.get("id", ""))
        out.field("Context-Id", task.get("contextId", ""))
        out.field("State", (task.get("status") or {}).get("state", ""))
        for entry in saved:
            out.field("Saved", f"{entry['path']} ({entry['bytes']} bytes)")
        out.field("Files", len(saved))
    return 0
