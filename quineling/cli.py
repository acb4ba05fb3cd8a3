"""``quineling`` command. Calling agents — ``card``, ``send``, ``task``, ``config``, ``help`` and the rest of the
A2A CLI grammar (docs/cli.md) — is :mod:`quineling.cli_a2a`; this module keeps the operator commands:
``quineling serve`` runs the A2A app under gunicorn (gevent workers by default,
``QUINELING_WORKER_CLASS``) on 127.0.0.1:8049 by default; ``QUINELING_A2A_PORT`` / ``--port`` change the
port. ``quineling store usage`` and ``quineling store reset`` are for operators
(:mod:`quineling.store_admin`); ``quineling keys add|list|revoke`` edit the API keys file (docs/security.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any


def serve(args: argparse.Namespace) -> int:
    from gunicorn.app.base import BaseApplication

    from quineling.config import ConfigError, gunicorn_options, load_settings
    from quineling.open_files import ensure_or_exit

    if args.port is not None:
        os.environ["QUINELING_A2A_PORT"] = str(args.port)
    if args.host is not None:
        os.environ["QUINELING_A2A_HOST"] = args.host
    try:
        # Validate here, naming the bad variable, rather than inside a worker.
        settings = load_settings()
        options = gunicorn_options(settings)
    except ConfigError as exc:
        print(f"quineling: {exc}", file=sys.stderr)
        return 2
    ensure_or_exit(settings)  # enough open files for the bounds, or exit 3 saying so (docs/deployment.md)

    class Server(BaseApplication):
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        # The Flask app. types-gunicorn spells a WSGI app's start_response differently from Flask's (typeshed)
        # WSGI types, so Flask does not match its return type although gunicorn serves it as WSGI.
        def load(self) -> Any:
            from quineling.app import serving_app

            return serving_app()

    Server().run()
    return 0


# Kept in step with quineling.store_admin.PRINCIPAL_HELP (tests/test_store_commands.py checks it); not
# imported from there, which would import the app into `quineling serve`'s master.
PRINCIPAL_HELP = "a key's principal name, jwt~CLAIM for a JWT's (escaped), 'anonymous' without authentication"


def store_usage(args: argparse.Namespace) -> int:
    # Operator commands import the app and the Redis driver when they run, never at start-up: the master
    # of `quineling serve` must not import them before gevent patches the standard library in its workers.
    from quineling import store_admin

    return store_admin.usage_command(args)


def store_reset(args: argparse.Namespace) -> int:
    from quineling import store_admin

    return store_admin.reset_command(args)


def _add_store_commands(commands: Any) -> None:
    """``store usage`` and ``store reset`` (:mod:`quineling.store_admin`)."""
    store = commands.add_parser("store", help="inspect or reset stored runtime state and tasks (Redis)")
    actions = store.add_subparsers(dest="store_command", required=True)
    usage = actions.add_parser("usage", help="counts and bytes against every limit, per scope")
    usage.add_argument("--principal", default=None, help=f"only this principal's scopes ({PRINCIPAL_HELP})")
    usage.add_argument("--tenant", default=None, help="with --principal: only this tenant ('' for none)")
    usage.set_defaults(handler=store_usage)
    reset = actions.add_parser("reset", help="drop a principal's runtime state and tasks")
    reset.add_argument("--principal", required=True, help=f"whose scopes to drop ({PRINCIPAL_HELP})")
    reset.add_argument("--tenant", default=None, help="only this tenant's scope ('' for none)")
    reset.add_argument("--yes", action="store_true", help="really drop them (without it: show what would go)")
    reset.set_defaults(handler=store_reset)


def _keys_file(args: argparse.Namespace) -> str:
    path: str = args.file or os.environ.get("QUINELING_AUTH_KEYS_FILE", "")
    if not path:
        raise SystemExit("quineling keys: name the keys file with --file or QUINELING_AUTH_KEYS_FILE")
    return path


def keys_add(args: argparse.Namespace) -> int:
    from quineling.auth.keyfile import add_key
    from quineling.auth.watch import ParseError

    path = _keys_file(args)
    try:
        token = add_key(path, args.name)
    except (ValueError, OSError) as exc:  # ParseError is a ValueError
        kind = "malformed keys file" if isinstance(exc, ParseError) else "cannot add the key"
        print(f"quineling keys: {kind}: {exc}", file=sys.stderr)
        return 2
    # The token exists only here: the file holds its hash.
    print(token)
    print(
        f"added a key for {args.name} to {path}; the token above is shown once, store it now", file=sys.stderr
    )
    return 0


def keys_list(args: argparse.Namespace) -> int:
    from quineling.auth.keyfile import parse_keys_of

    path = _keys_file(args)
    try:
        keys = parse_keys_of(path, Path(path).read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        print(f"quineling keys: {exc}", file=sys.stderr)
        return 2
    for entry in keys.entries:
        print(f"{entry.principal}\t{entry.fingerprint}\tline {entry.line}")
    return 0


def keys_revoke(args: argparse.Namespace) -> int:
    from quineling.auth.keyfile import revoke_keys

    path = _keys_file(args)
    try:
        removed = revoke_keys(path, args.name)
    except (ValueError, OSError) as exc:
        print(f"quineling keys: {exc}", file=sys.stderr)
        return 2
    if not removed:
        print(f"quineling keys: {args.name} has no key in {path}", file=sys.stderr)
        return 1
    print(
        f"revoked {removed} key(s) of {args.name}; every worker refuses them within seconds", file=sys.stderr
    )
    return 0


OPERATOR_COMMANDS = ("serve", "store", "keys")


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if not words or words[0] not in OPERATOR_COMMANDS:
        # Imported here, not at the top: `quineling serve` is a gunicorn master and must not load the HTTP
        # client (and ssl) before gevent patches its workers.
        from quineling.cli_a2a import main as a2a_main

        return a2a_main(words)
    parser = argparse.ArgumentParser(prog="quineling", description="Quineling A2A agent: operator commands")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve A2A (default 127.0.0.1:8049)")
    serve_cmd.add_argument("--port", type=int, default=None, help="overrides QUINELING_A2A_PORT")
    serve_cmd.add_argument("--host", default=None, help="overrides QUINELING_A2A_HOST")
    serve_cmd.set_defaults(handler=serve)
    _add_store_commands(commands)
    keys_cmd = commands.add_parser("keys", help="manage API keys (QUINELING_AUTH_KEYS_FILE)")
    keys_sub = keys_cmd.add_subparsers(dest="keys_command", required=True)
    for name, handler, needs_name, help_text in (
        ("add", keys_add, True, "create a key for NAME: prints the token once, appends its hash"),
        ("list", keys_list, False, "list principals and key fingerprints (never a token)"),
        ("revoke", keys_revoke, True, "remove every key of NAME"),
    ):
        sub = keys_sub.add_parser(name, help=help_text)
        if needs_name:
            sub.add_argument("name", metavar="NAME", help="principal name: 1 to 64 of A-Z a-z 0-9 . _ -")
        sub.add_argument("--file", default=None, help="keys file (default: QUINELING_AUTH_KEYS_FILE)")
        sub.set_defaults(handler=handler)
    args = parser.parse_args(words)
    return int(args.handler(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
