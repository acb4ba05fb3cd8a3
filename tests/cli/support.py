"""Running ``quineling`` as a real subprocess, the way a script does: a clean environment (no A2ACLI_*
variable and an empty HOME unless a test sets them) and a working directory with no .env."""

from __future__ import annotations

import io
import json
import logging
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


def _argv(args: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "quineling", *args]


def cli(*args: str, cwd: Path, env: dict[str, str], stdin: str | None = None, timeout: float = 60) -> Run:
    proc = subprocess.run(_argv(args), cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    return Run(proc.returncode, proc.stdout, proc.stderr)


# `python -m quineling` with Ctrl-C's handler installed even when this session was started with SIGINT ignored
# (a shell's background job is): the CLI would inherit that and never see a test's SIGINT.
_INTERRUPTIBLE = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                  "runpy.run_module('quineling', run_name='__main__', alter_sys=True)")  # fmt: skip


def spawn(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """``quineling ARGS`` started as a real process, stdout and stderr piped as text: for what only a running
    process shows (output flushed line by line, Ctrl-C). Use it as a context manager, as ``Popen``."""
    return subprocess.Popen([sys.executable, "-c", _INTERRUPTIBLE, *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


_LOGGERS = ("quineling.client", "quineling.cli")


def cli_in_process(*args: str, cwd: Path, env: dict[str, str], stdin: str | None = None) -> Run:
    """The same ``main()`` the console script calls, in this process, as a fresh process would see it: only
    ``env`` in the environment, ``cwd`` as the working directory, its own stdin/stdout/stderr (not terminals),
    and the per-process client state (card cache, local breakers and registry, latency window, debug logging)
    reset before and after. About 1 s cheaper per run than a subprocess; tests of process behaviour (flushing
    line by line, signals) spawn a real one with :func:`cli`."""
    from quineling.cli_a2a import main
    from quineling.client import discovery, latency, shared

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_io = sys.stdin, sys.stdout, sys.stderr
    loggers = {
        name: (logging.getLogger(name).level, list(logging.getLogger(name).handlers)) for name in _LOGGERS
    }
    out, err = io.StringIO(), io.StringIO()

    def reset() -> None:
        discovery.CACHE.clear()
        shared._local = None  # noqa: SLF001 - a fresh process has no local state yet
        latency.TRACKER.clear()
        for name, (level, handlers) in loggers.items():
            logging.getLogger(name).setLevel(level)
            logging.getLogger(name).handlers[:] = handlers

    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    reset()
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin or ""), out, err
    try:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_io
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        reset()
    return Run(code, out.getvalue(), err.getvalue())
