"""A watched file follows its edits within the check interval, and a bad edit keeps the last good value."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from quineling.auth.watch import ParseError, WatchedFile


class Monotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def number(text: str) -> int:
    if not text.strip().isdigit():
        raise ParseError("line 1: not a number")
    return int(text)


@pytest.fixture
def clock() -> Monotonic:
    return Monotonic()


def watched(path: Path, clock: Monotonic) -> WatchedFile[int]:
    return WatchedFile(path, number, what="test file", interval=1.0, monotonic=clock)


def test_an_edit_is_seen_once_the_interval_has_passed(tmp_path: Path, clock: Monotonic) -> None:
    path = tmp_path / "f"
    path.write_text("1")
    file = watched(path, clock)
    path.write_text("22")
    assert file.current() == 1  # checked less than a second ago
    clock.now += 1.0
    assert file.current() == 22
    replacement = tmp_path / "g"
    replacement.write_text("33")
    os.replace(replacement, path)  # a new inode, as `quineling keys` writes
    clock.now += 1.0
    assert file.current() == 33


def test_a_same_size_edit_is_seen(tmp_path: Path, clock: Monotonic) -> None:
    path = tmp_path / "f"
    path.write_text("11")
    file = watched(path, clock)
    stat = path.stat()
    path.write_text("12")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # same size, mtime one nanosecond later
    clock.now += 1.0
    assert file.current() == 12


def test_a_bad_edit_or_a_missing_file_keeps_the_last_good_value_and_says_why_once(
    tmp_path: Path, clock: Monotonic, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "f"
    path.write_text("7")
    file = watched(path, clock)
    caplog.set_level(logging.INFO, logger="quineling.auth.watch")
    path.write_text("seven")
    for _ in range(3):
        clock.now += 1.0
        assert file.current() == 7
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"test file {path} not reloaded, keeping the last good one: line 1: not a number"]
    path.unlink()
    for _ in range(3):
        clock.now += 1.0
        assert file.current() == 7
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2
    path.write_text("8")
    clock.now += 1.0
    assert file.current() == 8
    assert caplog.records[-1].getMessage() == f"test file {path} reloaded"


def test_a_bad_or_missing_file_at_start_raises(tmp_path: Path, clock: Monotonic) -> None:
    path = tmp_path / "f"
    with pytest.raises(FileNotFoundError):
        watched(path, clock)
    path.write_text("x")
    with pytest.raises(ParseError):
        watched(path, clock)
