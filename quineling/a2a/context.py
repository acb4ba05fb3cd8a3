"""``CallContext``: who is calling, in which tenant, with which protocol version and extensions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

from quineling.runtime.runtime import DEFAULT_SCOPE
from stores.base import task_partition

# A tenant *named* ``default`` in scopes. Escaping leaves that name as it is, which would make it the tenant-less
# default tenant's scope; ``quote`` never escapes a letter, so no other name escapes to this spelling of it.
_NAMED_DEFAULT = "%64efault"


def tenant_scope(tenant: str) -> str:
    """The tenant's part of a scope, distinct for distinct tenants: the tenant-less default tenant keeps
    ``default`` (where its tasks and runtime state have always been); a named tenant is percent-escaped, so a
    ``/`` in it cannot move the boundary to the user part, and the one name that escapes to ``default`` is
    spelled ``%64efault`` (docs/decisions-a2a.md, "Security defaults")."""
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
    # (the binding's probe, quineling.a2a.streams.stop_probe; never, in-process).
    should_stop: Callable[[], bool] = field(default=lambda: False, compare=False, repr=False)

    @property
    def scope(self) -> str:
        """The task scope ``tenant/user``: tasks are visible only to their tenant and user."""
        return f"{tenant_scope(self.tenant)}/{self.user}"

    @property
    def partition(self) -> str:
        """The tenant as the stores know it: the task store's capacity partition and the runtime's scope,
        so the runtime's state and the tenant's tasks commit together (``stores.base.task_partition``)."""
        return task_partition(self.scope)
