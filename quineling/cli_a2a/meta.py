"""Commands about the tool itself: ``config show`` (read-only), ``completion SHELL`` and the version."""

from __future__ import annotations

import argparse

from quineling.cli_a2a.grammar import PROG
from quineling.cli_a2a.options import OPTIONS
from quineling.cli_a2a.render import Out
from quineling.cli_a2a.settings import Settings, describe
from quineling.version import __version__


def tool_version() -> str:
    return __version__


def config_show(settings: Settings, out: Out) -> int:
    rows = [
        {
            "option": option.long,
            "variable": option.variable,
            "value": describe(settings, option.dest),
            "source": settings.source(option.dest),
        }
        for option in OPTIONS
    ]
    files = {
        "local": str(settings.local_file) if settings.local_file else None,
        "global": str(settings.global_file),
    }
    if out.json:
        out.document({"settings": rows, "files": files})
    else:
        for row in rows:
            out.field(str(row["option"]).lstrip("-"), f"{row['value']} (source: {row['source']})")
        out.field("Local-File", files["local"] or "(none found)")
        out.field("Global-File", files["global"])
    for warning in settings.warnings:
        out.warn(warning)
    return 0


def completion(parser: argparse.ArgumentParser, shell: str, out: Out) -> int:
    words = _words(parser)
    top = " ".join(sorted(words[""]))
    flags = " ".join(
        sorted({f for option in OPTIONS for f in (*option.flags, *option.aliases)} | {"--config"})
    )
    if shell == "bash":
        cases = "\n".join(
            f'    {key}) words="{" ".join(sorted(value))}" ;;' for key, value in words.items() if key
        )
        script = f"""# bash completion for {PROG}: eval "$({PROG} completion bash)"
_{PROG}() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} words="{top}"
  case "${{COMP_WORDS[1]}}" in
{cases}
  esac
  [ "$COMP_CWORD" -eq 1 ] && words="{top}"
  [[ $cur == -* ]] && words="{flags}"
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -F _{PROG} {PROG}
"""
    elif shell == "zsh":
        script = f"""#compdef {PROG}
# zsh completion for {PROG}: eval "$({PROG} completion zsh)"
autoload -U bashcompinit && bashcompinit
{completion_bash(parser)}"""
    else:
        lines = [f"# fish completion for {PROG}: {PROG} completion fish | source"]
        lines += [f"complete -c {PROG} -n '__fish_use_subcommand' -a {word}" for word in sorted(words[""])]
        for key, value in words.items():
            if key:
                lines += [
                    f"complete -c {PROG} -n '__fish_seen_subcommand_from {key}' -a {w}" for w in sorted(value)
                ]
        lines += [f"complete -c {PROG} -l {f[2:]}" for f in flags.split() if f.startswith("--")]
        script = "\n".join(lines) + "\n"
    out.stdout.write(script)
    return 0


def completion_bash(parser: argparse.ArgumentParser) -> str:
    out = _Capture()
    completion(parser, "bash", out)  # type: ignore[arg-type]
    return out.stdout.text


class _Writer:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text


class _Capture:
    def __init__(self) -> None:
        self.stdout = _Writer()


def _words(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """Each command and the words that follow it: its sub-commands, or for ``op`` the runtime's operations."""
    from quineling.runtime.product_operations import ALL_OPERATIONS

    found: dict[str, set[str]] = {"": set()}
    for action in parser._actions:  # argparse keeps sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[""].add(name)
                for inner in sub._actions:
                    if isinstance(inner, argparse._SubParsersAction):
                        found[name] = set(inner.choices)
    found["op"] = set(ALL_OPERATIONS)
    return found
