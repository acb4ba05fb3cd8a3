"""``CallContext``: who is calling, in which tenant, with which protocol version and extensions."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from stores.base import GROUP_SEPARATOR


@dataclass(frozen=True, slots=True)
class CallContext:
    tenant: str = ""
    user: str = "anonymous"
    requested_version: str = "1.0"
    extensions: tuple[str, ...] = ()
    # The authenticated principal as the stores know it (``quineling.auth.Principal.scope_id``); "" when the
    # server runs without authentication and every caller is the one anonymous user.
    principal: str = ""

    @property
    def partition(self) -> str:
        """The runtime scope and the task store's capacity partition: the tenant, inside the principal when
        there is one (``alice:acme``). A principal's tenants are scopes of one group, so they share a Redis hash
        tag (``stores.base.scope_group``); the tenant is escaped, so it cannot reach into another principal."""
        tenant = quote(self.tenant or "default", safe="")
        return f"{self.principal}{GROUP_SEPARATOR}{tenant}" if self.principal else tenant

    @property
    def scope(self) -> str:
        """The task scope ``partition/user``: tasks are visible only to their principal, tenant and user. Its
        partition is :attr:`partition` (``stores.base.task_partition``), so the runtime's state and the tasks
        commit together."""
        return f"{self.partition}/{self.user}"
