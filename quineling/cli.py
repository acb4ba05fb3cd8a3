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

from quineling.operator_output import USAGE, OperatorParser, UsageError, add_output_option, fail, json_asked


def _listen_from(args: argparse.Namespace, port_variable: str) -> None:
    """``--port`` and ``--host`` override their settings (the workers read them from the environment)."""
    if args.port is not None:
        os.environ[port_variable] = str(args.port)
    if args.host is not None:
        os.environ["QUINELING_A2A_HOST"] = args.host


def serve(args: argparse.Namespace) -> int:
    from quineling.server.application import Server
    from quineling.server.open_files import ensure_or_exit
    from quineling.server.options import gunicorn_options
    from quineling.server.startup import port_taken
    from quineling.settings import ConfigError, load_settings

    _listen_from(args, "QUINELING_A2A_PORT")
    try:
        # Validate here, naming the bad variable, rather than inside a worker.
        settings = load_settings()
        if (
            settings.grpc_port
            and settings.store_url.startswith("memory:")
            and not os.environ.get("QUINELING_WORKER_CLASS")
        ):
            # gRPC shares the memory store's one process, inside a gthread worker (quineling.server.grpc_beside).
            os.environ["QUINELING_WORKER_CLASS"] = "gthread"
            settings = load_settings()
        options = gunicorn_options(settings)
        if settings.grpc_port:
            _check_grpc(settings)
    except ConfigError as exc:
        print(f"quineling: {exc}", file=sys.stderr)
        return 2
    for port, variable in (
        (settings.a2a_port, "--port or QUINELING_A2A_PORT"),
        (settings.grpc_port, "QUINELING_GRPC_PORT"),
    ):
        taken = port_taken(settings.a2a_host, port) if port else None
        if taken is not None:
            print(f"quineling: {taken}; choose another with {variable}", file=sys.stderr)
            return 2
    ensure_or_exit(settings)  # enough open files for the bounds, or exit 3 saying so (docs/deployment.md)
    Server(options).run()
    return 0


def _check_grpc(settings: Any) -> None:
    """What the gRPC listener needs before anything starts: its package (the ``grpc`` extra), TLS or a
    loopback host (or QUINELING_GRPC_ALLOW_PLAINTEXT), and readable certificate files."""
    import importlib.util

    from quineling.settings import ConfigError, check_grpc_exposure

    if importlib.util.find_spec("grpc") is None or importlib.util.find_spec("a2a") is None:
        raise ConfigError(
            "QUINELING_GRPC_PORT needs the gRPC binding's packages: pip install 'quineling-a2a[grpc]'"
        )
    check_grpc_exposure(settings)
    for name in ("grpc_tls_cert_file", "grpc_tls_key_file"):
        path = getattr(settings, name)
        if path and not os.access(path, os.R_OK):
            raise ConfigError(f"QUINELING_{name.upper()} {path}: not a readable file")


