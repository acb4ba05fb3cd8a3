"""v0.3 JSON-RPC compatibility: the v0.3 methods over the 1.0 service, their translators, and the
v0.3/superset Agent Card (``docs/compat-v03.md``). The bindings use it only through :class:`V03Compat`."""

from __future__ import annotations

from typing import Any

from quineling.a2a.compat_v03.card import card_to_v03
from quineling.a2a.compat_v03.methods import V03_METHODS, call_v03, is_stream_method, resubscribe_always_sse
from quineling.a2a.compat_v03.translate import error_to_v03
from quineling.a2a.context import CallContext
from quineling.a2a.errors import A2AError
from quineling.a2a.service import A2AService
from quineling.protocol.v03 import METHODS
from stores.jsontypes import JSON


class V03Compat:
    """What a binding needs of the v0.3 layer, when compatibility is on."""

    methods: frozenset[str] = V03_METHODS

    def serves(self, method: str) -> bool:
        """Whether ``method`` is a v0.3 method name (the 1.0 and v0.3 method grammars are disjoint)."""
        return method in V03_METHODS

    def call(self, service: A2AService, method: str, params: Any, ctx: CallContext) -> Any:
        """The bare v0.3 result, or an iterator of v0.3 events for a stream method."""
        return call_v03(service, method, params, ctx)

    def is_stream(self, method: str) -> bool:
        return is_stream_method(method)

    def is_subscription(self, method: str) -> bool:
        """Whether ``method`` stays open waiting for a task's events (it holds a stream slot)."""
        return method == METHODS["SubscribeToTask"]

    def errors_as_stream(self, method: str) -> bool:
        """Whether even an immediate failure of ``method`` must be answered as an SSE stream."""
        return resubscribe_always_sse(method)

    def error(self, error: A2AError) -> JSON:
        """The v0.3 JSON-RPC ``error`` member."""
        return error_to_v03(error)

    def card(self, card: JSON, *, superset: bool) -> JSON:
        return card_to_v03(card, superset=superset)


__all__ = ["V03Compat"]
