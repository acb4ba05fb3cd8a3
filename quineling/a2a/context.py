"""``CallContext``: who is calling, in which tenant, with which protocol version and extensions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from quineling.a2a.errors import InvalidParamsError
from quineling.auth import Principal
from quineling.runtime.runtime import DEFAULT_SCOPE
from stores.base import GROUP_SEPARATOR

# A tenant *named* ``default`` in scopes. Escaping leaves that name as it is, which would make it the tenant-less
# default tenant's scope; ``quote`` never escapes a letter, so no other name escapes to this spelling of it.
_NAMED_DEFAULT = "%64efault"


def tenant_scope(tenant: str) -> str:
    """The tenant's part of a scope, distinct for distinct tenants: the tenant-less default tenant keeps
    ``default`` (where its tasks and runtime state have always been); a named tenant is percent-escaped, so a
    ``/`` in it cannot move the boundary to the user part, and the one name that escapes to ``default`` is
    spelled ``%64efault`` (docs/decisions/0006-security-defaults.md)."""
    if not tenant:
        return DEFAULT_SCOPE
    escaped = quote(tenant, safe="")
    return _NAMED_DEFAULT if escaped == DEFAULT_SCOPE else escaped


@dataclass(frozen=True, slots=True)
class CallContext:
    tenant: str = ""
    user: str = "anonymous"
    requested_version: str = "1.0"
    extensions: tuple[str, ...] = ()
    # True once a stream answering this call should end early: its client hung up, or the worker is stopping
    # (the binding's probe, quineling.a2a.http.streams.stop_probe; never, in-process).
    should_stop: Callable[[], bool] = field(default=lambda: False, compare=False, repr=False)
    # The authenticated principal as the stores know it (``quineling.auth.Principal.scope_id``); "" when the
    # server runs without authentication and every caller is the one anonymous user.
    principal: str = ""
    # The request's ``Last-Event-ID`` header (a resuming SubscribeToTask) and ``Idempotency-Key`` header (a
    # retried send), as sent; the service validates them (docs/decisions/0014-resumable-streams.md,
    # "Idempotency keys").
    last_event_id: str | None = None
    idempotency_key: str | None = None

    @property
    def partition(self) -> str:
        """The runtime scope and the task store's capacity partition: the tenant, inside the principal when
        there is one (``alice:acme``). A principal's tenants are scopes of one group, so they share a Redis hash
        tag (``stores.base.scope_group``). The tenant part is :func:`tenant_scope` (escaped, so it cannot reach
        into another principal; a tenant named ``default`` distinct from the tenant-less one), so an anonymous
        caller's partition is exactly the tenant's scope it has always been."""
        tenant = tenant_scope(self.tenant)
        return f"{self.principal}{GROUP_SEPARATOR}{tenant}" if self.principal else tenant

    @property
    def scope(self) -> str:
        """The task scope ``partition/user``: tasks are visible only to their principal, tenant and user. Its
        partition is :attr:`partition` (``stores.base.task_partition``), so the runtime's state and the tasks
        commit together."""
        return f"{self.partition}/{self.user}"


def _never() -> bool:
    return False


def call_context(
    tenant: Any,
    version: str,
    principal: Principal | None,
    served: frozenset[str] | None,
    extensions: tuple[str, ...] = (),
    should_stop: Callable[[], bool] = _never,
    last_event_id: str | None = None,
    idempotency_key: str | None = None,
) -> CallContext:
    """A call's context from what every binding reads off its request (headers on HTTP, metadata on gRPC):
    the tenant checked against the ``served`` ones (``None``: any), the principal as the stores know it."""
    if tenant is not None and not isinstance(tenant, str):
        raise InvalidParamsError("tenant must be a string")
    if tenant and served is not None and tenant not in served:
        # Clients copy the tenant from an advertised interface; an unknown one would also open a fresh task
        # budget per name, since capacity is per tenant.
        raise InvalidParamsError(f"tenant {tenant!r} is not served by this agent")
    # Positional, in the dataclass's field order: this is on every JSON-RPC call's path (the lean one too).
    if principal is None:
        return CallContext(
            tenant or "", "anonymous", version, extensions, should_stop, "", last_event_id, idempotency_key
        )
    scope_id = principal.scope_id
    return CallContext(
        tenant or "", scope_id, version, extensions, should_stop, scope_id, last_event_id, idempotency_key
    )


def split_extensions(value: str | None) -> tuple[str, ...]:
    """The URIs of an ``A2A-Extensions`` header or metadata value (comma-separated)."""
    if not value:
        return ()
    return tuple(item.strip() for item in value.split(",") if item.strip())


def activated(requested: tuple[str, ...], declared: frozenset[str]) -> str | None:
    """The ``A2A-Extensions`` answer: the requested extensions the card declares (this server honours each of
    those whenever it applies), in the order asked; ``None`` when there are none."""
    seen = dict.fromkeys(uri for uri in requested if uri in declared)
    return ", ".join(seen) or None
