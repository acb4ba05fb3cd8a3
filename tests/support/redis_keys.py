"""Finding, dumping and deleting a test's Redis keys by key prefix.

Every test that touches real Redis (or fakeredis) gets its own prefix, so tests can share one database; the
pattern that matches a prefix's keys comes from :mod:`stores.redis.keys`, where every key the backend writes is
spelled.
"""

from __future__ import annotations

from typing import Any

from stores.redis import keys
from stores.redis.connection import make_client


def keys_under(client: Any, prefix: str) -> list[bytes]:
    """Every key under ``prefix``, sorted."""
    return sorted(client.scan_iter(match=keys.all_keys_pattern(prefix), count=500))


def snapshot(client: Any, prefix: str) -> dict[bytes, tuple[str, Any]]:
    """Every key under ``prefix`` with its type and contents: equal snapshots mean nothing was changed."""
    state: dict[bytes, tuple[str, Any]] = {}
    for key in keys_under(client, prefix):
        kind = client.type(key)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "hash":
            value: Any = client.hgetall(key)
        elif kind == "zset":
            value = client.zrange(key, 0, -1, withscores=True)
        elif kind == "stream":
            value = client.xrange(key)
        elif kind == "string":
            value = client.get(key)
        elif kind == "list":
            value = client.lrange(key, 0, -1)
        elif kind == "set":
            value = sorted(client.smembers(key))
        else:
            value = None
        state[key] = (kind, value)
    return state


def delete_under(url: str, *prefixes: str, **options: Any) -> None:
    """Delete every key under each of ``prefixes`` on the Redis server at ``url`` (``options``: the client's,
    e.g. ``ssl_ca_certs`` for a TLS server signed by a test CA)."""
    client = make_client(url, socket_timeout=5.0, **options)  # a cluster's scan_iter walks every primary
    try:
        for prefix in prefixes:
            for key in client.scan_iter(match=keys.all_keys_pattern(prefix), count=1000):
                client.delete(key)
    finally:
        client.close()
