"""The README's command lines work verbatim in a fresh shell, as its curl lines do (tests/docs/test_readme.py).

No line calls a bare ``quineling``, which a fresh shell does not find: they go through ``./dev quineling``
(``./dev`` execs ``.venv/bin/quineling`` with the arguments as given: tests/test_dev_script.py). Every
``./dev quineling`` and ``./dev serve`` line in an ``sh`` fence then runs, in order, as a reader runs it:

* ``./dev serve`` starts a real server (``quineling serve``, gunicorn) with the line's variables, on a free port
  where the README says 8049; it serves the rest of its fence, and the README's first one serves the fences
  that start none (the reader's server in another terminal).
* ``./dev quineling ARGS`` runs this environment's ``quineling`` with ``127.0.0.1:8049`` pointed at that
  server and the README's system paths (``/etc/quineling/keys``) at temporary files; it must exit 0, and
  with ``-o json`` print JSON.
* A token that ``keys add`` printed must let its caller in on the fence's server, and no token must not.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from quineling.version import __version__
from tests.docs.examples import ROOT, Document
from tests.docs.test_readme import ORIGIN, shell_commands
from tests.support.live import wait_answering
from tests.support.ports import free_port

pytestmark = [pytest.mark.slow]  # real servers

QUINELING = str(Path(sys.executable).parent / "quineling")
ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")
SYSTEM_PATHS = ("/etc/quineling/keys",)  # a reader's system paths; the test writes temporary files instead
README_ADDRESS = ORIGIN.removeprefix("http://")
TIMEOUT = 60


@dataclass
class Served:
    """A ``./dev serve`` of the README, on its own port."""

    process: subprocess.Popen[bytes]
    address: str
    log: Path

    def get(self, path: str, token: str | None = None) -> requests.Response:
        headers = {"A2A-Version": "1.0", **({"Authorization": f"Bearer {token}"} if token else {})}
        return requests.get(f"http://{self.address}{path}", headers=headers, timeout=10)


@dataclass
class Reader:
    """What a reader's shell has: temporary stand-ins for system paths, and the tokens ``keys add`` printed."""

    paths: dict[str, str]
    tokens: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)

    def localize(self, word: str, server: Served | None) -> str:
        for system, local in self.paths.items():
            word = word.replace(system, local)
        if server is not None:
            word = word.replace(README_ADDRESS, server.address)
        return word


def split(command: str) -> tuple[dict[str, str], list[str]]:
    """A command's leading ``VAR=value`` assignments, and its words."""
    words = shlex.split(command, comments=True)
    env: dict[str, str] = {}
    while words and ASSIGNMENT.fullmatch(words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return env, words


@contextmanager
def serve(env: dict[str, str]) -> Iterator[Served]:
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="quineling-readme-cli-", suffix=".log")[1])
    run_env = {**os.environ, **env, "QUINELING_A2A_PORT": str(port), "PYTHONPATH": str(ROOT)}
    with log.open("wb") as sink:
        process = subprocess.Popen([QUINELING, "serve"], cwd=ROOT, env=run_env, stdout=sink, stderr=sink)
    served = Served(process, f"127.0.0.1:{port}", log)
    try:
        wait_answering(f"http://{served.address}/healthz", process, log, TIMEOUT)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.unlink(missing_ok=True)


def run_cli(reader: Reader, where: str, env: dict[str, str], args: list[str], server: Served | None) -> str:
    argv = [QUINELING, *(reader.localize(word, server) for word in args)]
    run_env = {**os.environ, **{k: reader.localize(v, server) for k, v in env.items()}}
    done = subprocess.run(argv, cwd=ROOT, env=run_env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{where}: {shlex.join(argv)} exited {done.returncode}:\n{done.stderr}"
    if "-o" in args and args[args.index("-o") + 1] == "json":
        json.loads(done.stdout)  # the JSON it promises
    if args[:2] == ["keys", "add"]:
        reader.tokens.append(done.stdout.split("\n", 1)[0].strip())
    if args == ["--version"]:
        assert done.stdout == f"quineling {__version__}\n", where
    reader.ran.append(shlex.join(["./dev", "quineling", *args]))
    return done.stdout


def cli_fences(doc: Document) -> list[tuple[int, list[tuple[int, str]]]]:
    """The ``sh`` fences with a ``./dev quineling`` or ``./dev serve`` line, and their commands. The
    ``first-five-minutes`` fence is left to tests/docs/test_first_five_minutes.py, which runs it through a real
    shell (it captures a command's output) and checks what it prints."""
    found = []
    for fence in doc.fences:
        if fence.language != "sh" or "first-five-minutes" in fence.tags:
            continue
        commands = shell_commands(fence)
        if any(split(c)[1][:2] in (["./dev", "quineling"], ["./dev", "serve"]) for _, c in commands):
            found.append((fence.line, commands))
    return found


def test_no_readme_line_calls_a_bare_quineling() -> None:
    """A fresh shell has no ``quineling`` on its PATH: every command line says ``./dev quineling``."""
    doc = Document.load("README.md")
    for fence in doc.fences:
        for offset, line in enumerate(fence.body.split("\n")):
            words = line.split()
            while words and ASSIGNMENT.fullmatch(words[0]):
                words.pop(0)
            assert not words or words[0] != "quineling", (
                f"{doc.where(fence.line + 1 + offset)}: `quineling` is not found in a fresh shell; "
                "write ./dev quineling"
            )


def test_every_cli_line_in_the_readme_runs(tmp_path: Path) -> None:
    doc = Document.load("README.md")
    reader = Reader({path: str(tmp_path / path.strip("/").replace("/", "-")) for path in SYSTEM_PATHS})
    with ExitStack() as document:
        default: Served | None = None
        for fence_line, commands in cli_fences(doc):
            with ExitStack() as fence:
                server, tokens_before = default, len(reader.tokens)
                for line, command in commands:
                    env, words = split(command)
                    where = doc.where(line)
                    if words[:2] == ["./dev", "serve"]:
                        assert words == ["./dev", "serve"], (
                            f"{where}: ./dev serve takes its settings from the environment here"
                        )
                        stack = fence if default is not None else document
                        server = stack.enter_context(
                            serve({k: reader.localize(v, None) for k, v in env.items()})
                        )
                        default = default or server
                    elif words[:2] == ["./dev", "quineling"]:
                        run_cli(reader, where, env, words[2:], server)
                for token in reader.tokens[tokens_before:]:
                    assert server is not None and server is not default, f"{doc.where(fence_line)}: no server"
                    assert server.get("/a2a/rest/tasks", token).status_code == 200, (
                        "the printed token is let in"
                    )
                    assert server.get("/a2a/rest/tasks").status_code == 401, "no token: refused"
    for expected in ("--version", "send ", "op ", "keys add "):
        assert any(ran.startswith(f"./dev quineling {expected}") for ran in reader.ran), reader.ran
