"""``quineling`` command: ``quineling serve`` runs the A2A app under gunicorn (gevent workers by default,
``QUINELING_WORKER_CLASS``) on 127.0.0.1:8049 by default; ``QUINELING_A2A_PORT`` / ``--port`` change the
port. ``quineling store usage`` and ``quineling store reset`` are for operators
(:mod:`quineling.store_admin`)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def serve(args: argparse.Namespace) -> int:
    from gunicorn.app.base import BaseApplication

    from quineling.config import ConfigError, gunicorn_options, load_settings

    if args.port is not None:
        os.environ["QUINELING_A2A_PORT"] = str(args.port)
    if args.host is not None:
        os.environ["QUINELING_A2A_HOST"] = args.host
    try:
        # Validate here, naming the bad variable, rather than inside a worker.
        options = gunicorn_options(load_settings())
    except ConfigError as exc:
        print(f"quineling: {exc}", file=sys.stderr)
        return 2

    class Server(BaseApplication):
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        # The Flask app. types-gunicorn spells a WSGI app's start_response differently from Flask's (typeshed)
        # WSGI types, so Flask does not match its return type although gunicorn serves it as WSGI.
        def load(self) -> Any:
            from quineling.app import create_app

            return create_app()

    Server().run()
    return 0


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
    usage.add_argument("--principal", default=None, help="only this principal's scopes")
    usage.add_argument("--tenant", default=None, help="with --principal: only this tenant ('' for none)")
    usage.set_defaults(handler=store_usage)
    reset = actions.add_parser("reset", help="drop a principal's runtime state and tasks")
    reset.add_argument("--principal", required=True, help="whose scopes to drop")
    reset.add_argument("--tenant", default=None, help="only this tenant's scope ('' for none)")
    reset.add_argument("--yes", action="store_true", help="really drop them (without it: show what would go)")
    reset.set_defaults(handler=store_reset)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="quineling", description="Quineling A2A agent")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve A2A (default 127.0.0.1:8049)")
    serve_cmd.add_argument("--port", type=int, default=None, help="overrides QUINELING_A2A_PORT")
    serve_cmd.add_argument("--host", default=None, help="overrides QUINELING_A2A_HOST")
    serve_cmd.set_defaults(handler=serve)
    _add_store_commands(commands)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
