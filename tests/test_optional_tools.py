"""Tests that need an optional tool (tests/support/tools.py) skip without it, naming the tool and how to get it,
and fail instead when the matching QUINELING_REQUIRE_* is set; on a machine without any of the tools, the suites
that use them are skipped, not errored, so ``./dev test`` is green there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.deploy.test_topology import TOOLS as TOPOLOGY_TOOLS
from tests.support.tools import require_tool

ROOT = Path(__file__).resolve().parents[1]
REQUIRE_VARIABLES = [name for name in os.environ if name.startswith("QUINELING_REQUIRE_")]


def executable(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_a_tool_on_the_path_is_found_by_its_name_or_an_alias(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("QUINELING_REQUIRE_TEST_TOOL", raising=False)
    tool, alias = executable(tmp_path, "tool-a"), executable(tmp_path, "tool-b-browser")
    assert require_tool("tool-a", "get it", "QUINELING_REQUIRE_TEST_TOOL") == str(tool)
    found = require_tool("tool-b", "get it", "QUINELING_REQUIRE_TEST_TOOL", aliases=("tool-b-browser",))
    assert found == str(alias)


def test_a_missing_tool_skips_naming_it_and_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("QUINELING_REQUIRE_TEST_TOOL", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_tool("nginx", "apt-get install nginx", "QUINELING_REQUIRE_TEST_TOOL")
    assert str(skipped.value) == "nginx is not installed (apt-get install nginx)"


def test_a_missing_tool_fails_when_its_variable_requires_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("QUINELING_REQUIRE_TEST_TOOL", "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        require_tool("nginx", "apt-get install nginx", "QUINELING_REQUIRE_TEST_TOOL")
    assert (
        str(failed.value)
        == "QUINELING_REQUIRE_TEST_TOOL is set but nginx is not installed (apt-get install nginx)"
    )


@pytest.mark.slow  # a pytest run of its own
def test_without_the_tools_their_suites_skip_with_reasons(tmp_path: Path) -> None:
    """The suites that need nginx, tc, ip netns, chromium or Node, run with no QUINELING_REQUIRE_* and a PATH
    without nginx, chromium and Node — but with iproute2 and redis-server where this machine has them, as on a
    fresh root machine, where the topology used to error with "nginx is not installed": every test is skipped
    (none errors), each reason naming what is missing."""
    report = tmp_path / "report.xml"
    env = {k: v for k, v in os.environ.items() if k not in REQUIRE_VARIABLES}
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in TOPOLOGY_TOOLS:
        if tool != "nginx" and (found := shutil.which(tool)):
            (tools / tool).symlink_to(found)
    env["PATH"] = str(tools)  # the tests find their tools through PATH only
    suites = ["tests/deploy/test_topology.py", "tests/e2e/test_docs_page.py", "tests/interop/test_js_sdk.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", f"--junitxml={report}",
         *suites],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cases = ET.parse(report).getroot().iter("testcase")
    reasons: dict[str, set[str]] = {}
    for case in cases:
        skipped = case.find("skipped")
        assert skipped is not None, (
            f"{case.get('classname')}.{case.get('name')} ran or errored without its tools"
        )
        reasons.setdefault(str(case.get("file") or case.get("classname")), set()).add(
            skipped.get("message", "")
        )
    text = " ".join(message for found in reasons.values() for message in found)
    missing = next(tool for tool in TOPOLOGY_TOOLS if not (tools / tool).exists())
    topology = (
        "needs root" if os.geteuid() != 0 else f"{missing} is not installed ({TOPOLOGY_TOOLS[missing]})"
    )
    for expected in (
        topology,
        "chromium is not installed (apt-get install chromium)",
        "node is not installed",
    ):
        assert expected in text, f"no skip says {expected!r}: {reasons}"
