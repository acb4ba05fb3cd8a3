"""The project's one spelling of "a JSON value", importable from every layer.

It lives in ``stores`` because that is the lowest layer: ``stores`` imports nothing of ``quineling``, and the
runtime, the protocol layer and the tests may all import ``stores``. This module imports nothing but
``typing``, so using the aliases never pulls in a backend.

* :data:`JSON` — a JSON *object* as the code handles it: stored documents, requests, results, wire messages.
  Its values stay ``Any`` on purpose: their shape is checked by the validators that build them (closed
  records in the runtime, the wire schemas in the protocol layer), not by the type checker, and a precise
  recursive type would force a cast at every field access of an already-validated document.
* :data:`JSONValue` — *any* JSON value, precisely: for code that walks values it knows nothing about
  (canonical encoding, finiteness checks) and so must handle every case.
"""

from __future__ import annotations

from typing import Any, TypeAlias

JSON: TypeAlias = dict[str, Any]
JSONValue: TypeAlias = "dict[str, JSONValue] | list[JSONValue] | str | int | float | bool | None"

__all__ = ["JSON", "JSONValue"]
