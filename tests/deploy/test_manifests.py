"""deploy/ says only true things: every manifest parses, names only settings the configuration knows (with
values it accepts), probes only paths the app serves, and matches the topology deploy/local/ runs and
tests/deploy/test_topology.py proves — three app replicas behind nginx, each advertising the balancer's
origin, authentication on, Redis with AOF on a volume."""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from quineling import create_app
from quineling.config import ENV_PREFIX, Settings, check_exposure, load_settings
from quineling.version import __version__
from tests.deploy.conftest import DEPLOY, ROOT, load_topology

KNOWN_SETTINGS = {ENV_PREFIX + f.name.upper() for f in fields(Settings)}
APP_PORT = Settings().a2a_port


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def kubernetes() -> dict[str, dict[str, Any]]:
    """The Kubernetes objects by ``Kind/name``."""
    docs = [d for d in yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()) if d]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


def dockerfile_env() -> dict[str, str]:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")  # continued lines as one
    env: dict[str, str] = {}
    for line in re.findall(r"^ENV (.+)$", text, flags=re.M):
        env.update(pair.split("=", 1) for pair in line.split() if "=" in pair)
    return env


SAMPLE_PASSWORD = "0123abcd"  # stands in for a Secret's value where a manifest reads one
SECRET_READ = re.compile(r"\$\$\(cat /run/secrets/([\w.-]+)\)")  # compose: a secret's file, read by sh
FLOATING = re.compile(r":(latest|\d+|\d+\.\d+)?$|^[^:]+$")  # no tag, `latest`, or a major(.minor) that moves


def app_services() -> dict[str, dict[str, Any]]:
    """The compose services built from deploy/Dockerfile: the app replicas."""
    return {name: s for name, s in compose()["services"].items() if "build" in s}


def compose_store_url(service: dict[str, Any]) -> tuple[str, list[str]]:
    """The store URL an app replica's entrypoint exports, its secrets read in; and the secrets it reads."""
    script = " ".join(service["entrypoint"])
    url = re.search(r'export QUINELING_STORE_URL=\\?"([^"\\]+)\\?"', script)
    assert url, f"no QUINELING_STORE_URL in {script!r}"
    return SECRET_READ.sub(SAMPLE_PASSWORD, url[1]), SECRET_READ.findall(url[1])


