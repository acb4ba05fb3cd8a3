"""The production topology on one machine, in Linux network namespaces: three app hosts, one Redis host, one
nginx host, on a bridge that only this machine sees (docs/deployment.md, "Trying it on one machine").

    sudo .venv/bin/python deploy/local/topology.py up       # build it; prints the balancer URL and a token
    sudo .venv/bin/python deploy/local/topology.py status   # namespaces, processes, readiness
    sudo .venv/bin/python deploy/local/topology.py down     # remove everything it created

``up`` first removes what an earlier run left (same prefix), so it also replaces a topology that is up.

Addresses (``--subnet``, default 10.77.0): the bridge, this machine's side, is ``.1``; nginx ``.2`` (port 80);
Redis ``.10`` (6379, AOF with ``appendfsync always``, a password); app hosts ``.11``–``.13`` (gunicorn with
deploy/gunicorn.conf.py, 2 gevent workers each, API keys, all advertising the balancer's origin). Nothing is
routed anywhere else: the namespaces have no default route and no address outside the subnet.

nginx runs deploy/nginx.conf itself, its upstream servers swapped for these addresses, so the tested
settings are the deployed ones. The test tests/deploy/test_topology.py drives this module.

Needs root, iproute2 (``ip``, ``tc``), redis-server and nginx; only the standard library and the project.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script from a checkout: the project's own key format below

from quineling.auth.keyfile import add_key  # noqa: E402

NGINX_CONF = ROOT / "deploy" / "nginx.conf"
GUNICORN_CONF = ROOT / "deploy" / "gunicorn.conf.py"
APP_PORT = 8049
REDIS_PORT = 6379
RELAY_PORT = 6380  # deploy/local/delay_relay.py, on the Redis host, when the kernel has no netem
BLACKHOLE_MAC = "02:00:00:00:00:01"  # a locally administered address no interface here has
LB_PORT = 80
APPS = 3
UPSTREAM_HEADER = "X-Quineling-Upstream"  # which app host served a request, added by this topology only
# The marker line in deploy/nginx.conf where this topology adds what a production balancer should not send.
LOCAL_MARKER = "# deploy/local: extra directives go here"


class TopologyError(RuntimeError):
    """A step of building or changing the topology failed; the message says which."""


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise TopologyError(f"{' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


@dataclass
class Topology:
    """The namespaces, links and processes of one topology; every name starts with ``prefix``."""

    state: Path
    prefix: str = "qh-"
    subnet: str = "10.77.0"
    python: str = sys.executable
    workers: int = 2
    # Extra QUINELING_* settings for every app host (e.g. shorter Redis deadlines).
    settings: dict[str, str] = field(default_factory=dict)
    _procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)
    _redis_port_for_apps: int = REDIS_PORT

    # --- names and addresses -------------------------------------------------------------------------

    @property
    def bridge(self) -> str:
        return f"{self.prefix}br"

    def ns(self, host: str) -> str:
        return f"{self.prefix}{host}"

    @property
    def hosts(self) -> list[str]:
        return ["lb", "redis", *self.apps]

    @property
    def apps(self) -> list[str]:
        return [f"app{i}" for i in range(1, APPS + 1)]

    def address(self, host: str) -> str:
        last = {"client": 1, "lb": 2, "redis": 10}.get(host) or 10 + int(host.removeprefix("app"))
        return f"{self.subnet}.{last}"

    @property
    def balancer_url(self) -> str:
        return f"http://{self.address('lb')}" + ("" if LB_PORT == 80 else f":{LB_PORT}")

    def app_url(self, host: str) -> str:
        return f"http://{self.address(host)}:{APP_PORT}"

    @property
    def redis_password(self) -> str:
        return self._secret("redis-password", lambda: secrets.token_hex(16))

    @property
    def store_url(self) -> str:
        return f"redis://:{self.redis_password}@{self.address('redis')}:{self._redis_port_for_apps}/0"

    @property
    def token(self) -> str:
        """The API key of the principal ``operator`` (the keys file holds only its hash)."""
        return self._secret("token", self._add_key)

    @property
    def keys_file(self) -> Path:
        return self.state / "keys"

    @property
    def access_log(self) -> Path:
        return self.state / "nginx" / "access.log"

    def log(self, host: str) -> Path:
        return self.state / f"{host}.log"

    def _secret(self, name: str, make: Any) -> str:
        path = self.state / name
        if not path.exists():
            self.state.mkdir(parents=True, exist_ok=True)
            path.write_text(make())
            path.chmod(0o600)
        return path.read_text().strip()

    def _add_key(self) -> str:
        return add_key(self.keys_file, "operator")

    # --- whole topology --------------------------------------------------------------------------------

    def up(self) -> None:
        """Build everything and wait until the balancer answers; on any failure, tear it all down."""
        for tool in ("ip", "tc", "redis-server", "nginx"):
            if shutil.which(tool) is None:
                raise TopologyError(f"{tool} is not installed")
        if os.geteuid() != 0:
            raise TopologyError("network namespaces need root")
        try:
            self.down()  # leftovers of an earlier run that was killed before it could clean up
            self.state.mkdir(parents=True, exist_ok=True)
            self._network()
            self.start_redis()
            for app in self.apps:
                self.start_app(app, wait=False)
            for app in self.apps:  # before nginx, which would mark a host that is still booting as failed
                self.wait_ready(app)
            self.start_nginx()
            self._wait(lambda: self._get(self.balancer_url + "/readyz") == 200, "the balancer", 20)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Stop every process in the namespaces and remove the namespaces and the bridge; safe to repeat."""
        # The balancer first: it holds kept-alive connections that the app hosts would wait out on SIGTERM.
        self._stop(["lb"])
        self._stop([host for host in self.hosts if host != "lb"])
        for host in self.hosts:
            run("ip", "netns", "del", self.ns(host), check=False)
        run("ip", "link", "del", self.bridge, check=False)
        for proc in self._procs.values():
            _reap(proc)
        self._procs.clear()

    def status(self) -> dict[str, Any]:
        present = set(run("ip", "netns", "list", check=False).stdout.split())
        report: dict[str, Any] = {}
        for host in self.hosts:
            ns = self.ns(host)
            entry: dict[str, Any] = {"namespace": ns in present, "address": self.address(host)}
            if ns in present:
                entry["pids"] = self.pids(host)
            if host.startswith("app") and ns in present:
                entry["ready"] = self._get(self.app_url(host) + "/readyz") == 200
            report[host] = entry
        report["balancer"] = self.balancer_url
        return report

    # --- network ---------------------------------------------------------------------------------------

    def _network(self) -> None:
        run("ip", "link", "add", self.bridge, "type", "bridge")
        run("ip", "addr", "add", f"{self.address('client')}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        for host in self.hosts:
            ns, link = self.ns(host), self.ns(host)
            run("ip", "netns", "add", ns)
            run("ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns)
            run("ip", "link", "set", link, "master", self.bridge, "up")
            self.exec_in(host, "ip", "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            self.exec_in(host, "ip", "link", "set", "eth0", "up")
            self.exec_in(host, "ip", "link", "set", "lo", "up")

    def exec_in(self, host: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run("ip", "netns", "exec", self.ns(host), *args, check=check)

    def netem_available(self) -> bool:
        """Whether the kernel has the ``netem`` qdisc (some minimal kernels lack it)."""
        probe = self.exec_in(
            "redis", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "0ms", check=False
        )
        self.exec_in("redis", "tc", "qdisc", "del", "dev", "lo", "root", check=False)
        return probe.returncode == 0

    def add_latency(self, ms: int) -> None:
        """Add ``ms`` to every app↔Redis round trip: ``tc netem`` delaying every packet the Redis host sends;
        without netem, deploy/local/delay_relay.py on the Redis host (``ms / 2`` each way), with the app
        hosts restarted to reach Redis through it."""
        if self.netem_available():
            self.exec_in(
                "redis", "tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay", f"{ms}ms"
            )
            return
        redis = self.address("redis")
        relay = [self.python, str(ROOT / "deploy/local/delay_relay.py"), f"{redis}:{RELAY_PORT}",
                 f"{redis}:{REDIS_PORT}", str(ms // 2)]  # fmt: skip
        self._spawn("relay", relay, ns="redis")
        self._wait(lambda: self.exec_in("redis", "redis-cli", "-h", redis, "-p", str(RELAY_PORT), "ping",
                                        check=False).returncode == 0, "the delay relay", 10)  # fmt: skip
        self._restart_apps(RELAY_PORT)

    def clear_latency(self) -> None:
        if "relay" in self._procs:
            self._restart_apps(REDIS_PORT)
            proc = self._procs.pop("relay")
            proc.kill()
            _reap(proc)
        self.exec_in("redis", "tc", "qdisc", "del", "dev", "eth0", "root", check=False)

    def _restart_apps(self, redis_port: int) -> None:
        self._redis_port_for_apps = redis_port
        self._stop(self.apps)
        for app in self.apps:
            proc = self._procs.pop(app, None)
            if proc is not None:
                _reap(proc)
            self.start_app(app, wait=False)
        for app in self.apps:
            self.wait_ready(app)

    def partition(self, app: str) -> None:
        """Silently drop every packet ``app`` sends to Redis (a partition, not a refusal): its neighbour entry
        for Redis names a link address nobody has, so the bridge delivers those frames nowhere. Its
        connections and connects to Redis time out, while it still answers its clients."""
        self.exec_in(app, "ip", "neigh", "replace", self.address("redis"), "lladdr", BLACKHOLE_MAC,
                     "dev", "eth0", "nud", "permanent")  # fmt: skip

    def heal(self, app: str) -> None:
        self.exec_in(app, "ip", "neigh", "del", self.address("redis"), "dev", "eth0", check=False)

    # --- processes -------------------------------------------------------------------------------------

    def pids(self, host: str) -> list[int]:
        out = run("ip", "netns", "pids", self.ns(host), check=False).stdout
        return [int(pid) for pid in out.split()]

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None, ns: str = "") -> None:
        """Start ``args`` in the namespace of host ``ns`` (default: ``name``), logging to ``<name>.log``."""
        sink: IO[bytes]
        with self.log(name).open("ab") as sink:
            self._procs[name] = subprocess.Popen(
                ["ip", "netns", "exec", self.ns(ns or name), *args],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self, host: str) -> None:
        """SIGKILL every process of ``host``: a crash, nothing flushed or said goodbye."""
        procs = [
            self._procs.pop(name)
            for name in list(self._procs)
            if name == host or (host == "redis" and name == "relay")
        ]
        for pid in self.pids(host):
            _signal(pid, signal.SIGKILL)
        self._wait(lambda: not self.pids(host), f"{host}'s processes to die", 10)
        for proc in procs:
            _reap(proc)

    def _stop(self, hosts: list[str]) -> None:
        """SIGTERM every process of ``hosts``, then SIGKILL what is left after 10 s."""
        for host in hosts:
            for pid in self.pids(host):
                _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while any(self.pids(host) for host in hosts) and time.monotonic() < deadline:
            time.sleep(0.1)
        for host in hosts:
            for pid in self.pids(host):
                _signal(pid, signal.SIGKILL)

    def start_redis(self) -> None:
        data = self.state / "redis"
        data.mkdir(parents=True, exist_ok=True)
        # appendfsync always: Redis answers a write only after it is in the AOF on disk, so what it
        # acknowledged survives a crash of Redis and of the machine (docs/deployment.md, "Persistence").
        self._spawn("redis", [
            "redis-server", "--bind", self.address("redis"), "--port", str(REDIS_PORT),
            "--requirepass", self.redis_password, "--dir", str(data),
            "--appendonly", "yes", "--appendfsync", "always", "--save", "",
            "--daemonize", "no", "--logfile", "",
        ])  # fmt: skip
        self._wait(self._redis_up, "Redis", 20)

    def redis_cli(self, *args: str) -> str:
        out = self.exec_in("redis", "redis-cli", "-h", self.address("redis"), "-p", str(REDIS_PORT),
                           "--no-auth-warning", "-a", self.redis_password, *args)  # fmt: skip
        return out.stdout.strip()

    def _redis_up(self) -> bool:
        try:
            return self.redis_cli("ping") == "PONG"
        except TopologyError:
            return False

    def app_env(self, app: str) -> dict[str, str]:
        self.token  # noqa: B018 - makes sure the keys file exists before the hosts read it
        env = {k: v for k, v in os.environ.items() if not k.startswith("QUINELING_")}
        env.update(
            PYTHONPATH=str(ROOT),
            QUINELING_A2A_HOST=self.address(app),
            QUINELING_A2A_PORT=str(APP_PORT),
            QUINELING_BASE_URL=self.balancer_url,
            QUINELING_STORE_URL=self.store_url,
            QUINELING_WORKERS=str(self.workers),
            QUINELING_AUTH_KEYS_FILE=str(self.keys_file),
        )
        env.update({f"QUINELING_{k.upper()}": v for k, v in self.settings.items()})
        return env

    def start_app(self, app: str, *, wait: bool = True) -> None:
        self._spawn(app, [self.python, "-m", "gunicorn", "-c", str(GUNICORN_CONF), "wsgi:app"],
                    self.app_env(app))  # fmt: skip
        if wait:
            self.wait_ready(app)

    def wait_ready(self, app: str, timeout: float = 60) -> None:
        self._wait(lambda: self._get(self.app_url(app) + "/readyz") == 200, f"{app} to be ready", timeout)

    def nginx_conf(self) -> str:
        """deploy/nginx.conf inside a main context of its own, its upstreams pointed at the app hosts."""
        site = NGINX_CONF.read_text()
        site, count = re.subn(
            r"server app(\d):(\d+)", lambda m: f"server {self.address('app' + m[1])}:{m[2]}", site
        )
        if count != APPS:
            raise TopologyError(f"{NGINX_CONF} names {count} upstream servers app1..; expected {APPS}")
        site = site.replace("listen 8080;", f"listen {self.address('lb')}:{LB_PORT};")
        site = site.replace("access_log /var/log/nginx/access.log", f"access_log {self.access_log}")
        extra = f"add_header {UPSTREAM_HEADER} $upstream_addr always;"
        if LOCAL_MARKER not in site:
            raise TopologyError(f"{NGINX_CONF} lost its line {LOCAL_MARKER!r}")
        site = site.replace(LOCAL_MARKER, extra)
        temp = self.state / "nginx"
        return "\n".join([
            "daemon off;", "worker_processes 1;", "user root;", f"pid {temp}/nginx.pid;",
            f"error_log {temp}/error.log warn;", "events { worker_connections 1024; }", "http {",
            f"client_body_temp_path {temp}/body; proxy_temp_path {temp}/proxy;",
            f"fastcgi_temp_path {temp}/fastcgi; uwsgi_temp_path {temp}/uwsgi; scgi_temp_path {temp}/scgi;",
            site, "}", "",
        ])  # fmt: skip

    def start_nginx(self) -> None:
        temp = self.state / "nginx"
        temp.mkdir(parents=True, exist_ok=True)
        conf = temp / "nginx.conf"
        conf.write_text(self.nginx_conf())
        self.exec_in("lb", "nginx", "-t", "-q", "-c", str(conf), "-p", str(temp))
        self._spawn("lb", ["nginx", "-c", str(conf), "-p", str(temp)])
        self._wait(lambda: self._get(self.balancer_url + "/healthz") is not None, "nginx", 20)

    # --- helpers ---------------------------------------------------------------------------------------

    @staticmethod
    def _get(url: str) -> int | None:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    def _wait(self, ready: Any, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            for host, proc in self._procs.items():
                if proc.poll() is not None and host in self.hosts and not self.pids(host):
                    tail = self.log(host).read_text(errors="replace")[-2000:]
                    raise TopologyError(f"{host} exited with {proc.returncode} waiting for {what}:\n{tail}")
            if time.monotonic() > deadline:
                raise TopologyError(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(0.1)


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def down_command(prefix: str) -> str:
    """The command that removes the topology of ``prefix`` — not the default one — run as this one was run."""
    return shlex.join([sys.executable, sys.argv[0], "down", "--prefix", prefix])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument(
        "--state", default="/tmp/quineling-topology", help="logs, keys, AOF (default: %(default)s)"
    )
    parser.add_argument(
        "--prefix", default="qh-", help="namespace, bridge and link names (default: %(default)s)"
    )
    parser.add_argument(
        "--subnet", default="10.77.0", help="the /24 to use, first three octets (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    topology = Topology(Path(args.state), prefix=args.prefix, subnet=args.subnet)
    try:
        if args.action == "up":
            topology.up()
            print(
                f"balancer: {topology.balancer_url}  (card: {topology.balancer_url}/.well-known/agent-card.json)"
            )
            print(f"token (principal 'operator'): {topology.token}")
            print(f"logs: {topology.state}/*.log and {topology.access_log}")
            print(f"stop with: {down_command(topology.prefix)}")
        elif args.action == "down":
            topology.down()
        else:
            print(json.dumps(topology.status(), indent=2))
    except TopologyError as exc:
        print(f"topology: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
