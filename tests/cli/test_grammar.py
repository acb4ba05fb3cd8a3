"""The command line's grammar, settings and output rules, in process (no agent): what a script can rely on
before any request is sent."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from quineling.cli_a2a import main, parts
from quineling.cli_a2a.errors import EXIT_CODES, CliError
from quineling.cli_a2a.options import OPTIONS, parse_duration
from quineling.cli_a2a.render import Out
from quineling.cli_a2a.settings import resolve, waits


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No stray .env or A2ACLI_* variable of the machine leaks into a test."""
    for name in list(os.environ):
        if name.startswith("A2ACLI_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    work = tmp_path / "work" / "sub"
    work.mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(work)
    return tmp_path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def test_every_variable_is_the_long_flag_in_upper_snake_case() -> None:
    names = {option.long: option.variable for option in OPTIONS}
    assert names["--agent-card"] == "A2ACLI_AGENT_CARD" and names["--a2a-version"] == "A2ACLI_A2A_VERSION"
    assert names["--api-key"] == "A2ACLI_API_KEY" and names["--poll-interval"] == "A2ACLI_POLL_INTERVAL"
    assert names["--stream"] is None  # --stream is a typed flag only
    for option in OPTIONS:
        if option.variable:
            assert option.variable == "A2ACLI_" + option.long[2:].upper().replace("-", "_")


def test_precedence_flag_env_local_global_default(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        isolated / "home/.config/a2a-cli/.env",
        "A2ACLI_AGENT_CARD=global\nA2ACLI_CONTEXT_ID=g\nA2ACLI_TASK_ID=g\nA2ACLI_TIMEOUT=1m\n",
    )
    # The local .env is found walking up from the working directory (work/sub → work).
    write(
        isolated / "work/.env",
        "A2ACLI_AGENT_CARD=local\nA2ACLI_CONTEXT_ID=l\nexport A2ACLI_POLL_INTERVAL=500ms\nUNRELATED=1\n",
    )
    monkeypatch.setenv("A2ACLI_AGENT_CARD", "env")
    settings = resolve({"agent_card": "flag"})
    assert (settings["agent_card"], settings.source("agent_card")) == ("flag", "flag")
    settings = resolve({})
    assert (settings["agent_card"], settings.source("agent_card")) == ("env", "env")
    assert (settings["context_id"], settings.source("context_id")) == ("l", f"file:{isolated / 'work/.env'}")
    assert settings["task_id"] == "g" and settings["timeout"] == 60.0 and settings["poll_interval"] == 0.5
    assert (settings["output"], settings.source("output")) == ("text", "default")
    # --config replaces the local file (not the global one); the environment still wins over it.
    chosen = write(isolated / "agent-b.env", "A2ACLI_CONTEXT_ID=b\nA2ACLI_AGENT_CARD=b\n")
    settings = resolve({}, config_path=str(chosen))
    assert settings["context_id"] == "b" and settings["agent_card"] == "env" and settings["task_id"] == "g"
    assert settings["poll_interval"] == 2.0  # the walked-up .env is not read


def test_xdg_config_home_moves_the_global_file(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(isolated / "xdg/a2a-cli/.env", "A2ACLI_OUTPUT=json\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(isolated / "xdg"))
    assert resolve({})["output"] == "json"


def test_stream_is_never_read_from_the_environment_or_a_file(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2ACLI_STREAM", "1")
    write(isolated / "work/.env", "A2ACLI_STREAM=true\n")
    assert resolve({})["stream"] is False
    assert resolve({"stream": True})["stream"] is True


def test_bad_values_are_usage_errors_naming_the_source(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("A2ACLI_INSECURE", "maybe")
    code, out, err = run(["config", "show"], capsys)
    assert code == 2 and "A2ACLI_INSECURE" in err and "Error: A2ACLI_ERR_USAGE" in err and out == ""
    monkeypatch.delenv("A2ACLI_INSECURE")
    write(isolated / "work/.env", "A2ACLI_TIMEOUT=soon\n")
    code, out, _ = run(["-o", "json", "config", "show"], capsys)
    assert code == 2 and "A2ACLI_TIMEOUT in" in json.loads(out)["error"]["message"]


def test_async_and_wait_are_one_choice(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert waits(resolve({})) is True  # send waits by default
    assert waits(resolve({"async_": True})) is False
    monkeypatch.setenv("A2ACLI_ASYNC", "true")
    assert waits(resolve({})) is False
    assert waits(resolve({"wait": True})) is True  # a typed --wait overrides a configured async
    with pytest.raises(CliError) as caught:
        waits(resolve({"wait": True, "async_": True}))
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2", 2.0), ("2s", 2.0), ("500ms", 0.5), ("1.5m", 90.0), ("1h30m", 5400.0), ("0", 0.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "--timeout") == seconds


@pytest.mark.parametrize("text", ["", "abc", "-1", "2x", "1s2", "inf", "nan", "s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(CliError, match="--timeout"):
        parse_duration(text, "--timeout")


def test_parts_keep_their_order_and_media_types_bind_backwards(isolated: Path) -> None:
    data = write(isolated / "in.json", '{"k": [1, 2]}')
    blob = isolated / "report.pdf"
    blob.write_bytes(b"%PDF-1.4 \x00\xff")
    typed = [
        {"kind": "text", "value": "one", "media_type": "text/markdown"},
        {"kind": "file", "value": str(blob), "media_type": None},
        {"kind": "data", "value": "-", "media_type": None},
        {"kind": "file", "value": "https://example.com/x.bin", "media_type": "application/x-thing"},
        {"kind": "data", "value": str(data), "media_type": None},
        {"kind": "file", "value": str(blob), "media_type": "application/octet-stream"},
    ]
    built = parts.build("first", typed, stdin=io.StringIO('{"from": "stdin"}'))
    assert built[0] == {"text": "first"}
    assert built[1] == {"text": "one", "mediaType": "text/markdown"}
    assert built[2]["filename"] == "report.pdf" and built[2]["mediaType"] == "application/pdf"  # inferred
    assert built[2]["raw"] == "JVBERi0xLjQgAP8="
    assert built[3] == {"data": {"from": "stdin"}}
    assert built[4] == {
        "url": "https://example.com/x.bin",
        "filename": "x.bin",
        "mediaType": "application/x-thing",
    }
    assert built[5] == {"data": {"k": [1, 2]}}
    assert built[6]["mediaType"] == "application/octet-stream"  # given, so not inferred


def test_send_part_flags_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["send", "--media-type", "text/plain", "--text", "x"],
        ["send", "--text", "x", "--media-type", "a/b", "--media-type", "c/d"],
    ):
        code, out, err = run(["-o", "json", *argv], capsys)
        assert code == 2 and json.loads(out)["error"]["code"] == "A2ACLI_ERR_USAGE" and err == ""


def test_usage_errors_exit_2_with_one_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["frobnicate"],
        ["task", "get"],
        ["task", "list", "--page-size", "0"],
        ["card"],
        ["completion", "tcsh"],
        ["task", "get", "--history", "x", "t"],
    ):
        code, out, err = run(["--output", "json", *argv], capsys)
        assert code == 2, argv
        document = json.loads(out)  # exactly one document on stdout
        assert set(document["error"]) == {"code", "message", "hint", "a2aCode"}
        assert document["error"]["code"] == "A2ACLI_ERR_USAGE"
    code, out, err = run(["send", "--output", "yaml", "x"], capsys)
    assert code == 2 and out == "" and "invalid choice: 'yaml'" in err


def test_version_and_help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in ("-v", "--version"):
        code, out, _ = run([flag], capsys)
        assert code == 0 and re.fullmatch(r"quineling \S+\n", out)
    monkeypatch.setenv("A2ACLI_POLL_INTERVAL", "3s")
    for argv in (["help", "send"], ["send", "--help"]):
        code, out, _ = run(argv, capsys)
        out = " ".join(out.split())
        assert code == 0 and "--poll-interval" in out and "now: 3s, from env" in out and "now: 600s" in out
    code, out, _ = run(["help", "task", "get"], capsys)
    assert code == 0 and "--history" in out and "TASK_ID" in out
    code, out, _ = run(["help"], capsys)
    assert code == 0 and "card" in out and "send" in out and "serve" in out
    code, _, err = run(["help", "nothing"], capsys)
    assert code == 2 and "A2ACLI_ERR_USAGE" in err


def test_config_show_is_read_only_and_redacts(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    local = write(
        isolated / "work/.env", "A2ACLI_BEARER=s3cret-token\nA2ACLI_SVC_PARAM=x-key:hidden\n", 0o644
    )
    before = local.read_bytes()
    monkeypatch.setenv("A2ACLI_TRANSPORT", "HTTP+JSON,JSONRPC")
    code, out, err = run(["-o", "json", "config", "show", "--timeout", "5s"], capsys)
    rows = {row["option"]: row for row in json.loads(out)["settings"]}
    assert code == 0 and "s3cret" not in out and "hidden" not in out
    assert rows["--bearer"] == {
        "option": "--bearer",
        "variable": "A2ACLI_BEARER",
        "value": "(set, redacted)",
        "source": f"file:{local}",
    }
    assert rows["--transport"]["value"] == "HTTP+JSON,JSONRPC" and rows["--transport"]["source"] == "env"
    assert rows["--timeout"]["source"] == "flag" and rows["--poll-interval"]["source"] == "default"
    assert "chmod 600" in err  # a secret in a file others can read is named
    assert local.read_bytes() == before
    code, out, _ = run(["config", "show"], capsys)
    assert code == 0 and re.search(r"^bearer: \(set, redacted\) \(source: file:", out, re.MULTILINE)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_name_the_commands(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["completion", shell], capsys)
    assert code == 0
    for word in ("card", "send", "task", "subscribe", "--agent-card", "--transport"):
        assert word.lstrip("-") in out


def test_bash_completion_offers_the_operations_after_op(capsys: pytest.CaptureFixture[str]) -> None:
    from quineling.runtime.product_operations import ALL_OPERATIONS

    code, script, _ = run(["completion", "bash"], capsys)
    assert code == 0
    offered = {}
    for typed in ("", "world", "offspringA"):
        shell = f'{script}\nCOMP_WORDS=(quineling op "{typed}"); COMP_CWORD=2; _quineling; echo "${{COMPREPLY[*]}}"'
        done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=10)
        offered[typed] = done.stdout.split()
    assert sorted(offered[""]) == sorted(ALL_OPERATIONS) and len(ALL_OPERATIONS) == 16
    assert offered["world"] == ["worldCommand", "worldCreate", "worldInspect"]
    assert offered["offspringA"] == ["offspringAdmit"]


def test_text_output_has_no_control_codes() -> None:
    sink = io.StringIO()
    out = Out("text", stream=False, verbose=True, stdout=sink, stderr=io.StringIO())
    evil = "red\x1b[31m bell\x07 cr\r"
    out.task(
        {
            "id": "t\x1b]0;x\x07",
            "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [
                {
                    "artifactId": "a",
                    "parts": [
                        {"text": evil + "\nline two"},
                        {"data": {"k": evil}},
                        {"raw": "AAEC", "filename": "f.bin", "mediaType": "x/y"},
                        {"url": "https://e/x"},
                    ],
                }
            ],
        }
    )
    text = sink.getvalue()
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
    assert (
        "Task-Id: t\\x1b]0;x\\x07\n" in text
        and "Artifact-Text:\nred\\x1b[31m bell\\x07 cr\nline two\n\n" in text
    )
    assert "Artifact-File: f.bin\nArtifact-File-Media-Type: x/y\nArtifact-File-Size: 3 bytes\n" in text
    assert "Artifact-File-Url: https://e/x" in text
    # Every line is a field, a block label, block content or the blank line closing a block.
    assert re.match(r"Task-Id: .*\nContext-Id: c\nState: TASK_STATE_COMPLETED\nArtifact: a\n", text)


def test_the_error_registry_is_closed() -> None:
    assert EXIT_CODES == {
        "A2ACLI_ERR_USAGE": 2,
        "A2ACLI_ERR_CARD_NOT_FOUND": 3,
        "A2ACLI_ERR_CARD_INVALID": 1,
        "A2ACLI_ERR_UNREACHABLE": 3,
        "A2ACLI_ERR_CREDENTIALS_MISSING": 4,
        "A2ACLI_ERR_AUTH_FAILED": 4,
        "A2ACLI_ERR_TIMEOUT": 5,
        "A2ACLI_ERR_INTERNAL": 1,
    }
    with pytest.raises(ValueError):
        CliError("A2ACLI_ERR_MADE_UP", "x")
    assert CliError("TaskNotFoundError", "gone", a2a_code=-32001).envelope() == {
        "error": {"code": "TaskNotFoundError", "message": "gone", "hint": None, "a2aCode": -32001}
    }
    assert CliError("TaskNotFoundError", "gone").exit_code == 1


def test_a_registry_name_is_looked_up_only_when_it_cannot_be_a_host(tmp_path: Path) -> None:
    """``-a NAME`` reads the agent registry in QUINELING_STORE_URL; a host never waits on (or fails with) it."""
    from tests.cli.support import clean_env, cli_in_process
    from tests.support.ports import free_port

    dead = free_port()
    env = clean_env(tmp_path, QUINELING_STORE_URL=f"redis://127.0.0.1:{dead}/0")
    host = cli_in_process("card", "get", "-a", f"127.0.0.1:{dead}", "-o", "json", cwd=tmp_path, env=env)
    assert host.code == 3 and host.json()["error"]["code"] == "A2ACLI_ERR_CARD_NOT_FOUND"
    name = cli_in_process("card", "get", "-a", "Quineling", "-o", "json", cwd=tmp_path, env=env)
    error = name.json()["error"]
    assert (
        name.code == 3 and error["code"] == "A2ACLI_ERR_UNREACHABLE" and "agent registry" in error["message"]
    )
