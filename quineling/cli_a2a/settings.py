"""Effective settings and where each came from: flag > environment > local file > global file > default.

The local file is the first ``.env`` found walking up from the working directory (as git finds its
configuration), or the file ``--config`` names instead of it; the global file is
``$XDG_CONFIG_HOME/a2a-cli/.env`` (``~/.config/a2a-cli/.env``). Files are dotenv, in the environment's
namespace; only ``A2ACLI_*`` names are read. Nothing is ever written: no last task or context is kept."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from quineling.cli_a2a.errors import usage
from quineling.cli_a2a.options import BY_DEST, OPTIONS, Option, from_text

FLAG, ENV, DEFAULT = "flag", "env", "default"


@dataclass(frozen=True, slots=True)
class Setting:
    value: Any
    source: str  # flag, env, file:<path>, default
    rank: int  # 0 flag .. 4 default: lower wins


@dataclass(slots=True)
class Settings:
    values: dict[str, Setting] = field(default_factory=dict)
    local_file: Path | None = None
    local_named: bool = False  # the local file is the one --config named, not one found walking up
    global_file: Path | None = None
    warnings: list[str] = field(default_factory=list)

    def __getitem__(self, dest: str) -> Any:
        return self.values[dest].value

    def source(self, dest: str) -> str:
        return self.values[dest].source


def global_file(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "a2a-cli" / ".env"


def find_local_file(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / ".env"
        if candidate.is_file():
            return candidate
    return None


def _read(path: Path, warnings: list[str], *, required: bool) -> dict[str, str]:
    if not path.is_file():
        if required:
            raise usage(f"--config: no such file: {path}", hint=None)
        return {}
    try:
        values = {k: v or "" for k, v in dotenv_values(path).items() if k.startswith("A2ACLI_")}
    except (OSError, UnicodeDecodeError) as exc:
        raise usage(f"cannot read the configuration file {path}: {exc}", hint=None) from None
    secrets = {"A2ACLI_BEARER", "A2ACLI_API_KEY", "A2ACLI_SVC_PARAM"} & values.keys()
    if secrets and path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        warnings.append(
            f"warning: {path} holds {', '.join(sorted(secrets))} but others may read it: chmod 600 {path}"
        )
    return values


def resolve(
    flags: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    config_path: str | None = None,
) -> Settings:
    """``flags`` holds only the options typed on the command line (dest → parsed value)."""
    env = os.environ if env is None else env
    settings = Settings(global_file=global_file(env))
    if config_path is not None:
        settings.local_file = Path(config_path)
        settings.local_named = True
        local = _read(settings.local_file, settings.warnings, required=True)
    else:
        settings.local_file = find_local_file(cwd or Path.cwd())
        local = _read(settings.local_file, settings.warnings, required=False) if settings.local_file else {}
    assert settings.global_file is not None
    global_values = _read(settings.global_file, settings.warnings, required=False)
    layers: list[tuple[str, int, Mapping[str, str]]] = [
        (ENV, 1, env),
        (f"file:{settings.local_file}", 2, local),
        (f"file:{settings.global_file}", 3, global_values),
    ]
    for option in OPTIONS:
        settings.values[option.dest] = _one(option, flags, layers)
    return settings


def _one(
    option: Option, flags: Mapping[str, Any], layers: list[tuple[str, int, Mapping[str, str]]]
) -> Setting:
    if option.dest in flags:
        return Setting(flags[option.dest], FLAG, 0)
    name = option.variable
    if name is not None:
        for source, rank, values in layers:
            if name in values:
                where = name if source == ENV else f"{name} in {source[5:]}"
                return Setting(from_text(option, values[name], where), source, rank)
    return Setting(option.default, DEFAULT, 4)


CREDENTIALS = ("bearer", "api_key")
DESTINATIONS = ("agent_card", "allow_origin")  # what decides where the credentials go


def check_credential_binding(settings: Settings) -> None:
    """Refuse (exit 2) to send a credential to an agent a found ``.env`` chose, unless that credential came
    from the same file: a repository's ``.env`` holding only ``A2ACLI_AGENT_CARD=<elsewhere>`` must not
    receive the token of the global file, the environment or the command line. Allowed: the agent named
    with ``-a``, ``A2ACLI_AGENT_CARD`` in the environment or ``--config FILE``; a credential kept in the same
    ``.env`` as the agent (a per-agent file); and a ``.env`` naming the very agent the global file names."""
    if settings.local_named or settings.local_file is None:
        return
    local_source = f"file:{settings.local_file}"
    steering = [d for d in DESTINATIONS if settings.source(d) == local_source and settings[d]]
    foreign = [c for c in CREDENTIALS if settings[c] and settings.source(c) != local_source]
    if not steering or not foreign:
        return
    if steering == ["agent_card"] and _same_agent(settings["agent_card"], _global_agent(settings)):
        return
    credential = BY_DEST[foreign[0]]
    where = "the command line" if settings.source(foreign[0]) == FLAG else _where(settings.source(foreign[0]))
    chosen = " and ".join(str(BY_DEST[d].variable) for d in steering)
    raise usage(
        f"{settings.local_file} sets {chosen}, but {credential.long} comes from {where}: a credential is not "
        "sent to an agent chosen by a .env file found in the working directory unless that file holds it too",
        hint=f"name the agent with -a (or A2ACLI_AGENT_CARD), use --config {settings.local_file} if you trust "
        f"it, or put {credential.variable} in that file",
    )


def _where(source: str) -> str:
    return "the environment" if source == ENV else source.removeprefix("file:")


def _global_agent(settings: Settings) -> str | None:
    if settings.global_file is None or not settings.global_file.is_file():
        return None
    return _read(settings.global_file, [], required=False).get("A2ACLI_AGENT_CARD")


def _same_agent(a: str | None, b: str | None) -> bool:
    return bool(a and b) and str(a).strip().rstrip("/") == str(b).strip().rstrip("/")


def waits(settings: Settings) -> bool:
    """Whether ``send`` waits: ``--async`` and ``--wait`` are one choice; the higher-ranked source decides
    (a typed ``--wait`` overrides a configured ``A2ACLI_ASYNC``)."""
    async_, wait = settings.values["async_"], settings.values["wait"]
    if async_.rank == 0 and wait.rank == 0 and async_.value and wait.value:
        raise usage("--async and --wait contradict each other: give one")
    if wait.value is not None and wait.rank < async_.rank:
        return bool(wait.value)
    return not async_.value


def describe(settings: Settings, dest: str) -> str:
    """The value as ``config show`` and ``--help`` print it: secrets only as whether they are set."""
    option = BY_DEST[dest]
    value = settings[dest]
    if option.kind == "secret" or dest == "svc_param":
        return "(not set)" if not value else "(set, redacted)"
    if value is None or value == ():
        return "(not set)"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}s"
    return str(value)
