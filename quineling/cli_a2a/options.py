"""The global options, their ``A2ACLI_*`` variables and built-in defaults, and how a value is read from text.

One table drives the parser, the environment and dotenv files, ``config show`` and the defaults that ``--help``
prints. A variable is ``A2ACLI_`` plus the long flag in upper snake case; aliases have none, and ``--stream``,
``--config``, ``-h`` and ``-v`` are flags only."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from quineling.cli_a2a.errors import usage

TEXT, BOOL, DURATION, LIST, INT, JSON_OBJECT, SECRET = (
    "text",
    "bool",
    "duration",
    "list",
    "int",
    "json",
    "secret",
)


@dataclass(frozen=True, slots=True)
class Option:
    dest: str
    flags: tuple[str, ...]
    kind: str
    default: Any
    help: str
    env: bool = True  # settable from the environment and dotenv files
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    metavar: str | None = None

    @property
    def long(self) -> str:
        return next(flag for flag in self.flags if flag.startswith("--"))

    @property
    def variable(self) -> str | None:
        return "A2ACLI_" + self.long[2:].upper().replace("-", "_") if self.env else None


OPTIONS: tuple[Option, ...] = (
    Option(
        "agent_card",
        ("-a", "--agent-card"),
        TEXT,
        None,
        "the agent: host or origin, card URL, or card file",
        metavar="REF",
    ),
    Option(
        "a2a_version",
        ("--a2a-version",),
        TEXT,
        "1.0",
        "A2A version to speak: 1.0, or 0.3 by explicit opt-in only",
        metavar="VERSION",
    ),
    Option(
        "async_",
        ("--async",),
        BOOL,
        False,
        "return the task's identifiers at once instead of waiting",
        aliases=("--return-immediately", "--no-wait"),
    ),
    Option(
        "wait",
        ("--wait",),
        BOOL,
        None,
        "wait for a terminal or interrupted state (send: the default; task get: poll)",
        aliases=("--watch",),
    ),
    Option(
        "bearer",
        ("--bearer",),
        SECRET,
        None,
        "bearer token (visible in the process table: prefer A2ACLI_BEARER)",
        metavar="TOKEN",
    ),
    Option(
        "api_key",
        ("--api-key",),
        SECRET,
        None,
        "API key, sent where the card's scheme says (visible in the process table: prefer A2ACLI_API_KEY)",
        metavar="KEY",
    ),
    Option(
        "allow_origin",
        ("--allow-origin",),
        LIST,
        (),
        "another origin that may receive the credentials when the card points there, repeatable "
        "(default: only the agent's own origin)",
        metavar="ORIGIN",
    ),
    Option(
        "context_id",
        ("--context-id",),
        TEXT,
        None,
        "start the new task in this existing context",
        metavar="ID",
    ),
    Option("task_id", ("--task-id",), TEXT, None, "continue this existing task", metavar="ID"),
    Option(
        "debug", ("--debug",), BOOL, False, "diagnostics and the raw wire on stderr (credentials redacted)"
    ),
    Option("verbose", ("--verbose",), BOOL, False, "show every part exchanged, history and metadata"),
    Option("output", ("-o", "--output"), TEXT, "text", "output format", choices=("text", "json")),
    Option(
        "stream", ("--stream",), BOOL, False, "follow the live event stream (JSONL with -o json)", env=False
    ),
    Option(
        "poll_interval",
        ("--poll-interval",),
        DURATION,
        2.0,
        "first delay between polls; backs off to 5x",
        metavar="DURATION",
    ),
    Option(
        "timeout",
        ("--timeout",),
        DURATION,
        600.0,
        "how long to wait for a terminal or interrupted state (0: no limit)",
        metavar="DURATION",
    ),
    Option(
        "transport",
        ("--transport",),
        LIST,
        (),
        "preferred binding, repeatable, highest first: JSONRPC, HTTP+JSON (default: the card's order)",
        metavar="BINDING",
    ),
    Option("insecure", ("--insecure",), BOOL, False, "do not verify TLS certificates (development only)"),
    Option(
        "svc_param",
        ("--svc-param",),
        LIST,
        (),
        "service parameter KEY:VALUE sent as an HTTP header, repeatable",
        metavar="KEY:VALUE",
    ),
    Option(
        "metadata",
        ("--metadata",),
        JSON_OBJECT,
        None,
        "JSON object put in the request's metadata",
        metavar="JSON",
    ),
    Option(
        "retries",
        ("--retries",),
        INT,
        2,
        "automatic retries of requests that are safe to repeat",
        metavar="N",
    ),
    Option("no_retry", ("--no-retry",), BOOL, False, "no automatic retries (same as --retries 0)"),
    Option(
        "idempotency_key",
        ("--idempotency-key",),
        TEXT,
        None,
        "send: the Idempotency-Key (reuse it to repeat this send safely; default: a fresh one per send when "
        "the agent declares support)",
        env=False,  # one key per logical send: a key from the environment would merge unrelated sends
        metavar="KEY",
    ),
)
BY_DEST = {option.dest: option for option in OPTIONS}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str, where: str) -> float:
    """``2``, ``2s``, ``500ms``, ``1.5m``, ``1h30m``: seconds as a float. A bare number is seconds."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        pieces = _DURATION.findall(value)
        if not pieces or "".join(a + b for a, b in pieces) != value:
            raise usage(f"{where}: {text!r} is not a duration (examples: 2, 2s, 500ms, 1m30s)") from None
        seconds = sum(float(amount) * _UNITS[unit] for amount, unit in pieces)
    if not seconds >= 0 or seconds == float("inf"):
        raise usage(f"{where}: {text!r} is not a duration of zero or more seconds")
    return seconds


def parse_bool(text: str, where: str) -> bool:
    folded = text.strip().lower()
    if folded in _TRUE:
        return True
    if folded in _FALSE:
        return False
    raise usage(f"{where}: {text!r} is not a boolean (use 1/0, true/false, yes/no or on/off)")


def parse_json_object(text: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise usage(f"{where}: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise usage(f'{where}: must be a JSON object such as \'{{"k": "v"}}\'')
    return value


def parse_int(text: str, where: str, *, low: int = 0, high: int = 10) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise usage(f"{where}: {text!r} is not a whole number") from None
    if not low <= value <= high:
        raise usage(f"{where}: {value} is outside {low}..{high}")
    return value


def from_text(option: Option, text: str, where: str) -> Any:
    """A value from the environment or a dotenv file. A list there is comma-separated."""
    if option.kind == BOOL:
        return parse_bool(text, where)
    if option.kind == DURATION:
        return parse_duration(text, where)
    if option.kind == INT:
        return parse_int(text, where)
    if option.kind == JSON_OBJECT:
        return parse_json_object(text, where)
    if option.kind == LIST:
        return tuple(item.strip() for item in text.split(",") if item.strip())
    if option.choices and text not in option.choices:
        raise usage(f"{where}: {text!r} is not one of {', '.join(option.choices)}")
    return text
