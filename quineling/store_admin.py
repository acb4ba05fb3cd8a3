"""``quineling store usage`` and ``quineling store reset``: what each scope holds against every limit, and
dropping one scope's runtime state and tasks in one atomic step (docs/decisions/0024-retention.md).

Both read the store the server is configured with (``QUINELING_STORE_URL``, ``QUINELING_STORE_PREFIX``) and
find scopes through the store's registry (``Backend.scopes``), never by scanning keys. The per-process
``memory://`` store cannot be reached from another process: both commands say so and change nothing.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from typing import TextIO
from urllib.parse import unquote

from quineling.a2a.context import CallContext
from quineling.a2a.scope_usage import usage_json as as_json
from quineling.app import scope_limits as limits_of
from quineling.app import store_tls_options
from quineling.auth.keyfile import ANONYMOUS
from quineling.operator_output import USAGE, emit, fail, wants_json
from quineling.runtime.context import utc_time
from quineling.settings import ConfigError, Settings, load_settings
from stores import backend_from_url
from stores.base import GROUP_SEPARATOR, Backend, ScopeUsage
from stores.errors import StoreError

MEMORY_UNREACHABLE = (
    "the memory:// store lives inside the serving process, so no other process can read or reset it; "
    "restarting the server empties it (docs/decisions/0024-retention.md)"
)


PRINCIPAL_HELP = "a key's principal name, jwt~CLAIM for a JWT's (escaped), 'anonymous' without authentication"


def scope_of(principal: str, tenant: str) -> str:
    """The scope that holds a principal's runtime state and tasks in one tenant (``""``: no tenant).
    ``principal`` is as the stores know it (``quineling.auth.Principal.scope_id``: a key's principal name,
    ``jwt~`` and the escaped claim for a JWT); ``anonymous`` is the caller of a server without authentication
    (no key principal may have that name)."""
    return CallContext(tenant=tenant, principal="" if principal == ANONYMOUS else principal).partition


def tenant_in(scope: str, principal: str) -> str | None:
    """The tenant whose scope ``scope`` is for ``principal``, or ``None`` when it is not one of theirs: the
    inverse of :func:`scope_of` (a scope names its tenant percent-escaped after the principal and ``:``; the
    default tenant's is its own)."""
    tenant_part = scope
    if principal != ANONYMOUS:
        owner, grouped, tenant_part = scope.partition(GROUP_SEPARATOR)
        if not grouped or owner != principal:
            return None
    for tenant in ("", unquote(tenant_part)):
        if scope_of(principal, tenant) == scope:
            return tenant
    return None


def select(backend: Backend, principal: str | None, tenant: str | None) -> list[str]:
    """The registered scopes an operator asked for that hold something: all of them, a principal's, or one
    tenant's of theirs. (A scope stays registered while empty until it is reclaimed, stores/scopes.py.)"""
    registered = [scope for scope in backend.scopes() if not backend.usage(scope).is_empty]
    if principal is None:
        return registered
    if tenant is not None:
        wanted = scope_of(principal, tenant)
        return [scope for scope in registered if scope == wanted]
    return [scope for scope in registered if tenant_in(scope, principal) is not None]


def describe(usage: ScopeUsage, limits: dict[str, int], now: float) -> list[str]:
    """A scope's report: one line per limit (used, limit, when its first entry frees a slot)."""
    used = {**usage.counters, "tasks": usage.tasks, "task-bytes": usage.task_bytes}
    lines = [f"scope {usage.scope}", f"  {'counter':<20} {'used':>12} {'limit':>12}  first slot frees"]
    for name in [*limits, *sorted(set(used) - set(limits))]:
        at = usage.frees_at.get(name)
        frees = "-" if at is None else f"{utc_time(at)} (in {max(0, math.ceil(at - now))} s)"
        limit = limits.get(name)
        lines.append(f"  {name:<20} {used.get(name, 0):>12} {'-' if limit is None else limit:>12}  {frees}")
    lines.append(f"  documents {usage.documents} ({usage.document_bytes} bytes of JSON)")
    return lines


def usage_command(args: argparse.Namespace) -> int:
    return _with_backend(args, lambda backend, settings: _usage(backend, settings, args, sys.stdout))


def reset_command(args: argparse.Namespace) -> int:
    return _with_backend(args, lambda backend, settings: _reset(backend, settings, args, sys.stdout))


def _usage(backend: Backend, settings: Settings, args: argparse.Namespace, out: TextIO) -> int:
    if args.tenant is not None and args.principal is None:
        return fail(args, USAGE, "quineling store usage: --tenant needs --principal", exit_code=2)
    scopes = select(backend, args.principal, args.tenant)
    now = time.time()
    limits = limits_of(settings)
    if wants_json(args):
        emit({"scopes": [as_json(backend.usage(scope, now), limits) for scope in scopes]})
        return 0
    if not scopes:
        print("no scope holds anything", file=out)
    for scope in scopes:
        print("\n".join(describe(backend.usage(scope, now), limits, now)), file=out)
    return 0


def _reset(backend: Backend, settings: Settings, args: argparse.Namespace, out: TextIO) -> int:
    scopes = select(backend, args.principal, args.tenant)
    if not scopes:
        if wants_json(args):
            emit({"reset": []})
        else:
            print(f"no scope of principal {args.principal!r} holds anything: nothing to reset", file=out)
        return 0
    now = time.time()
    limits = limits_of(settings)
    if not args.yes:
        if not wants_json(args):  # under -o json the envelope is the one document
            for scope in scopes:
                print("\n".join(describe(backend.usage(scope, now), limits, now)), file=out)
        return fail(
            args,
            USAGE,
            f"not reset: add --yes to drop these {len(scopes)} scope(s): {', '.join(scopes)}",
            hint="quineling store usage --principal P shows what they hold",
            exit_code=2,
        )
    dropped = []
    for scope in scopes:  # one atomic step per scope
        held = backend.reset(scope)
        dropped.append({"scope": scope, "documents": held.documents, "tasks": held.tasks})
        if not wants_json(args):
            print(
                f"reset scope {scope}: dropped {held.documents} documents and {held.tasks} tasks",
                file=out,
            )
    if wants_json(args):
        emit({"reset": dropped})
    return 0


def _with_backend(args: argparse.Namespace, run: Callable[[Backend, Settings], int]) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        return fail(args, "QUINELING_CONFIG_INVALID", str(exc), exit_code=2)
    backend = backend_from_url(
        settings.store_url, prefix=settings.store_prefix, **store_tls_options(settings)
    )
    try:
        if backend.local:
            return fail(args, "QUINELING_STORE_UNREACHABLE", MEMORY_UNREACHABLE, exit_code=2)
        return run(backend, settings)
    except StoreError as exc:
        return fail(args, "QUINELING_STORE_UNAVAILABLE", str(exc), exit_code=1)
    finally:
        backend.close()
