"""Per-task generations (the protocol's draft 1.1 ``generation``): 1 when a task is created, one more with every
state or artifact change. Carried in ``metadata.generation`` of the task and of every stream event, because the
official 1.0 SDK clients drop an unknown top-level field, while metadata reaches their users
(docs/decisions/0013-generations.md).

Every change of a task is one logged event (its creation is the ``task`` snapshot), so a task's generation is
the number of its newest logged event, and the event with generation ``g`` is the log's entry ``g``
(``stores.base.TaskStore``, "Event log"). A generation is assigned before the task's save, from the generation
of the task as loaded; the save is conditional on that load (``expect_version``), so it commits only if
nothing else changed the task in between, and the generation goes up by exactly one per change, in the same
atomic step as the change.
"""

from __future__ import annotations

from typing import Any

from stores.jsontypes import JSON

KEY = "generation"
EVENT_KINDS = ("statusUpdate", "artifactUpdate")


def generation_of(task: JSON) -> int:
    """A stored task's generation; 0 for a task stored before generations existed."""
    metadata = task.get("metadata")
    value = metadata.get(KEY) if isinstance(metadata, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def has_generation(task: JSON) -> bool:
    return generation_of(task) > 0


def with_generation(value: JSON, generation: int) -> JSON:
    """A shallow copy of a task or event object with ``metadata.generation`` set."""
    metadata: dict[str, Any] = dict(value.get("metadata") or {})
    metadata[KEY] = generation
    return {**value, "metadata": metadata}


def stamp_event(event: JSON, generation: int) -> JSON:
    """A stream event (``task``, ``statusUpdate`` or ``artifactUpdate``) carrying ``generation``."""
    for kind in ("task", *EVENT_KINDS):
        if kind in event:
            return {**event, kind: with_generation(event[kind], generation)}
    raise ValueError(f"not a stream event: {sorted(event)}")


def event_generation(event: JSON) -> int | None:
    for kind in ("task", *EVENT_KINDS):
        if isinstance(event.get(kind), dict):
            metadata = event[kind].get("metadata")
            value = metadata.get(KEY) if isinstance(metadata, dict) else None
            return value if isinstance(value, int) and not isinstance(value, bool) else None
    return None
