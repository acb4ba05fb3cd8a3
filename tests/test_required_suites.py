"""``QUINELING_REQUIRE_REDIS`` (tests/conftest.py): a skipped real-Redis test fails the run, serially and on
pytest-xdist workers alike (their reports reach the controller's hooks), and says which test was skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST = "tests/stores/test_state_store.py::test_absent_keys_read_as_none_version_zero"


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["0", "1"])  # 1: one xdist worker reporting to its controller
def test_a_skipped_required_redis_test_fails_the_run(workers: str) -> None:
    env = {**os.environ, "QUINELING_TEST_REDIS_URL": "", "QUINELING_REQUIRE_REDIS": "1"}
    command = [sys.executable, "-m", "pytest", "-n", workers, "-p", "no:cacheprovider", "-k", "not cluster"]
    run = subprocess.run([*command, TEST], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout
    assert "passed, 1 skipped" in run.stdout and "failed" not in run.stdout  # nothing failed but the check
    assert "QUINELING_REQUIRE_REDIS is set but 1 real-Redis test(s) were skipped" in run.stdout
    assert f"{TEST}[redis]" in run.stdout
