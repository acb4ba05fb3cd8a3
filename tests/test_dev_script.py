"""``./dev``: usage and exit codes, and a first-use bootstrap that two terminals can start at once.

Each test runs a copy of the script beside a copy of pyproject.toml in a temporary directory, so the real
``.venv`` is never touched. ``QUINELING_DEV_FAKE_INSTALL`` stands in for venv creation and pip only (it sleeps,
then writes ``bin/python`` — a script that echoes its arguments — and appends its pid to ``.fake-installs``);
the stamp, the lock and the messages around it are the script's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL_SECONDS = "2"  # long enough for a second ./dev to arrive while the first one holds the lock


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def environ(**extra: str) -> dict[str, str]:
    ours = ("QUINELING_VENV", "QUINELING_DEV_FAKE_INSTALL", "QUINELING_TEST_WORKERS")
    env = {k: v for k, v in os.environ.items() if k not in ours}
    return {**env, **extra}


def dev(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(project / "dev"), *args], env=environ(**env), capture_output=True, text=True, timeout=30
    )


def installs(venv: Path) -> list[str]:
    log = venv / ".fake-installs"
    return log.read_text().split() if log.exists() else []


def stamps(venv: Path) -> list[str]:
    return sorted(path.name for path in venv.glob(".installed-*"))


@pytest.mark.parametrize("args", [(), ("help",), ("-h",), ("--help",)])
def test_usage_exits_0_without_bootstrapping(project: Path, args: tuple[str, ...]) -> None:
    done = dev(project, *args)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("Usage: ./dev TASK [ARGS]\n")
    for task in ("serve", "quineling", "test", "lint", "bench", "help"):
        assert f"\n  {task} " in done.stdout
    assert "#" not in done.stdout  # clean text, not the script's comment lines
    assert not (project / ".venv").exists()


def test_unknown_task_prints_usage_and_exits_2(project: Path) -> None:
    done = dev(project, "tset", "-q")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("./dev: unknown task 'tset'\n")
    assert "Usage: ./dev TASK [ARGS]" in done.stderr
    assert not (project / ".venv").exists()


def test_two_first_uses_at_once_install_once(project: Path, tmp_path: Path) -> None:
    venv = tmp_path / "shared venv"  # QUINELING_VENV, with a space to keep the script's quoting honest
    env = environ(QUINELING_VENV=str(venv), QUINELING_DEV_FAKE_INSTALL=INSTALL_SECONDS)

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(project / "dev"), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    first = start("test", "-q", "tests/a")
    assert first.stderr is not None
    # The first one announces the install only once it holds the lock: start the second one now.
    announced = first.stderr.readline()
    assert announced == f"bootstrapping {venv} from pyproject.toml (first use, about a minute)…\n"
    second = start("test", "--co")
    second_out, second_err = second.communicate(timeout=30)
    first_out, first_err = first.communicate(timeout=30)

    assert first.returncode == 0, first_err
    assert first_err == f"bootstrapped {venv}\n"
    assert first_out == "fake python: -m pytest -q tests/a\n"  # the task ran on the new venv's python
    assert second.returncode == 0, second_err
    assert second_err == f"waiting for another ./dev to finish bootstrapping {venv}…\n"
    assert second_out == "fake python: -m pytest --co\n"
    # The second one waited, found the venv ready and installed nothing.
    assert installs(venv) == [str(first.pid)]
    assert len(stamps(venv)) == 1
    assert not (project / ".venv").exists()

    again = dev(project, "test", QUINELING_VENV=str(venv), QUINELING_DEV_FAKE_INSTALL=INSTALL_SECONDS)
    assert (again.returncode, again.stderr, again.stdout) == (0, "", "fake python: -m pytest -n 4\n")
    assert len(installs(venv)) == 1


def test_failed_install_shows_its_output_and_the_next_run_retries(project: Path) -> None:
    venv = project / ".venv"  # the default place
    failed = dev(project, "test", QUINELING_DEV_FAKE_INSTALL="fail")
    assert failed.returncode == 1 and failed.stdout == ""
    assert "ERROR: fake pip failure\n" in failed.stderr  # pip's own output is not swallowed
    assert "./dev: bootstrapping .venv failed (full log: .venv/.bootstrap.log)" in failed.stderr
    assert stamps(venv) == []

    retried = dev(project, "test", QUINELING_DEV_FAKE_INSTALL="0")
    assert retried.returncode == 0, retried.stderr
    assert retried.stdout == "fake python: -m pytest -n 4\n"
    assert len(installs(venv)) == 1 and len(stamps(venv)) == 1


def test_the_whole_suite_runs_on_workers_and_args_run_as_given(project: Path) -> None:
    """Bare `./dev test` is the parallel suite (README, CI); with ARGS, pytest gets exactly those."""
    assert dev(project, "test", QUINELING_DEV_FAKE_INSTALL="0").stdout == "fake python: -m pytest -n 4\n"
    workers = dev(project, "test", QUINELING_TEST_WORKERS="6")
    assert workers.stdout == "fake python: -m pytest -n 6\n"
    single = dev(project, "test", "tests/a.py::test_b", "-s")
    assert single.stdout == "fake python: -m pytest tests/a.py::test_b -s\n"


def test_quineling_passes_every_argument_to_the_venvs_command_line(project: Path) -> None:
    """The README's `./dev quineling …` lines work in a fresh shell: no venv to activate, arguments as given."""
    done = dev(
        project, "quineling", "send", "-a", "127.0.0.1:8049", "[2,3] | sum", QUINELING_DEV_FAKE_INSTALL="0"
    )
    assert done.returncode == 0
    assert done.stdout == "fake quineling: send -a 127.0.0.1:8049 [2,3] | sum\n"


def test_changing_pyproject_reinstalls(project: Path) -> None:
    venv = project / ".venv"
    assert dev(project, "test", QUINELING_DEV_FAKE_INSTALL="0").returncode == 0
    (old,) = stamps(venv)
    with (project / "pyproject.toml").open("a") as toml:
        toml.write("\n# a changed dependency\n")
    changed = dev(project, "test", QUINELING_DEV_FAKE_INSTALL="0")
    assert changed.returncode == 0, changed.stderr
    assert "(pyproject.toml changed, about a minute)" in changed.stderr
    assert len(installs(venv)) == 2
    (new,) = stamps(venv)
    assert new != old
