"""The README's "First five minutes": its three fences tagged ``first-five-minutes`` (the CLI in ``sh``, the
official Python SDK, the official JS SDK) run against a live server, and what each prints must match the
``text first-five-minutes output`` fence after it (a ``…`` line part stands for an id that differs per run).

The ``sh`` fence's ``./dev quineling`` is run as ``python -m quineling`` from this checkout (the passthrough of
``./dev`` is tested by tests/test_dev_script.py); ``127.0.0.1:8049`` becomes the live server's address. The SDK
fences skip without their SDK unless ``QUINELING_REQUIRE_INTEROP`` is set (tests/interop/conftest.py)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.support import clean_env
from tests.docs.examples import Document, Fence
from tests.interop.conftest import sdk_unavailable
from tests.support.live import LiveServer, live_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
JS_DIR = ROOT / "tests/interop/js"
TAG = "first-five-minutes"
ADDRESS = "127.0.0.1:8049"


def fences() -> dict[str, tuple[Fence, Fence]]:
    """Each tagged fence by language, with the output fence right after it."""
    doc = Document.load("README.md")
    found: dict[str, tuple[Fence, Fence]] = {}
    tagged = [f for f in doc.fences if TAG in f.tags]
    for code, output in zip(tagged[::2], tagged[1::2], strict=True):
        assert output.language == "text" and "output" in output.tags, doc.where(output.line)
        found[code.language] = (code, output)
    assert set(found) == {"sh", "python", "js"}
    return found


FENCES = fences()


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(store_url="memory://") as live:
        yield live


def at(server: LiveServer, text: str) -> str:
    return text.replace(ADDRESS, server.base_url.removeprefix("http://"))


def check(printed: str, output: Fence) -> None:
    shown = output.body.rstrip("\n").split("\n")
    lines = printed.rstrip("\n").split("\n")
    assert len(lines) == len(shown), printed
    for got, expected in zip(lines, shown, strict=True):
        pattern = ".+".join(re.escape(piece) for piece in expected.split("…"))
        assert re.fullmatch(pattern, got), (expected, got)


def test_the_cli_block(server: LiveServer, tmp_path: Path) -> None:
    code, output = FENCES["sh"]
    assert "./dev quineling" in code.body
    script = at(server, code.body).replace("./dev quineling", f"{sys.executable} -m quineling")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
                          env=clean_env(tmp_path), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    check(done.stdout, output)


def test_the_python_sdk_block(server: LiveServer, tmp_path: Path) -> None:
    if importlib.util.find_spec("a2a") is None:
        sdk_unavailable("a2a-sdk is not installed; run: pip install -e '.[interop]'")
    code, output = FENCES["python"]
    script = tmp_path / "first.py"
    script.write_text(at(server, code.body))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    check(done.stdout, output)


def test_the_js_sdk_block(server: LiveServer, tmp_path: Path) -> None:
    node = shutil.which("node")
    installed = JS_DIR / "node_modules/@a2a-js/sdk/package.json"
    if not node or not installed.exists():
        sdk_unavailable("node or @a2a-js/sdk is not installed (run: bash tests/interop/js/install.sh)")
    pinned = json.loads((JS_DIR / "package.json").read_text())["dependencies"]["@a2a-js/sdk"]
    assert json.loads(installed.read_text())["version"] == pinned
    code, output = FENCES["js"]
    assert f"@a2a-js/sdk@{pinned}" in (ROOT / "README.md").read_text()  # the README installs the tested one
    (tmp_path / "node_modules").symlink_to(JS_DIR / "node_modules")  # the pinned SDK, as npm install gives
    script = tmp_path / "first.mjs"
    script.write_text(at(server, code.body))
    done = subprocess.run([node, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    check(done.stdout, output)
