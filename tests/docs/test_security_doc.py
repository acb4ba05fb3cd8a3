"""``docs/security.md`` is executable: its ``quineling keys add`` runs for real, its curls run against an app
that uses the keys file it made (with the printed token as ``TOKEN``), and its 401 bodies are the server's."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.examples import ROOT, Document, mismatches, parse_json
from tests.docs.helper import served_app
from tests.docs.test_readme import run_readme, shell_commands

DOC = "docs/security.md"


@pytest.fixture(scope="module")
def doc() -> Document:
    return Document.load(DOC)


def keys_added(doc: Document, folder: Path) -> tuple[Path, str]:
    """Run the document's ``quineling keys add`` with its file moved into ``folder``; the file and token."""
    (line,) = [
        command
        for fence in doc.fences
        if fence.language == "sh"
        for _, command in shell_commands(fence)
        if command.startswith("quineling keys add")
    ]
    args = shlex.split(line)
    path = folder / Path(args[args.index("--file") + 1]).name
    args[args.index("--file") + 1] = str(path)
    done = subprocess.run(
        [sys.executable, "-m", "quineling.cli", *args[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "shown once" in done.stderr
    return path, done.stdout.strip()


@pytest.mark.slow  # serves the app over HTTP
def test_the_documents_key_and_curl_work_as_shown(doc: Document, tmp_path: Path) -> None:
    path, token = keys_added(doc, tmp_path)
    assert token.startswith("qk_") and token not in path.read_text()
    with served_app({"auth_keys_file": str(path)}) as origin:
        run = run_readme(doc, origin, {"TOKEN": token})
    assert run.answers_checked >= 1
    assert all(reply.curl.headers.get("Authorization") == f"Bearer {token}" for reply in run.replies)


def shown(doc: Document, tag: str) -> object:
    (fence,) = [f for f in doc.fences if f.language == "json" and tag in f.tags]
    return parse_json(fence.body, doc.where(fence.line))


def test_the_401_bodies_shown_are_the_servers(doc: Document, tmp_path: Path) -> None:
    from quineling.app import create_app

    path, _token = keys_added(doc, tmp_path)
    client = create_app(config={"auth_keys_file": str(path)}).test_client()
    rpc = client.post("/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {}})
    rest = client.get("/a2a/rest/tasks", headers={"Authorization": "Bearer qk_wrong"})
    assert (rpc.status_code, rest.status_code) == (401, 401)
    assert mismatches(shown(doc, "unauthenticated-jsonrpc"), rpc.get_json()) == []
    assert mismatches(shown(doc, "unauthenticated-rest"), rest.get_json()) == []
    assert json.dumps(shown(doc, "unauthenticated-rest"), sort_keys=True) == json.dumps(
        rest.get_json(), sort_keys=True
    )
    assert 'Bearer realm="quineling"' in doc.text and 'error="invalid_token"' in doc.text


def test_the_refusal_and_the_card_shown_are_the_servers(doc: Document, tmp_path: Path) -> None:
    from quineling.app import create_app
    from quineling.server.options import check_exposure
    from quineling.settings import ConfigError, load_settings

    (refusal,) = [f for f in doc.fences if f.language == "text" and "refusing to serve" in f.body]
    with pytest.raises(ConfigError) as real:
        check_exposure(load_settings(env={}), ["0.0.0.0"])
    assert " ".join(refusal.body.split()) == f"quineling: {real.value}"

    (card_fence,) = [
        f for f in doc.fences if f.language == "json" and not f.tags and "securitySchemes" in f.body
    ]
    keys, _ = keys_added(doc, tmp_path)
    (tmp_path / "jwks.json").write_text('{"keys": [{"kty": "EC", "crv": "P-256", "kid": "k", '
                                        '"x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", '
                                        '"y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}')  # fmt: skip
    config = {"auth_keys_file": str(keys), "auth_jwks": str(tmp_path / "jwks.json"),
              "auth_jwt_issuer": "i", "auth_jwt_audience": "a"}  # fmt: skip
    card = (
        create_app(config=config)
        .test_client()
        .get("/.well-known/agent-card.json", headers={"A2A-Version": "1.0"})
        .get_json()
    )
    assert mismatches(parse_json(card_fence.body, doc.where(card_fence.line)), card) == []
