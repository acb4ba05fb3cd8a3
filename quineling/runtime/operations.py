"""The operation registry: each runtime operation is a closed request spec plus a pure handler."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from quineling.runtime.context import Env, StateView
from quineling.runtime.fields import Spec
from stores.jsontypes import JSON

Handler = Callable[[JSON, StateView, Env], JSON]


@dataclass(frozen=True, slots=True)
class Operation:
    """``spec`` validates the whole request (including ``operation``); ``handler`` computes the result.
    ``memo``: the result is a function of the validated arguments and the documents read alone, so an answer
    that wrote nothing may be replayed while those documents keep their versions (runtime/memo.py)."""

    name: str
    spec: Spec[JSON]
    handler: Handler
    memo: bool = False


def table(*operations: Operation) -> Mapping[str, Operation]:
    return {op.name: op for op in operations}
