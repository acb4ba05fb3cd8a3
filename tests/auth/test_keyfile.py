"""The keys file: its grammar, the constant-time match, and the edits ``quineling keys`` makes."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import multiprocessing
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from quineling.auth import keyfile
from quineling.auth.keyfile import (
    KeySet,
    add_key,
    key_line,
    new_token,
    parse_keys,
    revoke_keys,
    token_digest,
)
from quineling.auth.watch import ParseError

HEX = "0123456789abcdef" * 4


def test_lines_comments_and_blank_lines() -> None:
    text = f"# keys\n\nalice sha256:{HEX}   # laptop\n  bob.smith-2_x   sha256:{'f' * 64}\n"
    keys = parse_keys(text)
    assert [(e.principal, e.digest.hex(), e.line) for e in keys.entries] == [
        ("alice", HEX, 3),
        ("bob.smith-2_x", "f" * 64, 4),
    ]
    assert keys.principals() == ["alice", "bob.smith-2_x"]
    assert parse_keys("") == KeySet() and parse_keys("# nothing\n\n") == KeySet()


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (f"alice sha256:{HEX.upper()}", "lower-case hex"),
        (f"alice sha256:{HEX[:-1]}", "64 lower-case hex"),
        (f"alice sha512:{HEX}", "sha256:"),
        (f"alice {HEX}", "sha256:"),
        ("alice", "got 1 fields"),
        (f"alice sha256:{HEX} extra", "got 3 fields"),
        (f"al ice sha256:{HEX}", "got 3 fields"),
        (f"al:ice sha256:{HEX}", "principal name"),
        (f"{'a' * 65} sha256:{HEX}", "principal name"),
        (f"jwt~x sha256:{HEX}", "principal name"),
        (f"anonymous sha256:{HEX}", "reserved for the unauthenticated caller"),
    ],
)
def test_a_bad_line_is_refused_naming_its_number_never_its_contents(line: str, why: str) -> None:
    with pytest.raises(ParseError) as refused:
        parse_keys(f"# first\n{line}\n")
    assert refused.value.args[0].startswith("line 2: ") and why in str(refused.value)
    assert HEX not in str(refused.value) and HEX.upper() not in str(refused.value)


def test_the_same_key_twice_is_refused() -> None:
    with pytest.raises(ParseError, match="line 2: the same key as line 1"):
        parse_keys(f"alice sha256:{HEX}\nbob sha256:{HEX}\n")


def test_a_token_matches_its_principal_by_the_sha256_of_its_utf8_bytes() -> None:
    token = "qk_é-token"
    keys = parse_keys(f"alice sha256:{hashlib.sha256(token.encode()).hexdigest()}\nbob sha256:{HEX}\n")
    assert keys.match(token) == "alice"
    assert keys.match(token + "x") is None and keys.match("") is None
    assert keys.match(HEX) is None  # the hash itself is no token


def test_match_compares_with_every_key_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key is compared with hmac.compare_digest, whichever matches (or none): the time depends on the
    number of keys only."""
    tokens = [f"t{n}" for n in range(5)]
    keys = parse_keys("".join(key_line(f"p{n}", t) for n, t in enumerate(tokens)))
    calls: list[tuple[bytes, bytes]] = []
    compare = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return compare(a, b)

    monkeypatch.setattr(keyfile.hmac, "compare_digest", counting)
    for token in [tokens[0], tokens[4], "nobody"]:
        calls.clear()
        keys.match(token)
        assert len(calls) == 5 and all(a == token_digest(token) for a, _ in calls)


def test_new_tokens_carry_256_random_bits() -> None:
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100
    for token in tokens:
        assert re.fullmatch(r"qk_[A-Za-z0-9_-]{43}", token)  # 32 bytes, base64url without padding
        assert token.count(".") == 0  # never mistaken for a JWT


