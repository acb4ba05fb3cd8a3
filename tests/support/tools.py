"""Optional tools some tests need (nginx, ``tc``, ``ip netns``, chromium, Node): without one, the test is
skipped with a reason that names the tool and how to get it, so ``./dev test`` is green on a machine with only
Python; with the matching ``QUINELING_REQUIRE_*`` variable set (CI sets them), the test fails instead, so a
broken CI image cannot pass by skipping. README.md, "Optional tools", lists them."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

# What each QUINELING_REQUIRE_* variable makes mandatory (README.md, "Optional tools").
REQUIRE_NETNS = (
    "QUINELING_REQUIRE_NETNS"  # root, ip netns, tc, nginx, redis-server: tests/deploy/test_topology.py
)
REQUIRE_BROWSER = (
    "QUINELING_REQUIRE_BROWSER"  # chromium (and axe-core): tests/e2e/test_docs_page.py, test_console.py
)
REQUIRE_INTEROP = (
    "QUINELING_REQUIRE_INTEROP"  # Node and the official SDKs: tests/interop, tests/cli, tests/client
)


def unavailable(reason: str, env_var: str) -> NoReturn:
    """Skip with ``reason``, or fail with it when ``env_var`` is set (to anything but empty)."""
    if os.environ.get(env_var):
        pytest.fail(f"{env_var} is set but {reason}", pytrace=False)
    pytest.skip(reason)


def require_tool(name: str, how_to_get: str, env_var: str, *, aliases: tuple[str, ...] = ()) -> str:
    """The path of the executable ``name`` (or the first of ``aliases`` found, e.g. chromium's other names);
    without any of them the test is skipped as ``name is not installed (how_to_get)``, or fails under
    ``env_var``."""
    for candidate in (name, *aliases):
        path = shutil.which(candidate)
        if path is not None:
            return path
    unavailable(f"{name} is not installed ({how_to_get})", env_var)


NODE_HOW_TO_GET = "apt-get install nodejs npm, then: bash tests/interop/js/install.sh"
