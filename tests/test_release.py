"""What a company needs before it can adopt the code: the Apache-2.0 licence (the A2A specification's and SDKs')
and the package metadata that says so, one package version reported everywhere a person or a probe asks —
``quineling --version``, the start-up banner, ``/healthz`` — and a changelog whose newest release is that
version. The agent card's ``version`` is the agent's and stays ``0.0.0-experimental``."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from quineling import create_app
from quineling.config import load_settings
from quineling.startup import banner
from quineling.version import __version__

ROOT = Path(__file__).resolve().parents[1]
# The Apache License 2.0 as the Apache Software Foundation publishes it (apache.org/licenses/LICENSE-2.0.txt).
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")
KEEP_A_CHANGELOG_SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_the_licence_is_the_full_apache_2_text_and_the_metadata_says_so() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert hashlib.sha256(text.encode()).hexdigest() == APACHE_2_SHA256, "LICENSE is not the Apache-2.0 text"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]


def test_the_version_is_semantic_non_zero_and_built_from_one_place() -> None:
    assert SEMVER.fullmatch(__version__) and __version__ != "0.0.0"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "quineling/version.py"


def test_the_command_line_reports_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "quineling", "--version"], capture_output=True, text=True, timeout=30, cwd=ROOT
    )
    assert done.returncode == 0 and done.stdout == f"quineling {__version__}\n"


def test_the_banner_and_healthz_report_the_version_and_the_card_keeps_its_own() -> None:
    line = banner(load_settings({}, env={}), ["127.0.0.1:8049"])
    assert line.startswith(f"quineling {__version__} serving ")
    client = create_app().test_client()
    assert client.get("/healthz").get_json() == {"status": "ok", "version": __version__}
    card = client.get("/.well-known/agent-card.json").get_json()
    assert card["version"] == "0.0.0-experimental"


def test_the_changelog_keeps_a_changelog_and_its_newest_release_is_this_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n") and "keepachangelog.com/en/1.1.0" in text
    releases = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, flags=re.M)
    assert releases[0] == ("Unreleased", ""), "the first section collects unreleased changes"
    assert releases[1][0] == __version__ and releases[1][1], (
        "the newest release is the package version, dated"
    )
    assert all(SEMVER.fullmatch(name) and date for name, date in releases[1:])
    sections = set(re.findall(r"^### (.+)$", text, flags=re.M))
    assert sections and sections <= KEEP_A_CHANGELOG_SECTIONS, sections
