"""Run the documents' shell helper ``send`` for real: bash, python3 and HTTP against a served app."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from werkzeug.serving import make_server

from quineling.app import create_app


@contextmanager
def served_app(config: dict[str, Any] | None = None) -> Iterator[str]:
    """A fresh in-memory app on a free local port, served by werkzeug in a thread; yields its origin."""
    app = create_app(config={"store_url": "memory://", **(config or {})})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def run_helper(helper: str, sends: list[tuple[str, str]]) -> dict[str, tuple[str, Any]]:
    """Define ``helper`` in bash, run ``send NAME 'REQUEST'`` for each pair in order (one shell, one answers
    file), and return ``{name: (state printed on stderr, answer printed on stdout)}``."""
    bash, python = shutil.which("bash"), shutil.which("python3")
    assert bash and python, "the helper needs bash and python3"
    with served_app() as origin, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        lines = [helper]
        for name, request in sends:
            assert "'" not in request  # the document's convention: requests sit in single quotes
            lines.append(f"send {name} '{request}' >{name}.out 2>{name}.err")
        done = subprocess.run(
            [bash, "-c", "set -e\n" + "\n".join(lines)],
            cwd=work,
            env={"PATH": str(Path(python).parent) + ":/usr/bin:/bin", "A2A_URL": f"{origin}/a2a/jsonrpc"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return {
            name: (
                (work / f"{name}.err").read_text().strip(),
                json.loads((work / f"{name}.out").read_text()),
            )
            for name, _ in sends
        }
