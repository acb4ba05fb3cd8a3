"""Quineling: the thought-to-lifeform runtime served over A2A 1.0.

The names below are imported on first use, not with the package: the gunicorn master reads
``quineling.settings`` and ``quineling.server`` and must not import Flask, redis or ssl before a gevent worker
has monkey-patched the standard library (docs/deployment.md, "Worker model").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from quineling.app import create_app
    from quineling.runtime.errors import QuinelingError
    from quineling.runtime.runtime import Runtime

__all__ = ["QuinelingError", "Runtime", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from quineling.app import create_app

        return create_app
    if name == "QuinelingError":
        from quineling.runtime.errors import QuinelingError

        return QuinelingError
    if name == "Runtime":
        from quineling.runtime.runtime import Runtime

        return Runtime
    raise AttributeError(f"module 'quineling' has no attribute {name!r}")
