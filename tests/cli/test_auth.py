"""Credentials against a live agent that requires them (API keys file, bearer scheme on the card): flag and
variable, the exit code 4 pair (missing vs rejected), redaction under --debug and the --insecure warning."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from quineling.auth.keyfile import add_key
from tests.cli.support import clean_env, cli_in_process
from tests.support.live import LiveServer, live_server

pytestmark = pytest.mark.slow
SQUARE_SUM = "[2,3,4] | square | sum | report total"


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("cli-auth")
    return {
        "file": str(folder / "keys"),
        **{name: add_key(folder / "keys", name) for name in ("alice", "bob")},
    }


@pytest.fixture(scope="module")
def server(tokens: dict[str, str]) -> Iterator[LiveServer]:
    with live_server(auth_keys_file=tokens["file"]) as live:
        yield live


def test_bearer_from_flag_or_variable_and_exit_4(
    server: LiveServer, tokens: dict[str, str], tmp_path: Path
) -> None:
    """AUTH_001, AUTH_002 (env form; flag > env), EXIT_001 (4), OUT_004, INTERACT_002 (another's task)."""
    env = clean_env(tmp_path)
    a = ["-a", server.base_url, "-o", "json"]
    missing = cli_in_process("send", SQUARE_SUM, *a, cwd=tmp_path, env=env)
    assert missing.code == 4 and missing.json()["error"]["code"] == "A2ACLI_ERR_CREDENTIALS_MISSING"
    assert "--bearer" in missing.json()["error"]["hint"]
    # A token HTTP cannot carry is refused as a usage error naming the problem, never an internal error.
    odd = cli_in_process("send", SQUARE_SUM, *a, "--bearer", "tök-en", cwd=tmp_path, env=env)
    error = odd.json()["error"]
    assert odd.code == 2 and error["code"] == "A2ACLI_ERR_USAGE" and "printable ASCII" in error["message"]
    assert "tök" not in odd.out + odd.err
    wrong = cli_in_process("send", SQUARE_SUM, *a, "--bearer", "not-a-key", cwd=tmp_path, env=env)
    assert wrong.code == 4 and wrong.json()["error"]["code"] == "A2ACLI_ERR_AUTH_FAILED"
    assert "not-a-key" not in wrong.out + wrong.err
    by_env = cli_in_process(
        "send", SQUARE_SUM, *a, cwd=tmp_path, env={**env, "A2ACLI_BEARER": tokens["alice"]}
    )
    task = by_env.json()["task"]
    assert by_env.code == 0 and task["status"]["state"] == "TASK_STATE_COMPLETED"
    # The flag wins over the variable: bob cannot see alice's task, alice can.
    as_bob = cli_in_process(
        "task",
        "get",
        task["id"],
        *a,
        "--bearer",
        tokens["bob"],
        cwd=tmp_path,
        env={**env, "A2ACLI_BEARER": tokens["alice"]},
    )
    assert as_bob.code == 1 and as_bob.json()["error"]["code"] == "TaskNotFoundError"
    for binding in ("JSONRPC", "HTTP+JSON"):
        as_alice = cli_in_process(
            "task",
            "get",
            task["id"],
            *a,
            "--transport",
            binding,
            cwd=tmp_path,
            env={**env, "A2ACLI_BEARER": tokens["alice"]},
        )
        assert as_alice.code == 0 and as_alice.json()["id"] == task["id"]


def test_debug_shows_the_wire_but_never_a_credential(
    server: LiveServer, tokens: dict[str, str], tmp_path: Path
) -> None:
    """OUT_007, AUTH_004, AUTH_003, DEFAULT_001 (TLS row: the warning)."""
    secret_param = "trace-secret-value"
    debug = cli_in_process(
        "send",
        SQUARE_SUM,
        "-a",
        server.base_url,
        "--debug",
        "--insecure",
        "--svc-param",
        f"x-custom:{secret_param}",
        "-o",
        "json",
        cwd=tmp_path,
        env={**clean_env(tmp_path), "A2ACLI_BEARER": tokens["alice"]},
    )
    assert debug.code == 0 and json.loads(debug.out)["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert '"method":"SendMessage"' in debug.err and "a2a-version: 1.0" in debug.err  # the raw wire
    assert tokens["alice"] not in debug.err + debug.out and secret_param not in debug.err
    assert "authorization: [redacted]" in debug.err
    assert "WARNING: --insecure" in debug.err and "credentials" in debug.err
