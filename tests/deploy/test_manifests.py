"""deploy/ says only true things: every manifest parses, names only settings the configuration knows (with
values it accepts), probes only paths the app serves, and matches the topology deploy/local/ runs and
tests/deploy/test_topology.py proves — three app replicas behind nginx, each advertising the balancer's
origin, authentication on, Redis with AOF on a volume."""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from quineling import create_app
from quineling.config import ENV_PREFIX, Settings, check_exposure, load_settings
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


def app_services() -> dict[str, dict[str, Any]]:
    return {
        name: s
        for name, s in compose()["services"].items()
        if "QUINELING_STORE_URL" in s.get("environment", {})
    }


def deployment_container() -> dict[str, Any]:
    container: dict[str, Any] = kubernetes()["Deployment/quineling"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    return container


def manifest_envs() -> dict[str, dict[str, str]]:
    """Every app's environment, as the process sees it: the image's ENV, then the manifest's."""
    envs = {f"compose {name}": {**dockerfile_env(), **s["environment"]} for name, s in app_services().items()}
    envs["kubernetes"] = {
        **dockerfile_env(),
        **{e["name"]: e["value"] for e in deployment_container()["env"]},
    }
    envs["Dockerfile"] = dockerfile_env()
    return envs


def test_every_manifest_parses() -> None:
    assert compose()["services"]
    assert len(kubernetes()) >= 8
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
        assert env["QUINELING_STORE_URL"].startswith("redis://redis:"), name
        assert (
            service["secrets"] == ["quineling-keys"]
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
    keys = volumes[mounts["/etc/quineling/keys"]]["secret"]["secretName"]
    assert f"Secret/{keys}" in objects
    env = {e["name"]: e["value"] for e in container["env"]}
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
    host = env["QUINELING_STORE_URL"].split("//")[1].split(":")[0]
    assert f"Service/{host}" in objects


def test_the_image_is_pinned_and_runs_as_a_user_with_a_home() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    users = re.findall(r"^USER (\S+)$", text, flags=re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r"useradd .*--create-home", text)
    assert "-r deploy/requirements.lock" in text and "--no-deps" in text
    lock = {
        line.split("==")[0].lower().replace("_", "-"): line.split("==")[1]
        for line in (DEPLOY / "requirements.lock").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert all("==" not in v for v in lock.values())
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in declared:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)[0].lower().replace("_", "-")  # type: ignore[index]
        assert name in lock, f"{name} (pyproject.toml) is not pinned in deploy/requirements.lock"


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
