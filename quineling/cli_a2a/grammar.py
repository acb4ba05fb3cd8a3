"""The command grammar: ``quineling <command> [arguments] [options]``, global options accepted before or after
the command. Every global option is registered with no default, so the parsed namespace holds exactly what was
typed and :mod:`quineling.cli_a2a.settings` can tell a flag from a configured value."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from quineling.cli_a2a.errors import usage
from quineling.cli_a2a.options import (
    BOOL,
    DURATION,
    INT,
    JSON_OBJECT,
    LIST,
    OPTIONS,
    Option,
    parse_duration,
    parse_int,
    parse_json_object,
)

PROG = "quineling"
SHELLS = ("bash", "zsh", "fish")


class Parser(argparse.ArgumentParser):
    """argparse, except that a usage error is raised (exit 2 with the error envelope), not printed, and help
    is as wide as the code (110 columns), whatever the terminal: the output never depends on it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault(
            "formatter_class", lambda prog: argparse.HelpFormatter(prog, width=110, max_help_position=34)
        )
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise usage(f"{self.prog}: {message}", hint=f"run: {self.prog} --help")


class PartAction(argparse.Action):
    """``--text``, ``--file`` and ``--data`` append to one ordered list; ``--media-type`` binds to the last."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parts: list[dict[str, Any]] = list(getattr(namespace, "parts", None) or [])
        kind = (option_string or "--text").lstrip("-")
        if kind == "media-type":
            if not parts:
                raise usage("--media-type must follow the --text, --file or --data it applies to")
            if parts[-1].get("media_type") is not None:
                raise usage(f"--media-type given twice for --{parts[-1]['kind']} {parts[-1]['value']}")
            parts[-1] = {**parts[-1], "media_type": values}
        else:
            parts.append({"kind": kind, "value": values, "media_type": None})
        namespace.parts = parts


def _converter(option: Option) -> Callable[[str], Any]:
    if option.kind == DURATION:
        return lambda text: parse_duration(text, option.long)
    if option.kind == INT:
        return lambda text: parse_int(text, option.long)
    if option.kind == JSON_OBJECT:
        return lambda text: parse_json_object(text, option.long)
    return str


def add_global_options(parser: argparse.ArgumentParser, defaults: Callable[[Option], str]) -> None:
    group = parser.add_argument_group("global options")
    for option in OPTIONS:
        names = [*option.flags, *option.aliases]
        shown = f"{option.help} [{defaults(option)}]"
        if option.kind == BOOL:
            group.add_argument(
                *names, dest=option.dest, action="store_true", default=argparse.SUPPRESS, help=shown
            )
        elif option.kind == LIST:
            group.add_argument(
                *names,
                dest=option.dest,
                action="append",
                default=argparse.SUPPRESS,
                metavar=option.metavar,
                help=shown,
            )
        else:
            group.add_argument(
                *names,
                dest=option.dest,
                default=argparse.SUPPRESS,
                type=_converter(option),
                choices=option.choices or None,
                metavar=option.metavar,
                help=shown,
            )
    group.add_argument(
        "--config",
        dest="config",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="read this dotenv file instead of the local .env (environment variables still win)",
    )


def build(defaults: Callable[[Option], str]) -> Parser:
    common = Parser(add_help=False)
    add_global_options(common, defaults)
    root = Parser(
        prog=PROG,
        parents=[common],
        description="Call any A2A agent (the A2A CLI grammar), or "
        "run and operate a Quineling agent (serve, serve-grpc, store, keys).",
        epilog="Run 'quineling help COMMAND' for a command's options.",
    )
    root.add_argument(
        "-v", "--version", action="store_true", default=False, help="print the version and exit"
    )
    commands = root.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def leaf(parent: Any, name: str, help_text: str, handler: str) -> Parser:
        sub: Parser = parent.add_parser(name, help=help_text, description=help_text, parents=[common])
        sub.set_defaults(handler=handler)
        return sub

    card = commands.add_parser("card", help="the agent's card").add_subparsers(
        dest="card_command", metavar="ACTION", parser_class=Parser, required=True
    )
    get = leaf(card, "get", "fetch, check and show the agent card", "card_get")
    get.add_argument("--validate", action="store_true", help="check the card against the A2A 1.0 shape")
    get.add_argument("--extended", action="store_true", help="the authenticated extended card")

    send = leaf(commands, "send", "send a message; waits for a terminal or interrupted state", "send")
    send.add_argument("message", nargs="?", default=None, help="message text (the first part)")
    send.add_argument("--text", action=PartAction, help="add a text part (repeatable, ordered)")
    send.add_argument(
        "--file",
        action=PartAction,
        metavar="PATH|URL",
        help="add a file part: a path is inlined, a URL is sent as a reference",
    )
    send.add_argument(
        "--data", action=PartAction, metavar="PATH|-", help="add a data part from a JSON file, - is stdin"
    )
    send.add_argument(
        "--media-type", action=PartAction, metavar="TYPE", help="media type of the part just before"
    )

    task = commands.add_parser("task", help="tasks: get, cancel, list, subscribe, push-config, download")
    tasks = task.add_subparsers(dest="task_command", metavar="ACTION", parser_class=Parser, required=True)
    tget = leaf(
        tasks, "get", "get a task (one-shot; --wait polls to a terminal or interrupted state)", "task_get"
    )
    tget.add_argument("task", metavar="TASK_ID")
    tget.add_argument(
        "--history",
        type=lambda t: parse_int(t, "--history", high=1000),
        default=None,
        metavar="N",
        help="at most N history messages (A2A historyLength)",
    )
    leaf(tasks, "cancel", "cancel a task (idempotent)", "task_cancel").add_argument("task", metavar="TASK_ID")
    tlist = leaf(tasks, "list", "list tasks, newest first, one page at a time", "task_list")
    tlist.add_argument(
        "--status", default=None, help="only tasks in this state (completed or TASK_STATE_COMPLETED)"
    )
    tlist.add_argument(
        "--page-size", type=lambda t: parse_int(t, "--page-size", low=1, high=100), default=None, metavar="N"
    )
    tlist.add_argument("--page-token", default=None, metavar="TOKEN", help="the page after a Next-Page-Token")
    tlist.add_argument("--all", action="store_true", help="follow every page")
    tlist.add_argument(
        "--history", type=lambda t: parse_int(t, "--history", high=1000), default=None, metavar="N"
    )
    leaf(
        tasks, "subscribe", "(re)attach to a task's event stream; resumes a cut stream", "task_subscribe"
    ).add_argument("task", metavar="TASK_ID")
    push = tasks.add_parser("push-config", help="push-notification configurations of a task")
    pushes = push.add_subparsers(dest="push_command", metavar="ACTION", parser_class=Parser, required=True)
    pcreate = leaf(pushes, "create", "create a push-notification configuration", "push_create")
    pcreate.add_argument("task", metavar="TASK_ID")
    pcreate.add_argument("--url", required=True, help="the webhook URL the agent posts to")
    pcreate.add_argument("--token", default=None, help="token the agent sends with each notification")
    pcreate.add_argument("--config-id", default=None, metavar="ID")
    for name, help_text in (("get", "get one configuration"), ("delete", "delete one configuration")):
        sub = leaf(pushes, name, help_text, f"push_{name}")
        sub.add_argument("task", metavar="TASK_ID")
        sub.add_argument("config_id", metavar="CONFIG_ID")
    leaf(pushes, "list", "list a task's configurations", "push_list").add_argument("task", metavar="TASK_ID")
    down = leaf(tasks, "download", "save a task's artifacts to files", "task_download")
    down.add_argument("task", metavar="TASK_ID")
    down.add_argument("--dir", default=".", help="folder to write into (default: the working directory)")
    down.add_argument("--force", action="store_true", help="overwrite existing files")

    config = commands.add_parser("config", help="effective settings (read-only)").add_subparsers(
        dest="config_command", metavar="ACTION", parser_class=Parser, required=True
    )
    leaf(config, "show", "print every effective setting and where it came from", "config_show")
    leaf(commands, "completion", "print a shell completion script", "completion").add_argument(
        "shell", choices=SHELLS
    )
    leaf(commands, "conformance", "smoke-check a live agent", "conformance")
    helper = leaf(commands, "help", "usage of the tool or of a command", "help")
    helper.add_argument("topic", nargs="*", metavar="COMMAND")

    agents = commands.add_parser("agents", help="the known-agents registry (Quineling)").add_subparsers(
        dest="agents_command", metavar="ACTION", parser_class=Parser, required=True
    )
    add = leaf(agents, "add", "register an agent by its card reference", "agents_add")
    add.add_argument("ref", metavar="REF")
    alist = leaf(agents, "list", "list known agents", "agents_list")
    alist.add_argument("--skill", default=None, help="only agents offering this skill id or tag")
    leaf(agents, "check", "health-check known agents (all, or the one named)", "agents_check").add_argument(
        "ref", nargs="?", default=None, metavar="REF"
    )
    leaf(agents, "remove", "forget an agent", "agents_remove").add_argument("ref", metavar="REF")

    create = leaf(
        commands, "create", "Quineling: create a lifeform from a thought, print the result", "create"
    )
    create.add_argument("thought")
    op = leaf(commands, "op", "Quineling: run one runtime operation, print the result", "op")
    op.add_argument("operation")
    op.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a request field (VALUE is JSON when it parses, else a string); repeatable",
    )
    op.add_argument(
        "--data",
        dest="op_data",
        default=None,
        metavar="FILE|-",
        help="the request's fields as a JSON object, - is stdin; --field adds to it",
    )
    op.add_argument(
        "--svg",
        default=None,
        metavar="FILE",
        help="frame, offspringFrame: also write the body's picture to FILE as SVG (the console's viewer draws the same)",
    )
    for name in ("serve", "serve-grpc", "store", "keys"):
        commands.add_parser(name, help=f"operator command: quineling {name} --help", add_help=False)
    return root


def flags_of(namespace: argparse.Namespace) -> dict[str, Any]:
    """The global options typed on the command line, aliases folded in and lists flattened."""
    typed = {
        option.dest: getattr(namespace, option.dest) for option in OPTIONS if hasattr(namespace, option.dest)
    }
    for dest in ("transport", "svc_param", "allow_origin"):
        if dest in typed:
            typed[dest] = tuple(typed[dest])
    return typed


def pre_scan_config(argv: Sequence[str]) -> str | None:
    """``--config`` before parsing: the help text shows defaults that depend on it."""
    for index, word in enumerate(argv):
        if word == "--config" and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith("--config="):
            return word.split("=", 1)[1]
    return None
