"""The sixteen operations of the product: the closed catalogue a request's ``operation`` must name. A module of
its own, standard library only, so the command line's shell completion can name them without importing the
runtime."""

from __future__ import annotations

ALL_OPERATIONS = (
    "parse", "create", "compile", "inspect", "run", "reproduce", "recover", "frame",
    "offspringPreview", "offspringFrame", "offspringAdmit", "lineage", "annotate",
    "worldCreate", "worldInspect", "worldCommand",
)  # fmt: skip
