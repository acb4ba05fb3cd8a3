"""``CallContext``: who is calling, in which tenant, with which protocol version and extensions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

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
