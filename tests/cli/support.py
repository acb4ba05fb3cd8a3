"""Running ``quineling`` as a real subprocess, the way a script does: a clean environment (no A2ACLI_*
variable and an empty HOME unless a test sets them) and a working directory with no .env."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out.splitlines()]

    def fields(self) -> dict[str, str]:
        """The first value of every ``Label: value`` line."""
        found: dict[str, str] = {}
        for line in self.out.splitlines():
            label, sep, value = line.partition(": ")
            if sep and label.replace("-", "").isalnum():
                found.setdefault(label, value)
        return found


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("A2ACLI_", "QUINELING_"))}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), **extra)
    env.pop("XDG_CONFIG_HOME", None)
    return env


def cli(*args: str, cwd: Path, env: dict[str, str], stdin: str | None = None, timeout: float = 60) -> Run:
    proc = subprocess.run([sys.executable, "-m", "quineling", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    return Run(proc.returncode, proc.stdout, proc.stderr)
