"""``docs/architecture.md`` names only what exists: every path under ``quineling/``, ``stores/``, ``deploy/`` or
``tests/`` it mentions is a file or folder of the repository, and every dotted name under ``quineling`` or
``stores`` is a module, or an attribute of one (``stores.base.KeyClaim``, ``A2AService`` as
``quineling.a2a.service.A2AService``). A map that names a module that moved misleads more than no map."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.docs.examples import ROOT

DOC = ROOT / "docs" / "architecture.md"

# Named before they exist on this branch. Each entry says why; drop it once the path is merged.
PENDING: set[str] = set()  # paths a doc may name before the branch that adds them lands (none now)

PATH = re.compile(r"(?<![\w./-])((?:quineling|stores|deploy|tests)/[\w./-]*)")
DOTTED = re.compile(r"(?<![\w./-])((?:quineling|stores)(?:\.[A-Za-z_]\w*)+)(?![\w/-])")


def mentioned_paths(text: str) -> set[str]:
    return {m.rstrip(".,") for m in PATH.findall(text)}


def mentioned_names(text: str) -> set[str]:
    return {m.rstrip(".") for m in DOTTED.findall(text)}


def resolves(dotted: str) -> bool:
    """A module, or an attribute chain of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def missing_paths(text: str) -> list[str]:
    return sorted(p for p in mentioned_paths(text) - PENDING if not (ROOT / p).exists())


def unresolved_names(text: str) -> list[str]:
    # ``quineling/app.py`` is a path (checked above); ``quineling.app`` a module.
    return sorted(n for n in mentioned_names(text) if not n.endswith(".py") and not resolves(n))


@pytest.fixture(scope="module")
def text() -> str:
    return DOC.read_text(encoding="utf-8")


def test_every_path_exists(text: str) -> None:
    assert len(mentioned_paths(text)) > 40  # the map names the modules, not just the folders
    assert missing_paths(text) == []


def test_every_dotted_module_exists(text: str) -> None:
    assert len(mentioned_names(text)) > 5
    assert unresolved_names(text) == []


def test_the_checks_can_fail() -> None:
    text = (
        "`quineling/a2a/service.py` and `stores/redis/lua/commit_task.lua` exist; `quineling/a2a/gone.py`, "
        "`stores/nowhere/` do not. quineling.a2a.service.A2AService resolves; quineling.a2a.gone and "
        "stores.base.NoSuchThing do not."
    )
    assert missing_paths(text) == ["quineling/a2a/gone.py", "stores/nowhere/"]
    assert unresolved_names(text) == ["quineling.a2a.gone", "stores.base.NoSuchThing"]
