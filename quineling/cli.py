"""``quineling`` command: ``quineling serve`` runs the A2A app under gunicorn (gevent workers by default,
``QUINELING_WORKER_CLASS``) on 127.0.0.1:8049 by default; ``QUINELING_A2A_PORT`` / ``--port`` change the
port. ``quineling store usage`` and ``quineling store reset`` are for operators
(:mod:`quineling.store_admin`)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from quineling import store_admin


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="quineling", description="Quineling A2A agent")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve A2A (default 127.0.0.1:8049)")
    serve_cmd.add_argument("--port", type=int, default=None, help="overrides QUINELING_A2A_PORT")
    serve_cmd.add_argument("--host", default=None, help="overrides QUINELING_A2A_HOST")
    serve_cmd.set_defaults(handler=serve)
    store_admin.register(commands)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
