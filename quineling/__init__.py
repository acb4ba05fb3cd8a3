"""Quineling: the thought-to-lifeform runtime served over A2A 1.0."""

from __future__ import annotations

from quineling.app import create_app
from quineling.runtime.errors import QuinelingError
from quineling.runtime.runtime import Runtime

__all__ = ["QuinelingError", "Runtime", "create_app"]