def test_add_creates_a_private_file_and_appends_the_hash_only(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    first = add_key(path, "alice")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text(path.read_text() + "# rotated on Monday")  # no final newline
    second = add_key(path, "alice")
    text = path.read_text()
    assert first not in text and second not in text
    assert text == key_line("alice", first) + "# rotated on Monday\n" + key_line("alice", second)
    keys = parse_keys(text)
    assert keys.match(first) == keys.match(second) == "alice"
    path.chmod(0o640)
    add_key(path, "bob")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # a replaced file keeps its mode


def test_add_refuses_a_bad_name_or_a_malformed_file(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    with pytest.raises(ValueError, match="not a principal name"):
        add_key(path, "no spaces")
    with pytest.raises(ValueError, match="reserved"):  # the store commands' name for the anonymous caller
        add_key(path, "anonymous")
    path.write_text("alice nonsense\n")
    with pytest.raises(ParseError, match="line 1"):
        add_key(path, "bob")
    assert path.read_text() == "alice nonsense\n"


def test_revoke_removes_every_key_of_the_principal_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    a1, b1, a2 = add_key(path, "alice"), add_key(path, "bob"), add_key(path, "alice")
    path.write_text("# header\n" + path.read_text())
    assert revoke_keys(path, "alice") == 2
    assert path.read_text() == "# header\n" + key_line("bob", b1)
    assert revoke_keys(path, "alice") == 0
    assert parse_keys(path.read_text()).match(a1) is None and parse_keys(path.read_text()).match(a2) is None


def _keys(*argv: str) -> tuple[int, str, str]:
    """``quineling keys …`` in process, stdout and stderr captured."""
    from quineling.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["keys", *argv])
    return code, out.getvalue(), err.getvalue()


def test_keys_commands_speak_json_and_revoke_one_key_by_fingerprint(tmp_path: Path) -> None:
    path = str(tmp_path / "keys")
    code, out, _ = _keys("add", "alice", "--file", path, "-o", "json")
    first = json.loads(out)
    assert code == 0 and first["principal"] == "alice" and first["token"].startswith("qk_")
    second = add_key(path, "alice")
    code, out, _ = _keys("list", "--file", path, "-o", "json")
    listed = json.loads(out)["keys"]
    assert code == 0 and [k["principal"] for k in listed] == ["alice", "alice"]
    code, out, _ = _keys("revoke", "alice", "--key", listed[0]["fingerprint"], "--file", path, "-o", "json")
    assert code == 0 and json.loads(out) == {"principal": "alice", "revoked": 1}
    keys = parse_keys(Path(path).read_text())
    assert keys.match(first["token"]) is None and keys.match(second) == "alice"  # only that key went
    code, out, _ = _keys("revoke", "alice", "--key", listed[0]["fingerprint"], "--file", path, "-o", "json")
    assert code == 1 and json.loads(out)["error"]["code"] == "QUINELING_NOT_FOUND"


def test_keys_errors_use_the_cli_envelope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUINELING_AUTH_KEYS_FILE", raising=False)
    code, out, _ = _keys("list", "-o", "json")
    assert code == 2 and json.loads(out)["error"]["code"] == "A2ACLI_ERR_USAGE"
    code, out, err = _keys("list")
    assert code == 2 and out == "" and err.startswith("Error: A2ACLI_ERR_USAGE\nMessage: name the keys file")
    bad = tmp_path / "keys"
    bad.write_text("alice nonsense\n")
    code, out, _ = _keys("list", "--file", str(bad), "-o", "json")
    error = json.loads(out)["error"]
    assert code == 2 and error["code"] == "QUINELING_KEYS_FILE_MALFORMED" and "line 1" in error["message"]
    code, out, _ = _keys("revoke", "-o", "json")  # no NAME: argparse's refusal, in the envelope too
    assert code == 2 and json.loads(out)["error"]["code"] == "A2ACLI_ERR_USAGE"
    code, out, _ = _keys("revoke", "alice", "--key", "xyz", "--file", str(bad), "-o", "json")
    assert code == 2 and "is not a key fingerprint" in json.loads(out)["error"]["message"]


def _add_many(path: str, name: str, count: int, out: Any) -> None:
    out.put([add_key(path, name) for _ in range(count)])


@pytest.mark.slow
def test_concurrent_adds_lose_no_key(tmp_path: Path) -> None:
    """Four processes adding at once: the lock around each read-modify-replace keeps every key."""
    path = str(tmp_path / "keys")
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    workers = [context.Process(target=_add_many, args=(path, f"p{n}", 10, out)) for n in range(4)]
    for worker in workers:
        worker.start()
    tokens = [token for _ in workers for token in out.get(timeout=60)]
    for worker in workers:
        worker.join(timeout=60)
    keys = parse_keys(Path(path).read_text())
    assert len(keys.entries) == 40
    assert all(keys.match(token) is not None for token in tokens)
