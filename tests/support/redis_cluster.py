"""A local Redis Cluster of three masters (no replicas) on fixed loopback ports, for the cluster suites.

    cluster = LocalCluster(ports=(7101, 7102, 7103))
    cluster.ensure()          # starts what is not running, creates the cluster once; idempotent
    cluster.url               # redis+cluster://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103
    cluster.kill(7102); cluster.start_node(7102)   # fault tests (their own cluster, never the shared one)

``.ci/run`` runs this module (``python -m tests.support.redis_cluster start``) so CI starts the shared
cluster before the suite; the test session starts it itself when ``QUINELING_TEST_REDIS_CLUSTER_URL`` is
unset and ``redis-server`` is installed. Nodes run with ``cluster-require-full-coverage no``: when one master
is down, the others keep serving their slots (what a deployment without replicas should configure too).
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis

from tests.support.ports import bindable

REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")
SHARED_PORTS = (7101, 7102, 7103)  # the conformance, e2e and interop suites' cluster
FAULT_PORTS = (7104, 7105, 7106)  # the fault tests' own cluster: they kill nodes and move slots
DATA_ROOT = Path("/tmp")


def available() -> bool:
    return REDIS_SERVER is not None and REDIS_CLI is not None


def free_ports(count: int) -> tuple[int, ...]:
    """Ports for a private cluster of ``count`` nodes: each free, and its cluster bus port (+10000) too."""
    found: list[int] = []
    for port in random.sample(range(7200, 8000), 800):  # clear of the shared and fault clusters' ports
        if all(bindable(p) for p in (port, port + 10000)):
            found.append(port)
            if len(found) == count:
                return tuple(found)
    raise RuntimeError("no free ports for a private cluster")


def cluster_ok(client: redis.Redis) -> bool:
    """Whether this node answers and reports the cluster ok with all 16384 slots assigned (it is closed)."""
    try:
        info = client.execute_command("CLUSTER", "INFO")
    except redis.RedisError:
        return False
    finally:
        client.close()
    text = info.decode() if isinstance(info, bytes) else str(info)
    return "cluster_state:ok" in text and "cluster_slots_assigned:16384" in text


class LocalCluster:
    def __init__(self, ports: tuple[int, ...] = SHARED_PORTS, *, aof: bool = False) -> None:
        self.ports = ports
        self.aof = aof  # the fault tests restart a killed master and want its data back

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def directory(self, port: int) -> Path:
        return DATA_ROOT / f"qcluster-{port}"

    def node(self, port: int, timeout: float = 1.0) -> redis.Redis:
        # retry=None: redis-py's default repeats a refused connect with backoff for seconds, which made every
        # "is it down yet" probe after a kill wait that long.
        return redis.Redis(
            host="127.0.0.1", port=port, socket_timeout=timeout, socket_connect_timeout=timeout, retry=None
        )

    def answers(self, port: int) -> bool:
        client = self.node(port, 0.3)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def start_node(self, port: int) -> None:
        """Start one node (again) in its data directory, daemonized (it outlives the test process, so CI and
        later sessions reuse it); returns once it answers."""
        assert REDIS_SERVER is not None
        if self.answers(port):
            return
        folder = self.directory(port)
        folder.mkdir(parents=True, exist_ok=True)
        durability = (
            ["--appendonly", "yes", "--appendfsync", "everysec"] if self.aof else ["--appendonly", "no"]
        )
        subprocess.run(
            [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "",
             *durability, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
             "--cluster-node-timeout", "2000", "--cluster-require-full-coverage", "no",
             "--pidfile", str(folder / "redis.pid"), "--logfile", str(folder / "redis.log"),
             "--daemonize", "yes"],
            check=True,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while not self.answers(port):
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster node on port {port} did not start (see {folder}/redis.log)")
            time.sleep(0.05)

    def healthy(self) -> bool:
        """Every node answers and reports the cluster ok with all 16384 slots assigned."""
        return all(cluster_ok(self.node(port, 0.5)) for port in self.ports)

    def ensure(self, timeout: float = 30.0) -> None:
        """Start every node that is not running and create the cluster if it has not been; idempotent, and
        one process at a time (pytest-xdist's workers each start the shared cluster on first use)."""
        with (DATA_ROOT / f"qcluster-{self.ports[0]}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            self._ensure(timeout)

    def _ensure(self, timeout: float) -> None:
        for port in self.ports:
            self.start_node(port)
        if self.healthy():
            return
        assert REDIS_CLI is not None
        known = self.node(self.ports[0])
        try:
            slots = int(dict(known.cluster("info")).get("cluster_slots_assigned", 0))
        finally:
            known.close()
        if slots == 0:
            nodes = [f"127.0.0.1:{port}" for port in self.ports]
            subprocess.run(
                [REDIS_CLI, "--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        self.wait_healthy(timeout)

    def wait_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.healthy():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster on {self.ports} did not become healthy")
            time.sleep(0.1)

    def pid(self, port: int) -> int | None:
        try:
            return int((self.directory(port) / "redis.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def kill(self, port: int) -> None:
        """SIGKILL one node (by the pid it wrote: only our own processes)."""
        pid = self.pid(port)
        assert pid is not None, f"no pid file for port {port}"
        subprocess.run(["kill", "-CONT", str(pid)], check=False)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while self.answers(port) and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill every node and remove the data directories (a fresh cluster next time)."""
        for port in self.ports:
            if self.pid(port) is not None:
                self.kill(port)
            shutil.rmtree(self.directory(port), ignore_errors=True)

    def slot_ranges(self) -> list[tuple[int, int, int]]:
        """(first slot, last slot, port of its master) for every range, as the cluster reports it now."""
        client = self.node(self.ports[0])
        try:
            reply = client.execute_command("CLUSTER", "SLOTS")
        finally:
            client.close()
        return [(int(start), int(end), int(primary[1])) for start, end, primary, *_ in reply]

    def slot_owner(self, slot: int) -> int:
        """The port of the master that serves ``slot``."""
        return owner_of(self.slot_ranges(), slot)

    def node_id(self, port: int) -> str:
        client = self.node(port)
        try:
            raw = client.execute_command("CLUSTER", "MYID")
        finally:
            client.close()
        return raw.decode() if isinstance(raw, bytes) else str(raw)


def owner_of(ranges: list[tuple[int, int, int]], slot: int) -> int:
    """The port serving ``slot`` in :meth:`LocalCluster.slot_ranges`' answer."""
    for start, end, port in ranges:
        if start <= slot <= end:
            return port
    raise LookupError(slot)


def main(argv: list[str]) -> int:
    """``python -m tests.support.redis_cluster start|stop|url``: for .ci/run and for people."""
    command = argv[1] if len(argv) > 1 else "start"
    cluster = LocalCluster()
    if command == "start":
        if not available():
            print("redis-server and redis-cli are needed for the local cluster", file=sys.stderr)
            return 1
        cluster.ensure()
        print(cluster.url)
    elif command == "stop":
        cluster.stop()
    elif command == "url":
        print(cluster.url)
    else:
        print(f"unknown command {command!r}: start, stop or url", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
