"""``CallContext``: who is calling, in which tenant, with which protocol version and extensions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

from stores.base import task_partition


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
        """The task scope ``tenant/user``: tasks are visible only to their tenant and user. The tenant is
        escaped, so a ``/`` in it cannot move the boundary to the user part."""
        return f"{quote(self.tenant or 'default', safe='')}/{self.user}"

    @property
    def partition(self) -> str:
        """The tenant as the stores know it: the task store's capacity partition and the runtime's scope,
        so the runtime's state and the tenant's tasks commit together (``stores.base.task_partition``)."""
        return task_partition(self.scope)
