"""Open files at start-up (docs/deployment.md, "Open files"): what the configured bounds need in descriptors per
worker process, checked against ``RLIMIT_NOFILE`` before gunicorn starts. The soft limit is raised up to the
hard one when that is enough; when even the hard limit is too low the server refuses to start, with exit
status 3 and one JSON line that says what is needed and how to fix it. Without this a worker at its limit
fails ``accept()`` with EMFILE, gevent prints tracebacks about once a second, and new clients hang unanswered.

Standard library only (and the cluster URL's parser): it runs in the gunicorn master, whose limit every worker
inherits."""

from __future__ import annotations

import json
import resource
import sys
import time
from dataclasses import dataclass
from typing import Protocol

from stores.redis.cluster_url import cluster_hosts

EXIT_STATUS = 3
# Descriptors a worker holds besides its clients' and the store's: the listening socket, stdio and logs, the
# metric files, gevent's hub, the keys file, a JWKS fetch, the Python runtime's own.
OTHER_FILES = 64
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")


class Bounds(Protocol):
    """The settings the count comes from (a :class:`quineling.config.Settings`)."""

    @property
    def store_url(self) -> str: ...
    @property
    def worker_connections(self) -> int: ...
    @property
    def store_connections(self) -> int: ...
    @property
    def blocking_store_limit(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Need:
    clients: int
    store: int
    other: int = OTHER_FILES

    @property
    def total(self) -> int:
        return self.clients + self.store + self.other

    def reason(self) -> str:
        return (
            f"{self.clients} client connections (QUINELING_WORKER_CONNECTIONS) + {self.store} store sockets "
            f"(QUINELING_STORE_CONNECTIONS and QUINELING_BLOCKING_STORE_CONNECTIONS, per cluster node) + "
            f"{self.other} others"
        )


def need(bounds: Bounds) -> Need:
    """Descriptors one worker may hold at once. The in-process store holds none; Redis one per connection of
    each pool, which a cluster keeps per node (the nodes its URL lists; one more each to read the slot map)."""
    scheme = bounds.store_url.split("://", 1)[0].lower()
    if scheme == "memory":
        return Need(bounds.worker_connections, 0)
    per_server = bounds.store_connections + bounds.blocking_store_limit
    if scheme in CLUSTER_SCHEMES:
        try:
            nodes = max(1, len(cluster_hosts(bounds.store_url)))
        except ValueError:  # a malformed URL is the store's to report
            nodes = 1
        return Need(bounds.worker_connections, nodes * (per_server + 1))
    return Need(bounds.worker_connections, per_server)


class TooFewOpenFiles(RuntimeError):
    def __init__(self, needed: Need, soft: int, hard: int) -> None:
        self.needed, self.soft, self.hard = needed, soft, hard
        super().__init__(
            f"each worker may need {needed.total} open files ({needed.reason()}), but the hard open-files limit "
            f"(RLIMIT_NOFILE) is {hard}: raise it (ulimit -n {needed.total} in the starting shell, systemd "
            f"LimitNOFILE={needed.total}, docker run --ulimit nofile={needed.total}, compose ulimits.nofile) or "
            "lower QUINELING_WORKER_CONNECTIONS, QUINELING_STORE_CONNECTIONS or QUINELING_MAX_STREAMS"
        )


def ensure(bounds: Bounds) -> int:
    """Make the soft ``RLIMIT_NOFILE`` hold what ``bounds`` need (raising it up to the hard limit); the limit
    in force. :class:`TooFewOpenFiles` when the hard limit cannot hold it."""
    needed = need(bounds).total
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return soft
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise TooFewOpenFiles(need(bounds), soft, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    return needed


def ensure_or_exit(bounds: Bounds) -> None:
    """:func:`ensure`, or one JSON line on stderr and exit status 3 (``deploy/gunicorn.conf.py``, ``quineling
    serve``): the refusal is read by whatever runs the server, so it is a log line like the server's own."""
    try:
        ensure(bounds)
    except TooFewOpenFiles as refused:
        line = {
            "level": "ERROR",
            "logger": "quineling.open_files",
            "event": f"quineling: refusing to start: {refused}",
            "needed": refused.needed.total,
            "soft_limit": refused.soft,
            "hard_limit": refused.hard,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        print(json.dumps(line), file=sys.stderr, flush=True)
        sys.exit(EXIT_STATUS)
