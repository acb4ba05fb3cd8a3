"""Every gunicorn internal the server relies on, imported and inspected: a gunicorn release that moves or
renames one fails here, not in ``quineling serve`` at start-up (pyproject.toml bounds gunicorn to the
releases this passes on)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import gunicorn
import pytest
import requests
from gunicorn import config as gunicorn_config
from gunicorn import util
from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger
from gunicorn.http2 import negotiation
from gunicorn.workers.ggevent import GeventWorker
from gunicorn.workers.gthread import ThreadWorker

from quineling.config import Settings, gunicorn_options
from tests.support.live import live_server


def test_version_is_within_the_declared_bounds() -> None:
    major = int(gunicorn.__version__.split(".")[0])
    assert major == 27


def test_the_lean_worker_internals_exist() -> None:
    assert isinstance(gunicorn.SERVER, str) and gunicorn.SERVER
    assert callable(util.close) and isinstance(util.http_date(0), str)
    assert list(inspect.signature(negotiation.prior_knowledge_allowed).parameters) == ["cfg", "peer_addr"]
    for method in ("load_wsgi", "handle", "handle_request", "init_process"):
        assert callable(getattr(GeventWorker, method)), method
    assert list(inspect.signature(GeventWorker.handle).parameters)[1:] == ["listener", "client", "addr"]
    assert callable(ThreadWorker.handle)


def test_the_logger_and_application_hooks_exist() -> None:
    for method in ("access", "setup", "atoms"):
        assert callable(getattr(Logger, method)), method
    for method in ("load_config", "load", "run"):
        assert callable(getattr(BaseApplication, method)), method


def test_every_option_the_server_passes_is_a_gunicorn_setting() -> None:
    known = gunicorn_config.Config().settings
    for settings in (Settings(), Settings(control_socket="/tmp/q.ctl", worker_class="gthread")):
        unknown = set(gunicorn_options(settings)) - set(known)
        assert not unknown, unknown


def test_control_socket_is_off_unless_named() -> None:
    assert gunicorn_options(Settings())["control_socket_disable"] is True
    named = gunicorn_options(Settings(control_socket="/run/q/gunicorn.ctl"))
    assert named["control_socket"] == "/run/q/gunicorn.ctl" and named["control_socket_disable"] is False


def test_the_default_worker_imports_in_a_fresh_interpreter() -> None:
    # As gunicorn's master resolves the worker class: a fresh process, nothing of the app imported before.
    code = "import quineling.lean_worker as m; print(m.LeanGeventWorker.__mro__[1].__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "gunicorn.workers.ggevent"


def test_two_servers_on_one_host_open_no_shared_control_socket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gunicorn's default is $XDG_RUNTIME_DIR/gunicorn.ctl: two servers would take it from each other.
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    own = tmp_path / "own.ctl"
    with live_server(), live_server(control_socket=str(own)) as named:
        assert requests.get(named.url("/healthz"), timeout=5).status_code == 200
        assert own.is_socket()
        assert not (tmp_path / "gunicorn.ctl").exists()
        assert not (tmp_path / ".gunicorn").exists()
