"""Redis over TLS for tests: a throwaway CA and server certificate made with the ``openssl`` command, one TLS
``redis-server`` with a password, and a three-master TLS Redis Cluster (``--tls-cluster yes``, its bus on TLS
too), all on free loopback ports, in a temporary directory, stopped and removed afterwards.

    with tls_material() as certs, tls_redis(certs) as server, tls_cluster(certs) as cluster:
        RedisBackend(server.url, ssl_ca_certs=str(certs.ca))        # rediss://:secret@127.0.0.1:P/0
        RedisBackend(cluster.url, ssl_ca_certs=str(certs.ca))       # rediss+cluster://:secret@127.0.0.1:P,…

The nodes are child processes (not daemons, unlike the shared plain cluster of ``redis_cluster.py``): they
end with the test module, and their ports are picked free (bus ports too, ``--cluster-port``), so two test
sessions on one machine never meet. :func:`tls_unavailable` says why TLS cannot run here (no ``openssl``,
no ``redis-server``/``redis-cli``, or a ``redis-server`` built without TLS).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from tests.support.live import free_port
from tests.support.redis_cluster import cluster_ok
from tests.support.redis_server import wait_for_ping

OPENSSL = shutil.which("openssl")
REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")
PASSWORD = "tls-secret"  # every TLS server here requires it: auth is proven over TLS too
_SERVER_EXTENSIONS = (
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
    # clientAuth too: cluster nodes present the same certificate when they dial each other's bus.
    "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
    "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
)


class TlsUnsupported(RuntimeError):
    """``redis-server`` here was built without TLS."""


def tls_unavailable() -> str | None:
    """Why TLS Redis cannot run on this machine, or ``None`` (binaries only; a build without TLS shows when a
    server is started: :class:`TlsUnsupported`)."""
    missing = [name for name, path in (("openssl", OPENSSL), ("redis-server", REDIS_SERVER),
                                       ("redis-cli", REDIS_CLI)) if path is None]  # fmt: skip
    return f"needs {' and '.join(missing)} for Redis over TLS" if missing else None


def skip_or_fail(reason: str) -> None:
    """Skip, unless the run requires real Redis or a cluster (CI): then a missing TLS capability fails."""
    if os.environ.get("QUINELING_REQUIRE_CLUSTER") or os.environ.get("QUINELING_REQUIRE_REDIS"):
        pytest.fail(f"Redis over TLS is required here but unavailable: {reason}")
    pytest.skip(reason)


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA the servers' certificate is signed by
    other_ca: Path  # a CA that signed nothing here: trusting only it must refuse every server
    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    assert OPENSSL is not None
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True)


def _make_ca(folder: Path, name: str) -> None:
    _openssl("req", "-x509", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2", "-subj", f"/CN=Quineling {name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=folder)  # fmt: skip


@contextmanager
def tls_material() -> Iterator[Certificates]:
    """A CA, a server certificate it signed (SAN IP:127.0.0.1, DNS:localhost) and an unrelated CA (EC keys:
    made in milliseconds), in a temporary directory removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="quineling-tls-"))
    try:
        _make_ca(folder, "ca")
        _make_ca(folder, "other-ca")
        (folder / "server.ext").write_text(_SERVER_EXTENSIONS)
        _openssl("req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost", cwd=folder)  # fmt: skip
        _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", "server.crt", "-days", "2", "-extfile", "server.ext", cwd=folder)  # fmt: skip
        yield Certificates(
            folder / "ca.crt", folder / "other-ca.crt", folder / "server.crt", folder / "server.key"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class TlsNode:
    """One ``redis-server`` listening on TLS only (``--port 0``), with :data:`PASSWORD`."""

    def __init__(
        self, certs: Certificates, directory: Path, *extra: str, bind: tuple[str, ...] = ("127.0.0.1",)
    ) -> None:
        self.certs = certs
        self.bind = bind
        self.port = free_port()
        self.directory = directory
        self.extra = extra
        self.log = directory / "redis.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def client(self, timeout: float = 1.0) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, password=PASSWORD, ssl=True,
                           ssl_ca_certs=str(self.certs.ca), socket_timeout=timeout,
                           socket_connect_timeout=timeout)  # fmt: skip

    def start(self, timeout: float = 10.0) -> None:
        assert REDIS_SERVER is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        certs = self.certs
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", "0", "--tls-port", str(self.port), "--bind", *self.bind,
             "--tls-cert-file", str(certs.cert), "--tls-key-file", str(certs.key),
             "--tls-ca-cert-file", str(certs.ca), "--tls-auth-clients", "no", "--requirepass", PASSWORD,
             "--save", "", "--appendonly", "no", "--dir", str(self.directory), "--logfile", str(self.log),
             "--daemonize", "no", *self.extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        proc = self.proc
        wait_for_ping(self.client(0.5), timeout, lambda: self._exited() if proc.poll() is not None else None)

    def _exited(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        said = self.proc.stderr.read().decode(errors="replace")
        if self.log.exists():
            said += self.log.read_text(errors="replace")
        self.proc = None
        if "tls" in said.lower() and ("not supported" in said.lower() or "bad directive" in said.lower()):
            raise TlsUnsupported(f"redis-server was built without TLS: {said.strip()[-300:]}")
        raise RuntimeError(f"TLS redis-server on port {self.port} exited: {said.strip()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            if self.proc.stderr is not None:
                self.proc.stderr.close()
            self.proc = None


@dataclass(frozen=True)
class TlsServer:
    node: TlsNode

    @property
    def url(self) -> str:
        return f"rediss://:{PASSWORD}@127.0.0.1:{self.node.port}/0"

    @property
    def mismatched_url(self) -> str:
        """The same server by an address its certificate does not name."""
        return f"rediss://:{PASSWORD}@127.0.0.2:{self.node.port}/0"


@dataclass(frozen=True)
class TlsCluster:
    nodes: tuple[TlsNode, ...]

    @property
    def url(self) -> str:
        return f"rediss+cluster://:{PASSWORD}@" + ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def healthy(self) -> bool:
        return all(cluster_ok(node.client(0.5)) for node in self.nodes)


@contextmanager
def tls_redis(certs: Certificates) -> Iterator[TlsServer]:
    """One started TLS server; killed and its directory removed afterwards. It listens on 127.0.0.2 too, an
    address its certificate does not name (``mismatched_url``)."""
    directory = Path(tempfile.mkdtemp(prefix="quineling-tls-redis-"))
    node = TlsNode(certs, directory, bind=("127.0.0.1", "127.0.0.2"))
    try:
        node.start()
        yield TlsServer(node)
    finally:
        node.stop()
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def tls_cluster(certs: Certificates, masters: int = 3, timeout: float = 30.0) -> Iterator[TlsCluster]:
    """A started TLS Redis Cluster of ``masters`` masters and no replicas (``cluster-require-full-coverage
    no``, as docs/cluster.md asks of such a deployment), made with ``redis-cli --tls --cluster create``."""
    assert REDIS_CLI is not None
    root = Path(tempfile.mkdtemp(prefix="quineling-tls-cluster-"))
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        nodes = []
        for index in range(masters):
            node = TlsNode(certs, root / str(index), "--cluster-enabled", "yes", "--cluster-port", str(free_port()),
                           "--tls-cluster", "yes", "--tls-replication", "yes", "--masterauth", PASSWORD,
                           "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
                           "--cluster-require-full-coverage", "no")  # fmt: skip
            stack.callback(node.stop)
            node.start()
            nodes.append(node)
        subprocess.run(
            [REDIS_CLI, "--tls", "--cacert", str(certs.ca), "-a", PASSWORD, "--no-auth-warning",
             "--cluster", "create", *(f"127.0.0.1:{node.port}" for node in nodes),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True,
            capture_output=True,
        )  # fmt: skip
        cluster = TlsCluster(tuple(nodes))
        deadline = time.monotonic() + timeout
        while not cluster.healthy():
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the TLS cluster on {[node.port for node in nodes]} did not become healthy"
                )
            time.sleep(0.1)
        yield cluster
