"""Issue 26 item 2: a card at origin A that names an interface at origin B must not make the CLI or the client
send the user's credentials to B — only to the origin the user named, or to one the user allowed."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from quineling.client import A2AClient, CardCache, Credentials, CredentialsNotSent, RetryPolicy
from quineling.client.origins import origin_of, parse_origin
from tests.attacks.hostile_agents import Agent, Exchange, card, completed_task, serve
from tests.cli.support import clean_env, cli_in_process

TOKEN = "t0ken-for-a-only"


def _rpc(ex: Exchange) -> None:
    ex.json(200, completed_task(ex.seen))


def _card_pointing_at(target: list[str], **options: Any) -> Any:
    def route(ex: Exchange) -> None:
        if ex.seen.path.endswith("agent-card.json"):
            ex.json(200, card(target[0], **options))
        else:
            _rpc(ex)

    return route


def _send(a: Agent, tmp_path: Path, *extra: str) -> Any:
    return cli_in_process("send", "-a", a.origin, "--bearer", TOKEN, "--no-retry", *extra, "hi",
                          cwd=tmp_path, env=clean_env(tmp_path))  # fmt: skip


def test_the_cli_sends_no_token_to_an_origin_the_card_names(tmp_path: Path) -> None:
    target: list[str] = []
    with serve(_rpc) as b, serve(_card_pointing_at(target)) as a:
        target.append(f"{b.origin}/rpc")
        run = _send(a, tmp_path)
        assert run.code == 0, run.err
        assert b.seen and b.authorizations() == [None] * len(b.seen)
        assert f"WITHOUT your credentials (--allow-origin {origin_of(b.origin)}" in run.err
        assert TOKEN not in run.err + run.out
        # Explicitly allowed: the token goes, and nothing is said.
        b.seen.clear()
        run = _send(a, tmp_path, "--allow-origin", b.origin)
        assert run.code == 0, run.err
        assert b.seen and b.authorizations() == [f"Bearer {TOKEN}"] * len(b.seen)
        assert "WITHOUT" not in run.err


def test_the_allowed_origins_can_come_from_the_environment(tmp_path: Path) -> None:
    target: list[str] = []
    with serve(_rpc) as b, serve(_card_pointing_at(target)) as a:
        target.append(f"{b.origin}/rpc")
        env = clean_env(tmp_path, A2ACLI_ALLOW_ORIGIN=f"https://elsewhere.example, {b.origin}")
        run = cli_in_process("send", "-a", a.origin, "--bearer", TOKEN, "hi", cwd=tmp_path, env=env)
        assert run.code == 0, run.err
        assert b.authorizations() == [f"Bearer {TOKEN}"] * len(b.seen)


def test_the_token_still_goes_to_the_origin_named(tmp_path: Path) -> None:
    target: list[str] = []
    with serve(_card_pointing_at(target)) as a:
        target.append(f"{a.origin}/rpc")
        run = _send(a, tmp_path)
        assert run.code == 0, run.err
        rpc = [s for s in a.seen if s.path == "/rpc"]
        assert rpc and all(s.headers.get("authorization") == f"Bearer {TOKEN}" for s in rpc)
        assert "WITHOUT" not in run.err


def test_a_bad_allowed_origin_is_a_usage_error(tmp_path: Path) -> None:
    run = cli_in_process("send", "-a", "http://127.0.0.1:1", "--allow-origin", "https://b.example/path", "hi",
                         cwd=tmp_path, env=clean_env(tmp_path))  # fmt: skip
    assert run.code == 2 and "--allow-origin" in run.err


@pytest.mark.parametrize("where", ["header", "query"])
def test_the_client_withholds_credentials_from_another_origin(where: str) -> None:
    schemes = {"key": {"apiKeySecurityScheme": {"location": where, "name": "api_key"}}}
    target: list[str] = []
    with serve(_rpc) as b, serve(_card_pointing_at(target, schemes=schemes)) as a:
        target.append(f"{b.origin}/rpc")

        def connect(**options: Any) -> A2AClient:
            client = A2AClient.connect(a.origin, credentials=Credentials(bearer=TOKEN, api_key=TOKEN),
                                       retry=RetryPolicy.none(), cache=CardCache(), **options)  # fmt: skip
            return client

        with pytest.warns(CredentialsNotSent, match=f"credentials not sent to {origin_of(b.origin)}"):
            with connect() as client:
                client.send("hi")
                client.get_task("t1")
        assert len(b.seen) == 2
        for seen in b.seen:
            assert TOKEN not in repr(seen.headers) and TOKEN not in seen.path
        b.seen.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error", CredentialsNotSent)
            with connect(allowed_origins=[b.origin]) as client:
                client.send("hi")
        assert b.authorizations() == [f"Bearer {TOKEN}"]
        if where == "header":
            assert b.seen[0].headers.get("api_key") == TOKEN
        else:
            assert f"api_key={TOKEN}" in b.seen[0].path


def test_origins_are_scheme_host_and_port() -> None:
    assert (
        origin_of("https://A.example/x?y") == origin_of("https://a.example:443/") == "https://a.example:443"
    )
    assert origin_of("http://a.example") != origin_of("https://a.example")
    assert origin_of("/a/card.json") is None and origin_of("ftp://a.example") is None
    assert parse_origin("127.0.0.1:8049") == "http://127.0.0.1:8049"
    assert parse_origin("agent.example") == "https://agent.example:443"
    for bad in ("https://a.example/path", "https://user@a.example", "ftp://a.example", "https://"):
        with pytest.raises(ValueError, match="not an origin"):
            parse_origin(bad)
