"""The gunicorn master's part: the metrics directory prepared and emptied, a dead worker's live gauge dropped
by prometheus-client's own ``mark_process_dead`` (in a process of its own), and nothing of Flask, ssl or
prometheus-client imported by the master's logging."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from quineling.server.metrics_dir import MULTIPROC_ENV, MetricsDirectory, hooks

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _restore_environment() -> Iterator[None]:
    """prepare() sets the variable for the workers to inherit; this process must not keep it."""
    saved = os.environ.get(MULTIPROC_ENV)
    yield
    if saved is None:
        os.environ.pop(MULTIPROC_ENV, None)
    else:
        os.environ[MULTIPROC_ENV] = saved


def test_a_configured_directory_is_made_and_emptied_of_metric_files_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "counter_1.db").write_bytes(b"old")
    (folder / "notes.txt").write_text("kept")
    directory = MetricsDirectory(str(folder))
    assert directory.prepare() == str(folder) and os.environ[MULTIPROC_ENV] == str(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    directory.remove()  # not made here: left alone
    assert folder.is_dir()


def test_without_a_setting_the_library_variable_then_a_private_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path / "given"))
    assert MetricsDirectory().prepare() == str(tmp_path / "given")
    monkeypatch.delenv(MULTIPROC_ENV)
    made = MetricsDirectory()
    path = Path(made.prepare())
    assert path.is_dir() and oct(path.stat().st_mode & 0o777) == "0o700"
    made.remove()
    assert not path.exists()


def test_an_exited_workers_live_gauge_is_dropped_and_its_counters_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    directory = MetricsDirectory(str(tmp_path))
    directory.prepare()
    for name in ("gauge_livesum_4242.db", "counter_4242.db", "gauge_livesum_4343.db"):
        (tmp_path / name).write_bytes(b"")
    child_exit = hooks(directory)["child_exit"]
    child_exit(SimpleNamespace(LISTENERS=[]), SimpleNamespace(pid=4242))  # stopping: nothing is done
    assert (tmp_path / "gauge_livesum_4242.db").exists()
    child_exit(SimpleNamespace(LISTENERS=["socket"]), SimpleNamespace(pid=4242))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counter_4242.db", "gauge_livesum_4343.db"]


def test_the_masters_logging_imports_no_flask_ssl_or_prometheus() -> None:
    code = (
        "import sys, runpy; runpy.run_path('deploy/gunicorn.conf.py'); "
        "import quineling.server.gunicorn_log; "
        "print(sorted(m for m in ('flask', 'ssl', 'prometheus_client', 'redis') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
