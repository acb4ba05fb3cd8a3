"""What one scope holds against every limit, as JSON: ``quineling store usage -o json`` and the console's operator
view (``GET /ui/api/operator``) report it in this one shape."""

from __future__ import annotations

from quineling.runtime.context import utc_time
from stores.base import ScopeUsage


def usage_json(usage: ScopeUsage, limits: dict[str, int]) -> dict[str, object]:
    """Every counter's use, limit and when its first entry frees a slot; the scope's documents and bytes."""
    used = {**usage.counters, "tasks": usage.tasks, "task-bytes": usage.task_bytes}
    counters = {
        name: {
            "used": used.get(name, 0),
            "limit": limits.get(name),
            "firstSlotFrees": None if usage.frees_at.get(name) is None else utc_time(usage.frees_at[name]),
        }
        for name in [*limits, *sorted(set(used) - set(limits))]
    }
    return {
        "scope": usage.scope,
        "counters": counters,
        "documents": usage.documents,
        "documentBytes": usage.document_bytes,
    }
