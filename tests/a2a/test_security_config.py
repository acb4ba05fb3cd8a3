"""The authentication settings and the safe default: no authentication, no non-loopback address (unless
QUINELING_ALLOW_ANONYMOUS says so), refused by ``quineling serve``, the gunicorn config and gunicorn's own
``--bind`` alike, before anything listens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from quineling.auth.keyfile import add_key
from quineling.network import is_loopback
from quineling.server.options import check_exposure, gunicorn_options
from quineling.settings import ConfigError, authenticator, load_settings
from tests.support import tokens
from tests.support.live import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("host", ["127.0.0.1", "127.10.0.1", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "example.test", "[::]", ""])
def test_other_hosts_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize("bind", ["0.0.0.0:8049", "[::]:80", "10.1.2.3:8049", "myhost:80", "::"])
def test_an_anonymous_non_loopback_bind_is_refused_and_says_why(bind: str) -> None:
    settings = load_settings(env={})
    with pytest.raises(ConfigError) as refused:
        check_exposure(settings, [bind])
    message = str(refused.value)
    assert bind in message and "without authentication" in message
    assert "QUINELING_AUTH_KEYS_FILE" in message and "QUINELING_ALLOW_ANONYMOUS=1" in message
    check_exposure(load_settings({"allow_anonymous": "1"}, env={}), [bind])
    check_exposure(load_settings({"auth_keys_file": "/keys"}, env={}), [bind])


@pytest.mark.parametrize(
    "bind", ["127.0.0.1:8049", "[::1]:8049", "localhost:1", "unix:/tmp/q.sock", "fd://3"]
)
def test_local_binds_need_no_authentication(bind: str) -> None:
    check_exposure(load_settings(env={}), [bind])


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"auth_jwks": "/jwks.json"}, "needs QUINELING_AUTH_JWT_ISSUER and QUINELING_AUTH_JWT_AUDIENCE"),
        ({"auth_jwks": "/j", "auth_jwt_issuer": "i"}, "QUINELING_AUTH_JWT_AUDIENCE"),
        ({"auth_jwks": "http://idp.example/jwks"}, "https:// URL"),
        ({"auth_jwt_algorithms": "HS256"}, "QUINELING_AUTH_JWT_ALGORITHMS"),
        ({"auth_jwt_algorithms": "RS256,none"}, "QUINELING_AUTH_JWT_ALGORITHMS"),
        ({"auth_jwt_algorithms": " , "}, "QUINELING_AUTH_JWT_ALGORITHMS"),
        ({"auth_jwt_leeway_seconds": "301"}, "QUINELING_AUTH_JWT_LEEWAY_SECONDS"),
        ({"auth_jwt_leeway_seconds": "-1"}, "QUINELING_AUTH_JWT_LEEWAY_SECONDS"),
        ({"auth_jwt_principal_claim": " "}, "QUINELING_AUTH_JWT_PRINCIPAL_CLAIM"),
        ({"max_scopes": "0"}, "QUINELING_MAX_SCOPES"),
        ({"scope_idle_seconds": "0"}, "QUINELING_SCOPE_IDLE_SECONDS"),
        ({"allow_anonymous": "maybe"}, "QUINELING_ALLOW_ANONYMOUS"),
    ],
)
def test_bad_authentication_settings_name_the_variable(config: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_settings(config, env={})


def test_jwks_urls_are_https_or_loopback_http() -> None:
    for url in (
        "https://idp.example/.well-known/jwks.json",
        "http://127.0.0.1:9000/jwks",
        "http://localhost/j",
    ):
        load_settings({"auth_jwks": url, "auth_jwt_issuer": "i", "auth_jwt_audience": "a"}, env={})


def test_missing_or_malformed_auth_files_fail_with_the_variable_and_line(tmp_path: Path) -> None:
    missing = load_settings({"auth_keys_file": str(tmp_path / "nope")}, env={})
    with pytest.raises(ConfigError, match=r"QUINELING_AUTH_KEYS_FILE: .*nope: No such file"):
        authenticator(missing)
    bad = tmp_path / "keys"
    bad.write_text("# ok\nalice sha256:XYZ\n")
    with pytest.raises(ConfigError, match=r"QUINELING_AUTH_KEYS_FILE: .*keys: line 2: "):
        authenticator(load_settings({"auth_keys_file": str(bad)}, env={}))
    jwks = tmp_path / "jwks.json"
    jwks.write_text('{"keys": "no"}')
    config = {"auth_jwks": str(jwks), "auth_jwt_issuer": "i", "auth_jwt_audience": "a"}
    with pytest.raises(ConfigError, match="QUINELING_AUTH_JWKS .*jwks.json: not a usable JWKS"):
        authenticator(load_settings(config, env={}))
    assert authenticator(load_settings(env={})) is None


def test_the_gunicorn_master_checks_the_auth_files_without_importing_jwt_or_ssl(tmp_path: Path) -> None:
    """With keys and a JWKS configured, reading the settings in the master imports neither PyJWT nor ssl (a
    gevent worker patches ssl after the fork), yet a malformed file still stops start-up there, named."""
    keys, jwks = tmp_path / "keys", tmp_path / "jwks.json"
    add_key(keys, "alice")
    jwks.write_text(json.dumps(tokens.jwks(tokens.SigningKey.rsa())))
    env = {"QUINELING_AUTH_KEYS_FILE": str(keys), "QUINELING_AUTH_JWKS": str(jwks),
           "QUINELING_AUTH_JWT_ISSUER": "i", "QUINELING_AUTH_JWT_AUDIENCE": "a"}  # fmt: skip
    code = (
        "import runpy, sys; runpy.run_path('deploy/gunicorn.conf.py'); "
        "print(sorted(m for m in ('jwt', 'ssl', 'flask') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **env})  # fmt: skip
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stderr
    config = {"auth_jwks": str(jwks), "auth_jwt_issuer": "i", "auth_jwt_audience": "a"}
    for text, reason in (('{"keys": "no"}', "non-empty 'keys' array"), ("{", "not a usable JWKS"),
                         ('{"keys": [{"n": "x"}]}', "with a 'kty'")):  # fmt: skip
        jwks.write_text(text)
        with pytest.raises(ConfigError, match=f"QUINELING_AUTH_JWKS .*jwks.json: .*{reason}"):
            gunicorn_options(load_settings(config, env={}))
    jwks.unlink()
    with pytest.raises(ConfigError, match="QUINELING_AUTH_JWKS .*jwks.json: .*No such file"):
        gunicorn_options(load_settings(config, env={}))


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    for name in ("QUINELING_AUTH_KEYS_FILE", "QUINELING_AUTH_JWKS", "QUINELING_ALLOW_ANONYMOUS"):
        full.setdefault(name, "")
    return subprocess.run(args, cwd=ROOT, env=full, capture_output=True, text=True, timeout=60)


def test_the_gunicorn_config_refuses_an_anonymous_public_host(tmp_path: Path) -> None:
    conf = [sys.executable, "-c", "import runpy; runpy.run_path('deploy/gunicorn.conf.py')"]
    refused = _run(conf, {"QUINELING_A2A_HOST": "0.0.0.0"})
    assert refused.returncode != 0 and "refusing to serve 0.0.0.0 without authentication" in refused.stderr
    assert _run(conf, {"QUINELING_A2A_HOST": "0.0.0.0", "QUINELING_ALLOW_ANONYMOUS": "1"}).returncode == 0
    keys = tmp_path / "keys"
    add_key(keys, "alice")
    assert (
        _run(conf, {"QUINELING_A2A_HOST": "0.0.0.0", "QUINELING_AUTH_KEYS_FILE": str(keys)}).returncode == 0
    )
    keys.write_text("alice sha256:nothex\n")
    malformed = _run(conf, {"QUINELING_AUTH_KEYS_FILE": str(keys)})
    assert malformed.returncode != 0 and "line 1: the key must be" in malformed.stderr


def test_quineling_serve_refuses_an_anonymous_public_host() -> None:
    cli = [sys.executable, "-m", "quineling.cli", "serve", "--host", "0.0.0.0", "--port", str(free_port())]
    refused = _run(cli, {})
    assert refused.returncode == 2
    assert refused.stderr.startswith("quineling: refusing to serve 0.0.0.0 without authentication")


@pytest.mark.slow
def test_gunicorns_own_bind_flag_is_checked_too() -> None:
    """``gunicorn -c deploy/gunicorn.conf.py -b 0.0.0.0:PORT`` overrides the config's loopback bind: the
    on_starting hook refuses it before any socket is opened."""
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "deploy/gunicorn.conf.py",
        "-b",
        f"0.0.0.0:{port}",
        "wsgi:app",
    ]
    refused = _run(args, {})
    assert refused.returncode == 1, refused.stderr
    assert f"quineling: refusing to serve 0.0.0.0:{port} without authentication" in refused.stderr
    assert "Listening at" not in refused.stderr
