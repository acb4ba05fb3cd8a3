"""Issue 26 item 3: a ``.env`` in the working directory (a cloned repository's, say) must not redirect the
user's globally configured token to an agent of its choosing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.attacks.hostile_agents import Agent, Exchange, card, completed_task, serve
from tests.cli.support import Run, clean_env, cli_in_process

TOKEN = "global-t0ken"


def _agent(ex: Exchange) -> None:
    if ex.seen.path.endswith("agent-card.json"):
        origin = f"http://{ex.seen.headers['host']}"
        ex.json(200, card(f"{origin}/rpc"))
    else:
        ex.json(200, completed_task(ex.seen))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)


def _setup(tmp_path: Path, local: str, global_: str = f"A2ACLI_BEARER={TOKEN}\n") -> tuple[Path, Path]:
    home, repo = tmp_path / "home", tmp_path / "repo"
    _write(home / ".config/a2a-cli/.env", global_)
    _write(repo / ".env", local)
    (repo / "src").mkdir()
    return home, repo / "src"  # the .env is found walking up


def _run(home: Path, cwd: Path, *args: str, **env: str) -> Run:
    return cli_in_process(*args, cwd=cwd, env=clean_env(home, **env))


def test_a_local_env_cannot_send_the_global_token_elsewhere(tmp_path: Path) -> None:
    with serve(_agent) as evil:
        home, cwd = _setup(tmp_path, f"A2ACLI_AGENT_CARD={evil.origin}\n")
        run = _run(home, cwd, "send", "hi")
        assert run.code == 2, run.err
        assert "A2ACLI_AGENT_CARD" in run.err and "--bearer comes from" in run.err and TOKEN not in run.err
        assert evil.seen == []  # not even the card was fetched
        # The same with the token in the environment, or typed.
        run = _run(home, cwd, "send", "hi", A2ACLI_BEARER=TOKEN)
        assert run.code == 2 and "the environment" in run.err
        assert _run(home, cwd, "send", "--api-key", TOKEN, "hi").code == 2
        assert evil.seen == []


def test_a_local_env_cannot_widen_the_allowed_origins(tmp_path: Path) -> None:
    target: list[str] = []

    def named(ex: Exchange) -> None:
        ex.json(200, card(target[0]))

    with serve(_agent) as evil, serve(named) as good:
        target.append(f"{evil.origin}/rpc")
        home, cwd = _setup(tmp_path, f"A2ACLI_ALLOW_ORIGIN={evil.origin}\n")
        run = _run(home, cwd, "send", "-a", good.origin, "hi")
        assert run.code == 2 and "A2ACLI_ALLOW_ORIGIN" in run.err
        assert evil.seen == [] and good.seen == []


def _authorized(agent: Agent) -> list[Any]:
    return [s.headers.get("authorization") for s in agent.seen if s.path == "/rpc"]


def test_credentials_bound_to_their_agent_still_go(tmp_path: Path) -> None:
    with serve(_agent) as agent:
        home, cwd = _setup(tmp_path / "refused", f"A2ACLI_AGENT_CARD={agent.origin}\n")
        assert _run(home, cwd, "send", "hi").code == 2  # the mix this guards against
        # A per-agent file: the .env holds the agent and its own token.
        home, cwd = _setup(tmp_path / "a", f"A2ACLI_AGENT_CARD={agent.origin}\nA2ACLI_BEARER=own\n")
        run = _run(home, cwd, "send", "hi")
        assert run.code == 0, run.err
        assert _authorized(agent) == ["Bearer own"]
        # The agent named on the command line, the token from the global file.
        home, cwd = _setup(tmp_path / "b", "A2ACLI_OUTPUT=text\n")
        run = _run(home, cwd, "send", "-a", agent.origin, "hi")
        assert run.code == 0, run.err
        # A file the user names with --config is trusted like the command line.
        home, cwd = _setup(tmp_path / "c", f"A2ACLI_AGENT_CARD={agent.origin}\n")
        run = _run(home, cwd, "--config", str(cwd.parent / ".env"), "send", "hi")
        assert run.code == 0, run.err
        # The .env names the agent the global file configures.
        home, cwd = _setup(tmp_path / "d", f"A2ACLI_AGENT_CARD={agent.origin}\n",
                           f"A2ACLI_AGENT_CARD={agent.origin}/\nA2ACLI_BEARER={TOKEN}\n")  # fmt: skip
        run = _run(home, cwd, "send", "hi")
        assert run.code == 0, run.err
        assert _authorized(agent) == ["Bearer own"] + [f"Bearer {TOKEN}"] * 3
