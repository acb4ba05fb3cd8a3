"""Output of the operator commands (``quineling keys …``, ``quineling store …``) in the same shapes as the A2A
commands (docs/cli.md): ``-o json`` prints one JSON document on stdout, and a failure is the envelope
``{"error": {code, message, hint, a2aCode}}`` on stdout under ``-o json``, else ``Error:``/``Message:``/``Hint:``
lines on stderr. Operator failures carry ``QUINELING_*`` codes (``A2ACLI_ERR_USAGE`` for a usage error); the
exit code is given with each (2 usage or a file or configuration to fix, 1 the thing asked for failed)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from quineling.cli_a2a import requested_output

USAGE = "A2ACLI_ERR_USAGE"


def wants_json(args: argparse.Namespace) -> bool:
    return getattr(args, "output", "text") == "json"


def emit(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def fail(
    args: argparse.Namespace, code: str, message: str, *, hint: str | None = None, exit_code: int
) -> int:
    """Report a failure as every command does and return its exit code."""
    if wants_json(args):
        emit({"error": {"code": code, "message": message, "hint": hint, "a2aCode": None}})
    else:
        lines = [f"Error: {code}", f"Message: {message}"] + ([f"Hint: {hint}"] if hint else [])
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()
    return exit_code


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="output format (default: text)"
    )


class UsageError(Exception):
    """A command line the operator parser refuses: reported in the envelope, exit 2."""


class OperatorParser(argparse.ArgumentParser):
    """argparse, except that a usage error is raised to be reported like every other failure."""

    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


def json_asked(words: list[str]) -> argparse.Namespace:
    """Before parsing succeeds: did the command line ask for ``-o json``? Decides how a usage error looks."""
    return argparse.Namespace(output=requested_output(words))