def serve_grpc(args: argparse.Namespace) -> int:
    from quineling.server.options import check_exposure
    from quineling.server.startup import port_taken
    from quineling.settings import ConfigError, check_auth_files, load_settings

    _listen_from(args, "QUINELING_GRPC_PORT")
    try:
        settings = load_settings()
        if not settings.grpc_port:
            raise ConfigError("quineling serve-grpc needs a port: --port or QUINELING_GRPC_PORT")
        if settings.store_url.startswith("memory:"):
            raise ConfigError(
                "quineling serve-grpc needs a shared store: memory:// is one process's memory, so a gRPC "
                "server of its own would serve tasks no HTTP worker sees. Set QUINELING_STORE_URL=redis://…, "
                "or run 'quineling serve' with QUINELING_GRPC_PORT, which serves gRPC and HTTP in one process"
            )
        check_exposure(settings)
        check_auth_files(settings)
        _check_grpc(settings)
    except ConfigError as exc:
        print(f"quineling: {exc}", file=sys.stderr)
        return 2
    taken = port_taken(settings.a2a_host, settings.grpc_port)
    if taken is not None:
        print(f"quineling: {taken}; choose another with --port or QUINELING_GRPC_PORT", file=sys.stderr)
        return 2
    if not os.environ.get("QUINELING_MAX_LONG_POLLS"):
        # Here a waiting GetTask holds one of the gRPC server's threads: a quarter of them at most, so calls
        # and streams keep theirs (the app reads the bound when serve_forever loads it).
        os.environ["QUINELING_MAX_LONG_POLLS"] = str(max(1, settings.grpc_threads // 4))
    from quineling.observe import logs
    from quineling.server.grpc_server import serve_forever

    logs.configure(settings.log_format, settings.log_level, flush_seconds=settings.log_flush_seconds)
    return serve_forever(settings)


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
    add_output_option(usage)
    usage.set_defaults(handler=store_usage)
    reset = actions.add_parser("reset", help="drop a principal's runtime state and tasks")
    reset.add_argument("--principal", required=True, help=f"whose scopes to drop ({PRINCIPAL_HELP})")
    reset.add_argument("--tenant", default=None, help="only this tenant's scope ('' for none)")
    reset.add_argument("--yes", action="store_true", help="really drop them (without it: show what would go)")
    add_output_option(reset)
    reset.set_defaults(handler=store_reset)


def _keys_file(args: argparse.Namespace) -> str | None:
    path: str = args.file or os.environ.get("QUINELING_AUTH_KEYS_FILE", "")
    return path or None


def _no_keys_file(args: argparse.Namespace) -> int:
    return fail(
        args,
        USAGE,
        "name the keys file with --file or QUINELING_AUTH_KEYS_FILE",
        hint="quineling keys list --file /path/to/keys",
        exit_code=2,
    )


def _keys_error(args: argparse.Namespace, exc: Exception, doing: str) -> int:
    from quineling.auth.watch import ParseError

    code = "QUINELING_KEYS_FILE_MALFORMED" if isinstance(exc, ParseError) else "QUINELING_KEYS_FILE"
    return fail(args, code, f"{doing}: {exc}", exit_code=2)


def keys_add(args: argparse.Namespace) -> int:
    from quineling.auth.keyfile import add_key
    from quineling.operator_output import emit, wants_json

    path = _keys_file(args)
    if path is None:
        return _no_keys_file(args)
    try:
        token = add_key(path, args.name)
    except (ValueError, OSError) as exc:  # ParseError is a ValueError
        return _keys_error(args, exc, "cannot add the key")
    # The token exists only here: the file holds its hash.
    if wants_json(args):
        emit({"principal": args.name, "token": token, "file": path})
    else:
        print(token)
    print(
        f"added a key for {args.name} to {path}; the token above is shown once, store it now", file=sys.stderr
    )
    return 0


def keys_list(args: argparse.Namespace) -> int:
    from quineling.auth.keyfile import parse_keys_of
    from quineling.operator_output import emit, wants_json

    path = _keys_file(args)
    if path is None:
        return _no_keys_file(args)
    try:
        keys = parse_keys_of(path, Path(path).read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        return _keys_error(args, exc, "cannot read the keys")
    if wants_json(args):
        emit(
            {
                "keys": [
                    {"principal": e.principal, "fingerprint": e.fingerprint, "line": e.line}
                    for e in keys.entries
                ]
            }
        )
        return 0
    for entry in keys.entries:
        print(f"{entry.principal}\t{entry.fingerprint}\tline {entry.line}")
    return 0


def keys_revoke(args: argparse.Namespace) -> int:
    from quineling.auth.keyfile import revoke_keys
    from quineling.operator_output import emit, wants_json

    path = _keys_file(args)
    if path is None:
        return _no_keys_file(args)
    try:
        removed = revoke_keys(path, args.name, fingerprint=args.key)
    except (ValueError, OSError) as exc:
        return _keys_error(args, exc, "cannot revoke")
    if not removed:
        which = f"no key {args.key}" if args.key else "no key"
        return fail(
            args,
            "QUINELING_NOT_FOUND",
            f"{args.name} has {which} in {path}",
            hint="quineling keys list shows each key's principal and fingerprint",
            exit_code=1,
        )
    if wants_json(args):
        emit({"principal": args.name, "revoked": removed})
    print(
        f"revoked {removed} key(s) of {args.name}; every worker refuses them within seconds", file=sys.stderr
    )
    return 0


OPERATOR_COMMANDS = ("serve", "serve-grpc", "store", "keys")

SERVE_SETTINGS = """settings (environment):
  QUINELING_A2A_HOST, QUINELING_A2A_PORT   where to listen (127.0.0.1:8049); a public host needs authentication
  QUINELING_BASE_URL                       the public origin the agent card advertises
  QUINELING_STORE_URL                      memory:// (default, one process) or redis://… for many workers/hosts
  QUINELING_AUTH_KEYS_FILE                 API keys (quineling keys add NAME); QUINELING_AUTH_JWKS for JWTs
  QUINELING_WORKERS, QUINELING_WORKER_CLASS  gunicorn workers (Redis store for more than one) and their class
  QUINELING_TENANTS                        tenants served besides the default one ('*' for any)
  QUINELING_RATE_LIMIT                     requests per caller, e.g. 100/minute
  QUINELING_LOG_FORMAT                     json, text or auto
  QUINELING_GRPC_PORT                      serve the gRPC binding too (TLS: QUINELING_GRPC_TLS_CERT_FILE/KEY_FILE)
every setting and its default: README.md, "Configuration"; several hosts: docs/deployment.md, "Settings"
"""


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if not words or words[0] not in OPERATOR_COMMANDS:
        # Imported here, not at the top: `quineling serve` is a gunicorn master and must not load the HTTP
        # client (and ssl) before gevent patches its workers.
        from quineling.cli_a2a import main as a2a_main

        return a2a_main(words)
    parser = OperatorParser(prog="quineling", description="Quineling A2A agent: operator commands")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser(
        "serve",
        help="serve A2A (default 127.0.0.1:8049)",
        description="Serve the A2A agent under gunicorn. Everything else is set in the environment; the "
        "settings that matter most are below, and every one, with its default, is in the README's "
        "Configuration table (docs/deployment.md for several hosts). Exit 2 when a setting is refused or the "
        "port is in use.",
        epilog=SERVE_SETTINGS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve_cmd.add_argument("--port", type=int, default=None, help="overrides QUINELING_A2A_PORT")
    serve_cmd.add_argument("--host", default=None, help="overrides QUINELING_A2A_HOST")
    serve_cmd.set_defaults(handler=serve)
    grpc_cmd = commands.add_parser(
        "serve-grpc",
        help="serve A2A's gRPC binding alone (a shared store)",
        description="Serve the gRPC binding (lf.a2a.v1.A2AService) as a process of its own, on the shared "
        "store the HTTP servers use (QUINELING_STORE_URL=redis://…; memory:// is refused: run 'quineling "
        "serve' with QUINELING_GRPC_PORT instead). Settings as for serve; TLS from "
        "QUINELING_GRPC_TLS_CERT_FILE and QUINELING_GRPC_TLS_KEY_FILE. Exit 2 when a setting is refused or "
        "the port is in use.",
    )
    grpc_cmd.add_argument("--port", type=int, default=None, help="overrides QUINELING_GRPC_PORT")
    grpc_cmd.add_argument("--host", default=None, help="overrides QUINELING_A2A_HOST")
    grpc_cmd.set_defaults(handler=serve_grpc)
    _add_store_commands(commands)
    keys_cmd = commands.add_parser("keys", help="manage API keys (QUINELING_AUTH_KEYS_FILE)")
    keys_sub = keys_cmd.add_subparsers(dest="keys_command", required=True)
    for name, handler, needs_name, help_text in (
        ("add", keys_add, True, "create a key for NAME: prints the token once, appends its hash"),
        ("list", keys_list, False, "list principals and key fingerprints (never a token)"),
        ("revoke", keys_revoke, True, "remove every key of NAME, or one with --key"),
    ):
        sub = keys_sub.add_parser(name, help=help_text)
        if needs_name:
            sub.add_argument("name", metavar="NAME", help="principal name: 1 to 64 of A-Z a-z 0-9 . _ -")
        if name == "revoke":
            sub.add_argument(
                "--key",
                default=None,
                metavar="FINGERPRINT",
                help="only the key with this fingerprint (as keys list shows it, sha256:…)",
            )
        sub.add_argument("--file", default=None, help="keys file (default: QUINELING_AUTH_KEYS_FILE)")
        add_output_option(sub)
        sub.set_defaults(handler=handler)
    try:
        args = parser.parse_args(words)
    except UsageError as exc:
        return fail(json_asked(words), USAGE, str(exc), hint=f"run: quineling {words[0]} --help", exit_code=2)
    return int(args.handler(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
