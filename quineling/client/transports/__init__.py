"""The wire bindings: JSON-RPC 1.0, HTTP+JSON 1.0 and v0.3 JSON-RPC, each behind :class:`Transport`."""

from quineling.client.transports.base import REPEATABLE, CallOptions, InterfaceMismatch, Transport
from quineling.client.transports.jsonrpc import JsonRpcTransport
from quineling.client.transports.rest import RestTransport
from quineling.client.transports.v03 import V03Transport

__all__ = [
    "REPEATABLE",
    "CallOptions",
    "InterfaceMismatch",
    "JsonRpcTransport",
    "RestTransport",
    "Transport",
    "V03Transport",
]
