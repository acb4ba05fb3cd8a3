"""The gunicorn master's part in the metrics: one directory for every worker's metric files, emptied at start
and removed at exit when it was made here, and the files of a worker that exited marked dead, so a gauge
(``quineling_streams_open``) stops counting it while its counters keep their totals.

Runs in the master, which must not import prometheus-client: it imports ``ssl`` (through its exposition
module), which a gevent worker has to patch before anything imports it. So the library's
``mark_process_dead`` runs in a short-lived process of its own, once per exited worker — rare (a crash, a
restart), and skipped while the whole server stops (the next start empties the directory anyway)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
MARK_DEAD_TIMEOUT_SECONDS = 10.0
_MARK_DEAD = "import sys; from prometheus_client import multiprocess; multiprocess.mark_process_dead(int(sys.argv[1]), sys.argv[2])"


class MetricsDirectory:
    """Where the workers keep their metric files: ``configured`` (QUINELING_METRICS_DIR), else
    ``PROMETHEUS_MULTIPROC_DIR`` as given, else a fresh private temporary directory."""

    def __init__(self, configured: str = "") -> None:
        self.configured = configured
        self.path = ""
        self.made_here = False

    def prepare(self) -> str:
        """Create or empty the directory (only prometheus-client's ``*.db`` files go) and point the workers
        at it through the environment they inherit."""
        path = self.configured or os.environ.get(MULTIPROC_ENV, "")
        if path:
            Path(path).mkdir(mode=0o700, parents=True, exist_ok=True)
            for leftover in Path(path).glob("*.db"):  # a previous run's values are not this run's
                leftover.unlink(missing_ok=True)
        else:
            path = tempfile.mkdtemp(prefix="quineling-metrics-")
            self.made_here = True
        self.path = path
        os.environ[MULTIPROC_ENV] = path
        return path

    def mark_dead(self, pid: int) -> None:
        if not self.path:
            return
        try:
            subprocess.run(
                [sys.executable, "-c", _MARK_DEAD, str(pid), self.path],
                timeout=MARK_DEAD_TIMEOUT_SECONDS,
                check=False,
                capture_output=True,
            )
        except (OSError, subprocess.SubprocessError):
            pass  # the gauge keeps the dead worker's last value until the next start; nothing else suffers

    def remove(self) -> None:
        if self.made_here and self.path:
            shutil.rmtree(self.path, ignore_errors=True)


def hooks(directory: MetricsDirectory) -> dict[str, Any]:
    """gunicorn hooks for ``directory``: ``child_exit`` marks the worker dead unless the server is stopping
    (its listeners are closed then), ``on_exit`` removes a directory made here."""

    def child_exit(server: Any, worker: Any) -> None:
        if getattr(server, "LISTENERS", None):
            directory.mark_dead(worker.pid)

    def on_exit(server: Any) -> None:
        directory.remove()

    return {"child_exit": child_exit, "on_exit": on_exit}