def container_env(container: dict[str, Any]) -> dict[str, str]:
    """A Kubernetes container's environment as the process sees it: a Secret's value stands in as
    SAMPLE_PASSWORD, and $(VAR) is expanded from the variables before it, as Kubernetes does."""
    env: dict[str, str] = {}
    for entry in container.get("env", []):
        if "valueFrom" in entry:
            assert set(entry["valueFrom"]) == {"secretKeyRef"}, entry
            env[entry["name"]] = SAMPLE_PASSWORD
        else:
            env[entry["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env[m[1]], entry["value"])
    return env


def secret_refs(pod: dict[str, Any]) -> set[str]:
    """Every Secret a pod spec uses: as a volume and as environment variables."""
    names = {v["secret"]["secretName"] for v in pod.get("volumes", []) if "secret" in v}
    for container in pod["containers"]:
        for entry in container.get("env", []):
            if "valueFrom" in entry:
                names.add(entry["valueFrom"]["secretKeyRef"]["name"])
    return names


def deployment_container() -> dict[str, Any]:
    container: dict[str, Any] = kubernetes()["Deployment/quineling"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    return container


def manifest_envs() -> dict[str, dict[str, str]]:
    """Every app's environment, as the process sees it: the image's ENV, then the manifest's."""
    envs = {
        f"compose {name}": {
            **dockerfile_env(),
            **s["environment"],
            "QUINELING_STORE_URL": compose_store_url(s)[0],
        }
        for name, s in app_services().items()
    }
    envs["kubernetes"] = {**dockerfile_env(), **container_env(deployment_container())}
    envs["Dockerfile"] = dockerfile_env()
    return envs


def test_every_manifest_parses() -> None:
    assert compose()["services"]
    assert len(kubernetes()) >= 7
    assert "upstream quineling" in (DEPLOY / "nginx.conf").read_text()
    load_topology().Topology(ROOT / "unused").nginx_conf()  # deploy/local can run deploy/nginx.conf


@pytest.mark.parametrize("where", ["compose", "kubernetes", "Dockerfile"])
def test_manifests_name_only_known_settings_with_accepted_values(where: str) -> None:
    for name, env in manifest_envs().items():
        if not name.startswith(where):
            continue
        unknown = {k for k in env if k.startswith(ENV_PREFIX)} - KNOWN_SETTINGS
        assert unknown == set(), f"{name} names settings the configuration does not know: {unknown}"
        if where == "Dockerfile":
            continue
        settings = load_settings(env={k: v for k, v in env.items() if k in KNOWN_SETTINGS})
        check_exposure(settings)  # all interfaces, so authentication must be on
        assert settings.authenticated and not settings.allow_anonymous, name
        assert settings.store_url.startswith("redis://") and settings.workers >= 2, name


def probed_paths() -> list[str]:
    container = deployment_container()
    paths = [container[p]["httpGet"]["path"] for p in ("startupProbe", "readinessProbe", "livenessProbe")]
    assert {container[p]["httpGet"]["port"] for p in ("startupProbe", "readinessProbe", "livenessProbe")} == {
        "http"
    }
    assert container["ports"] == [{"name": "http", "containerPort": APP_PORT}]
    texts = [(DEPLOY / "Dockerfile").read_text()] + [
        " ".join(s["healthcheck"]["test"]) for s in compose()["services"].values() if "healthcheck" in s
    ]
    for text in texts:
        for port, path in re.findall(r"http://127\.0\.0\.1:(\d+)(/[\w/.-]*)", text):
            assert int(port) in (APP_PORT, nginx_listen_port()), text
            paths.append(path)
    return paths


def test_probes_ask_paths_the_app_serves() -> None:
    adapter = create_app().url_map.bind("localhost")
    paths = probed_paths()
    assert {"/healthz", "/readyz"} <= set(paths)
    for path in paths:
        endpoint, _ = adapter.match(path, method="GET")  # raises NotFound for a path the app does not serve
        assert endpoint, path


def nginx_listen_port() -> int:
    return int(re.search(r"listen (\d+);", (DEPLOY / "nginx.conf").read_text())[1])  # type: ignore[index]


def test_compose_runs_three_replicas_behind_nginx_on_redis_with_aof() -> None:
    services = compose()["services"]
    apps = app_services()
    assert len(apps) == 3
    upstreams = re.findall(r"server (\w+):(\d+)", (DEPLOY / "nginx.conf").read_text())
    assert sorted(upstreams) == sorted((name, str(APP_PORT)) for name in apps)
    published = [p for p in services["nginx"]["ports"]]
    assert published == [f"127.0.0.1:{nginx_listen_port()}:{nginx_listen_port()}"]
    for name, service in apps.items():
        env = service["environment"]
        assert env["QUINELING_BASE_URL"] == f"http://127.0.0.1:{nginx_listen_port()}", name  # the balancer
        assert urlsplit(compose_store_url(service)[0]).hostname == "redis", name
        assert (
            service["secrets"] == ["quineling-keys", "redis-password"]
            and env["QUINELING_AUTH_KEYS_FILE"] == "/run/secrets/quineling-keys"
        )
        assert service["healthcheck"] and service["read_only"] and service["stop_grace_period"]
    assert compose()["secrets"]["quineling-keys"]["file"] == "./keys"
    redis = services["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command and "--appendfsync always" in command
    assert redis["volumes"] == ["redis-data:/data"] and "redis-data" in compose()["volumes"]


def test_kubernetes_deployment_is_hardened_and_probed() -> None:
    objects = kubernetes()
    deployment = objects["Deployment/quineling"]["spec"]
    pod = deployment["template"]["spec"]
    container = deployment_container()
    assert deployment["replicas"] == 3
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert {"requests", "limits"} <= set(container["resources"])
    assert {"startupProbe", "readinessProbe", "livenessProbe"} <= set(container)
    # Longer than gunicorn's graceful_timeout, so streams end and requests finish before a SIGKILL.
    assert pod["terminationGracePeriodSeconds"] > 30
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]  # writable scratch on a read-only root
    assert volumes[mounts["/etc/quineling/keys"]]["secret"]["secretName"] == "quineling-keys"
    env = container_env(container)
    assert env["QUINELING_AUTH_KEYS_FILE"].startswith("/etc/quineling/keys/")
    service = objects["Service/quineling"]["spec"]
    assert service["selector"] == deployment["selector"]["matchLabels"]
    assert service["ports"][0]["targetPort"] == "http"
    assert objects["PodDisruptionBudget/quineling"]["spec"]["selector"] == deployment["selector"]
    assert objects["HorizontalPodAutoscaler/quineling"]["spec"]["scaleTargetRef"]["name"] == "quineling"
    assert objects["HorizontalPodAutoscaler/quineling"]["spec"]["minReplicas"] == 3
    redis = objects["StatefulSet/redis"]["spec"]
    assert redis["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    args = " ".join(redis["template"]["spec"]["containers"][0]["args"])
    assert "--appendonly yes" in args and "--appendfsync always" in args
    assert f"Service/{urlsplit(env['QUINELING_STORE_URL']).hostname}" in objects


def lock() -> dict[str, tuple[str, list[str]]]:
    """deploy/requirements.lock: each package's normalized name, its pinned version and its hashes."""
    text = (DEPLOY / "requirements.lock").read_text().replace("\\\n", " ")  # continued lines as one
    pinned: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        requirement, *options = line.split()
        name, version = requirement.split("==")
        hashes = [o.removeprefix("--hash=sha256:") for o in options if o.startswith("--hash=sha256:")]
        assert len(hashes) == len(options), f"{requirement}: only --hash options may follow a pin: {options}"
        pinned[re.sub(r"[-_.]+", "-", name).lower()] = (version, hashes)
    return pinned


def test_the_image_is_pinned_and_runs_as_a_user_with_a_home() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    users = re.findall(r"^USER (\S+)$", text, flags=re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r"useradd .*--create-home", text)
    installs = re.findall(r"^RUN pip install (.+)$", text, flags=re.M)
    # Every downloaded file is checked against the lock; the project itself is built with nothing fetched.
    assert installs and all("--no-deps" in line for line in installs)
    assert "--require-hashes" in installs[0] and "-r deploy/requirements.lock" in installs[0]
    assert all("--no-index" in line for line in installs[1:])
    copied = " ".join(re.findall(r"^COPY (.+)$", text, flags=re.M)).split()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for needed in [*project["license-files"], "quineling", "stores", "wsgi.py"]:
        assert needed in copied, f"the build of the project in the image needs {needed}"
    pinned = lock()
    for version, hashes in pinned.values():
        assert "==" not in version and hashes
        assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in hashes), hashes
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    backend = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for requirement in [*declared, *backend]:
        name = re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", requirement)[0]).lower()  # type: ignore[index]
        assert name in pinned, f"{name} (pyproject.toml) is not pinned in deploy/requirements.lock"


def image_references() -> dict[str, str]:
    """Every image a manifest runs or builds on, by where it is named."""
    refs = {
        "Dockerfile FROM": re.findall(r"^FROM (\S+)", (DEPLOY / "Dockerfile").read_text(), flags=re.M)[-1]
    }
    refs.update({f"compose {name}": s["image"] for name, s in compose()["services"].items()})
    for key, obj in kubernetes().items():
        if "template" in obj.get("spec", {}):
            for container in obj["spec"]["template"]["spec"]["containers"]:
                refs[f"kubernetes {key} {container['name']}"] = container["image"]
    return refs


def test_every_image_is_pinned_by_version_and_the_apps_by_the_package_version() -> None:
    refs = image_references()
    assert len(refs) >= 7, refs
    for where, image in refs.items():
        assert not FLOATING.search(image), f"{where}: {image} is a floating tag; pin an exact version"
        assert re.search(r":\d+\.\d+\.\d+(-[\w.-]+)?$", image), f"{where}: {image} is not a full version"
    apps = [image for where, image in refs.items() if "quineling" in image.rsplit("/", 1)[-1].split(":")[0]]
    assert len(apps) == len(app_services()) + 1, apps  # the compose replicas and the Deployment
    assert {image.rsplit(":", 1)[1] for image in apps} == {__version__}
    assert "python:3.11." in refs["Dockerfile FROM"]
    # Every build, push and image line of the deploy files and their docs names this version's image.
    for path in [*DEPLOY.glob("*"), ROOT / "docs" / "deployment.md"]:
        if path.is_file():
            tags = set(re.findall(r"\bquineling:(\d[\w.+-]*)", path.read_text()))
            assert tags <= {__version__}, f"{path.name} names quineling:{tags - {__version__}}"


def test_kubernetes_never_replaces_a_secret_and_says_how_to_make_each_one() -> None:
    """Applying the manifest again (or first) must not overwrite the operator's API keys with a placeholder:
    it holds no Secret, and its instructions create each one it uses with `kubectl create`, which refuses to
    replace one that exists."""
    text = (DEPLOY / "kubernetes.yaml").read_text()
    assert not [key for key in kubernetes() if key.startswith("Secret/")]
    used = set().union(
        *(
            secret_refs(obj["spec"]["template"]["spec"])
            for obj in kubernetes().values()
            if "template" in obj.get("spec", {})
        )
    )
    assert used == {"quineling-keys", "quineling-redis"}
    created = set(re.findall(r"^#\s+kubectl create secret generic ([\w.-]+) ", text, flags=re.M))
    assert created == used
    steps = [
        line.lstrip("# ").strip() for line in text.splitlines() if re.match(r"#\s+(docker|kubectl) ", line)
    ]
    order = [
        next(i for i, s in enumerate(steps) if s.startswith(prefix))
        for prefix in (
            "docker build",
            "docker push",
            "kubectl create secret",
            "kubectl apply -f deploy/kubernetes.yaml",
        )
    ]
    assert order == sorted(order), steps  # the image, then the Secrets, then the manifest
    image = deployment_container()["image"]
    assert f"docker push {image}" in text and f"-t {image} ." in text


def test_redis_requires_a_password_from_a_secret_and_the_store_url_carries_it() -> None:
    # Kubernetes: requirepass from the Secret, the probes authenticate, the app's URL has the same password.
    objects = kubernetes()
    redis = objects["StatefulSet/redis"]["spec"]["template"]["spec"]["containers"][0]
    redis_env = container_env(redis)
    args = [re.sub(r"\$\((\w+)\)", lambda m: redis_env[m[1]], a) for a in redis["args"]]
    assert args[args.index("--requirepass") + 1] == SAMPLE_PASSWORD
    assert redis_env["REDISCLI_AUTH"] == SAMPLE_PASSWORD
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in redis["env"] if "valueFrom" in e}
    app_refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"] for e in deployment_container()["env"] if "valueFrom" in e
    }
    assert (
        refs["REDIS_PASSWORD"] == app_refs["REDIS_PASSWORD"] == {"name": "quineling-redis", "key": "password"}
    )
    for probe in ("readinessProbe", "livenessProbe"):
        assert "PONG" in " ".join(redis[probe]["exec"]["command"])  # NOAUTH is not ready
    url = urlsplit(container_env(deployment_container())["QUINELING_STORE_URL"])
    assert url.password == SAMPLE_PASSWORD and url.username in (None, "")
    # Compose: requirepass from the redis-password secret, read by the healthcheck and every replica's URL.
    service = compose()["services"]["redis"]
    assert service["secrets"] == ["redis-password"]
    start = " ".join(service["entrypoint"])
    assert SECRET_READ.findall(start) == ["redis-password"] and "--requirepass" in start
    assert "docker-entrypoint.sh redis-server" in start  # the image's entrypoint drops to its redis user
    assert SECRET_READ.findall(" ".join(service["healthcheck"]["test"])) == ["redis-password"]
    for name, app in app_services().items():
        url_text, read = compose_store_url(app)
        assert read == ["redis-password"] and urlsplit(url_text).password == SAMPLE_PASSWORD, name
    assert compose()["secrets"]["redis-password"]["file"] == "./redis-password"


def test_the_docs_say_how_to_build_and_push_the_image() -> None:
    text = (ROOT / "docs" / "deployment.md").read_text()
    assert "docker build -f deploy/Dockerfile" in text and "docker push" in text
    assert "deploy/refresh-lock.sh" in text and "--require-hashes" in text


def test_local_topology_runs_what_the_manifests_describe() -> None:
    """deploy/local/topology.py: as many app hosts as compose has replicas, each with two workers and API keys,
    advertising the balancer, on a Redis with AOF."""
    module = load_topology()
    topology = module.Topology(Path("/nonexistent"))
    assert len(topology.apps) == len(app_services())
    conf = topology.nginx_conf()
    for app in topology.apps:
        assert f"server {topology.address(app)}:{APP_PORT}" in conf
    assert "proxy_buffering off;" in conf and "proxy_http_version 1.1;" in conf and "X-Forwarded-For" in conf
    timeout = int(re.search(r"proxy_read_timeout (\d+)s;", conf)[1])  # type: ignore[index]
    assert timeout > Settings().keepalive_seconds


def test_topology_up_prints_the_down_command_of_its_own_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``up --prefix qx-`` says how to stop *that* topology: the printed command, run as printed, tears down the
    namespaces named ``qx-…``, not the default ``qh-`` ones."""
    module = load_topology()
    torn_down: list[str] = []
    monkeypatch.setattr(module.Topology, "up", lambda self: None)  # building it needs root and namespaces
    monkeypatch.setattr(module.Topology, "down", lambda self: torn_down.append(self.prefix))
    assert module.main(["up", "--prefix", "qx-", "--state", str(tmp_path), "--subnet", "10.78.0"]) == 0
    stop = [line for line in capsys.readouterr().out.splitlines() if line.startswith("stop with: ")]
    assert len(stop) == 1, "up prints one stop command"
    argv = shlex.split(stop[0].removeprefix("stop with: "))
    assert argv[:2] == [sys.executable, sys.argv[0]] and argv[2] == "down"
    assert module.main(argv[2:]) == 0
    assert torn_down == ["qx-"]
