"""v0.3 JSON-RPC, for agents that offer nothing newer: v0.3 method names (``message/send``, …) and shapes on
the wire (:mod:`quineling.client.v03`), 1.0 shapes to the caller. Sent with ``A2A-Version: 0.3``."""

from __future__ import annotations

from typing import Any

from quineling.client import v03
from quineling.client.errors import AgentError
from quineling.client.transports.base import JSONDict
from quineling.client.transports.jsonrpc import JsonRpcTransport
from quineling.protocol.v03 import METHODS


class V03Transport(JsonRpcTransport):
    version = "0.3"

    def method(self, op: str) -> str:
        try:
            return METHODS[op]
        except KeyError:
            raise AgentError(
                f"{op}: A2A v0.3 JSON-RPC has no such method (the agent offers only v0.3)",
                reason="UNSUPPORTED_OPERATION",
                hint="ListTasks needs an A2A 1.0 interface",
            ) from None

    def params(self, op: str, params: JSONDict) -> JSONDict:
        return v03.params_out(op, params)

    def translate(self, op: str, result: Any) -> Any:
        return v03.result_in(op, result)
