"""Reading a Redis Cluster URL (``redis+cluster://[user:password@]host:port[,host:port…]``) without redis-py:
the store's client (stores/redis/connection.py) and the gunicorn master's start-up probe (quineling/startup.py,
which must not import redis) read it alike."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit


def cluster_parts(url: str) -> tuple[str, str]:
    """A cluster URL's userinfo and host list; ``ValueError`` for a path, query or fragment."""
    rest = url.split("://", 1)[1]
    netloc, _, tail = rest.partition("/")
    if tail not in ("", "0") or "?" in rest or "#" in rest:
        raise ValueError(
            f"a Redis Cluster URL names nodes only (no database, path or query): {redacted(url)!r}"
        )
    userinfo, _, hosts = netloc.rpartition("@")
    return userinfo, hosts


def redacted(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.rpartition('@')[2]}"


def cluster_hosts(url: str) -> list[tuple[str, int]]:
    """The nodes a cluster URL lists, each ``host:port`` (``[v6]:port`` for IPv6); ``ValueError`` otherwise."""
    hosts = []
    for item in cluster_parts(url)[1].split(","):
        parts = urlsplit(f"//{item.strip()}")
        try:
            port = parts.port
        except ValueError:
            port = None
        if not parts.hostname or port is None:
            raise ValueError(f"a Redis Cluster URL lists host:port pairs; got {item!r} in {redacted(url)!r}")
        hosts.append((parts.hostname, port))
    return hosts


def cluster_auth(url: str) -> dict[str, str]:
    """``username``/``password`` from a cluster URL's userinfo (percent-decoded), as redis-py takes them."""
    userinfo = cluster_parts(url)[0]
    if not userinfo:
        return {}
    user, has_password, password = userinfo.partition(":")
    auth = {"password": unquote(password)} if has_password else {"password": unquote(user)}
    if has_password and user:
        auth["username"] = unquote(user)
    return auth
