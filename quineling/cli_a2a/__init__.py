"""The ``quineling`` command line for calling A2A agents: the official A2A CLI grammar (Tier 1 and 2) plus the
Quineling extras documented in docs/cli.md. :func:`main` returns the exit code: 0 done (whatever the task's
outcome), 1 failed, 2 usage, 3 unreachable, 4 authentication, 5 timeout.

The HTTP client is imported only by the commands that call an agent, so ``help``, ``config show`` and
``completion`` (run by shells at start-up) stay fast."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from quineling.cli_a2a import errors, grammar
from quineling.cli_a2a.errors import CliError
from quineling.cli_a2a.render import Out
from quineling.cli_a2a.settings import Settings, check_credential_binding, describe, resolve

# handler name → "module:function"; a Session-taking handler gets (session, args).
HANDLERS = {
    "card_get": "commands:card_get",
    "send": "commands:send",
    "task_get": "commands:task_get",
    "task_cancel": "commands:task_cancel",
    "task_list": "commands:task_list",
    "task_subscribe": "commands:task_subscribe",
    "push_create": "tasks_extra:push_create",
    "push_get": "tasks_extra:push_get",
    "push_list": "tasks_extra:push_list",
    "push_delete": "tasks_extra:push_delete",
    "task_download": "tasks_extra:task_download",
    "create": "shortcuts:create",
    "op": "shortcuts:op",
    "agents_add": "registry:agents_add",
    "agents_list": "registry:agents_list",
    "agents_check": "registry:agents_check",
    "agents_remove": "registry:agents_remove",
}


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(f"quineling.cli_a2a.{module}"), name)


def requested_output(argv: Sequence[str], default: str = "text") -> str:
    """Before parsing succeeds: the output format the command line asks for (``-o``/``--output``), else
    ``default``. Decides how an error found before parsing is shown (the operator commands ask it too)."""
    fmt = default
    for index, word in enumerate(argv):
        if word in ("-o", "--output") and index + 1 < len(argv):
            fmt = argv[index + 1]
        elif word.startswith("--output="):
            fmt = word.split("=", 1)[1]
        elif word.startswith("-o") and len(word) > 2:
            fmt = word[2:]
    return fmt


def _json_wanted(argv: Sequence[str]) -> tuple[bool, bool]:
    """Before parsing succeeds: does the caller read JSON (and JSONL)? Decides where an early error goes."""
    return requested_output(argv, os.environ.get("A2ACLI_OUTPUT", "text")) == "json", "--stream" in argv


def report(exc: CliError, out: Out) -> int:
    if out.json:
        out.document(exc.envelope())
    else:
        lines = [f"Error: {exc.code}", f"Message: {exc.message}"]
        if exc.hint:
            lines.append(f"Hint: {exc.hint}")
        if exc.a2a_code is not None:
            lines.append(f"A2A-Code: {exc.a2a_code}")
        out.warn("\n".join(lines))
    return exc.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json, streamed = _json_wanted(argv)
    out = Out("json" if as_json else "text", stream=streamed, verbose=False)
    debug = "--debug" in argv
    try:
        return _run(argv, out)
    except CliError as exc:
        return report(exc, out)
    except KeyboardInterrupt:
        out.warn("interrupted")
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence: an envelope, never a bare traceback
        if debug:
            traceback.print_exc(file=sys.stderr)
        return report(
            CliError(
                errors.INTERNAL, f"{type(exc).__name__}: {exc}", hint="rerun with --debug and report this"
            ),
            out,
        )


def _run(argv: list[str], out: Out) -> int:
    config_path = grammar.pre_scan_config(argv)
    base = resolve({}, config_path=config_path)
    parser = grammar.build(lambda option: _shown_default(base, option.dest))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # -h/--help printed usage
        return int(exc.code or 0)
    if args.version:
        print(f"quineling {_version()}")
        return 0
    if getattr(args, "handler", None) == "help":
        return _help(parser, args.topic)
    if args.command is None or not hasattr(args, "handler"):
        return _help(parser, [args.command] if args.command else [])
    settings = resolve(grammar.flags_of(args), config_path=getattr(args, "config", None))
    out.json = settings["output"] == "json"
    out.stream = bool(settings["stream"])
    out.verbose = bool(settings["verbose"])
    for warning in settings.warnings:
        out.warn(warning)
    if args.handler == "config_show":
        from quineling.cli_a2a.meta import config_show

        return config_show(settings, out)
    if args.handler == "completion":
        from quineling.cli_a2a.meta import completion

        return completion(parser, args.shell, out)
    if not args.handler.startswith(
        "agents_"
    ):  # the registry names agents by argument and sends no credential
        check_credential_binding(settings)
    return _call(args, settings, out)


def _call(args: Any, settings: Settings, out: Out) -> int:
    from quineling.cli_a2a.agent import configure_debug
    from quineling.cli_a2a.commands import Session

    configure_debug(settings)
    session = Session(settings, out)
    try:
        if args.handler == "conformance":
            return int(_load("conformance:conformance")(session))
        return int(_load(HANDLERS[args.handler])(session, args))
    finally:
        session.close()


def _shown_default(settings: Settings, dest: str) -> str:
    source = settings.source(dest)
    shown = describe(settings, dest)
    if dest == "wait":
        shown = "on for send" if source == "default" else shown
    return f"now: {shown}" + ("" if source == "default" else f", from {source}")


def _help(parser: Any, topic: list[str]) -> int:
    target = parser
    for word in topic:
        choices = next(
            (a.choices for a in target._actions if hasattr(a, "choices") and isinstance(a.choices, dict)),
            None,
        )
        if not choices or word not in choices:
            raise errors.usage(f"help: no command {' '.join(topic)!r}")
        target = choices[word]
    sys.stdout.write(target.format_help())
    return 0


def _version() -> str:
    from quineling.cli_a2a.meta import tool_version

    return tool_version()


__all__ = ["main"]
