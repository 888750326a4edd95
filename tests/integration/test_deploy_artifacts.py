"""Deployment artifacts checked offline: Dockerfile, docker-compose.yml, the Kubernetes base and
the Terraform examples.

No network and no Docker engine needed. A few extra checks run only where a tool is installed
and skip with the reason otherwise: ``docker compose config`` (a Docker engine answers),
``kubectl kustomize`` (kubectl on PATH), ``terraform fmt`` (terraform on PATH) and ``plan.sh``
against a loopback stub server (sh and curl on PATH).
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import threading
import tomllib
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import kubernetes_validate
import pytest
import yaml

from service.settings import KNOWN, PREFIX, load_settings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE = ROOT / "docker-compose.yml"
K8S = ROOT / "deploy" / "k8s"
TERRAFORM = ROOT / "deploy" / "terraform"

# Kubernetes version whose schemas (shipped offline by kubernetes-validate) the manifests must
# satisfy: old enough for the clusters we expect, new enough for every field we use.
K8S_VERSION = "1.30"
APP_UID = 10001
GRACEFUL_TIMEOUT_DEFAULT = 20  # gpuplan serve --graceful-timeout default (service/cli.py)


def gpuplan_names(env: Mapping[str, str]) -> set[str]:
    return {name for name in env if name.startswith(PREFIX)}


def assert_real_settings(env: Mapping[str, str], where: str) -> None:
    """Every GPUPLAN_* name is a setting (gpuplan stops on unknown ones) and the values load."""
    unknown = sorted(n for n in gpuplan_names(env) if n.removeprefix(PREFIX) not in KNOWN)
    assert not unknown, f"{where}: not gpuplan settings: {unknown} (known: {sorted(KNOWN)})"
    load_settings({k: v for k, v in env.items() if k.startswith(PREFIX)})


# --------------------------------------------------------------------------------------------
# docker-compose.yml

_SUBSTITUTION = re.compile(r"\$\{(?P<name>\w+)(?::?-(?P<default>[^}]*))?\}")


def substitute(value: str) -> str:
    """Compose interpolation with defaults only (``${VAR:-default}``), never the caller's env,
    so the checks do not depend on who runs them."""
    return _SUBSTITUTION.sub(lambda m: m.group("default") or "", value).replace("$$", "$")


def service_env(service: Mapping[str, Any]) -> dict[str, str]:
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) for item in raw)
    return {str(k): substitute(str(v)) for k, v in raw.items()}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = compose["services"]
    return found


def test_compose_has_the_four_services(services: dict[str, Any]) -> None:
    assert {"postgres", "redis", "migrate", "api"} <= set(services)
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["redis"]["image"].startswith("redis:7")


def test_compose_healthchecks(services: dict[str, Any]) -> None:
    def test_command(name: str) -> str:
        check = services[name].get("healthcheck")
        assert check and not check.get("disable"), f"{name} has no healthcheck"
        test = check["test"]
        return test if isinstance(test, str) else " ".join(test)

    assert "pg_isready" in test_command("postgres")
    assert "redis-cli ping" in test_command("redis")
    assert "/readyz" in test_command("api")


def test_compose_api_waits_for_migration_and_healthy_dependencies(
    services: dict[str, Any],
) -> None:
    depends = services["api"]["depends_on"]
    assert depends["migrate"]["condition"] == "service_completed_successfully"
    assert depends["postgres"]["condition"] == "service_healthy"
    assert depends["redis"]["condition"] == "service_healthy"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_compose_migrate_is_a_one_shot_of_the_same_image(services: dict[str, Any]) -> None:
    migrate, api = services["migrate"], services["api"]
    assert migrate["command"] == ["migrate"]
    assert migrate["restart"] == "no"  # a string: YAML's bare `no` would be false
    for service in (migrate, api):
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        assert (ROOT / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
    assert migrate.get("image") == api.get("image")


def test_compose_api_publishes_8000(services: dict[str, Any]) -> None:
    ports = [str(p) for p in services["api"]["ports"]]
    assert "8000:8000" in ports


def test_compose_env_wires_postgres_and_redis(services: dict[str, Any]) -> None:
    pg_env = service_env(services["postgres"])
    migrate_env = service_env(services["migrate"])
    role = migrate_env["GPUPLAN_SERVICE_ROLE"]
    owner = (pg_env["POSTGRES_USER"], pg_env["POSTGRES_PASSWORD"])
    # The migration runs as the owner; the API as the role it grants, created by the init script.
    init_sql = (ROOT / "deploy" / "postgres" / "service-role.sql").read_text()
    assert f"CREATE ROLE {role} LOGIN PASSWORD '{role}';" in init_sql
    assert any(
        v.startswith("./deploy/postgres/service-role.sql:/docker-entrypoint-initdb.d/")
        for v in services["postgres"]["volumes"]
    )
    for name, (user, password) in {"migrate": owner, "api": (role, role)}.items():
        url = urlsplit(service_env(services[name])["GPUPLAN_DATABASE_URL"])
        assert url.scheme == "postgresql+asyncpg", name
        assert url.hostname == "postgres" and url.port == 5432, name
        assert (url.username, url.password) == (user, password), name
        assert url.path == f"/{pg_env['POSTGRES_DB']}", name
    assert role != owner[0]
    redis = urlsplit(service_env(services["api"])["GPUPLAN_REDIS_URL"])
    assert redis.scheme == "redis" and redis.hostname == "redis" and redis.port == 6379


def test_compose_has_no_default_admin_key(services: dict[str, Any]) -> None:
    """Unset in the shell, the API starts with writes disabled: a key written in the file would
    be readable by anyone who reads the repository."""
    raw = services["api"]["environment"]["GPUPLAN_ADMIN_KEYS"]
    assert raw == "${GPUPLAN_ADMIN_KEYS:-}", "the key must come from the shell, with no default"
    assert not load_settings({"GPUPLAN_ADMIN_KEYS": substitute(raw)}).admin_keys
    for name, service in services.items():
        for variable, value in service_env(service).items():
            if variable == "GPUPLAN_ADMIN_KEYS":
                assert not load_settings({variable: value}).admin_keys, name
    assert "change-me" not in COMPOSE.read_text()


@pytest.mark.parametrize("name", ["api", "migrate"])
def test_compose_gpuplan_variables_are_real_settings(services: dict[str, Any], name: str) -> None:
    assert_real_settings(service_env(services[name]), f"docker-compose.yml service {name}")


def _docker_engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        probe = subprocess.run(
            ["docker", "info"], capture_output=True, timeout=15, check=False, cwd=ROOT
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def test_compose_config_is_valid_for_docker_compose() -> None:
    if not _docker_engine_answers():
        pytest.skip("no Docker engine answers `docker info`: `docker compose config -q` not run")
    plugin = subprocess.run(
        ["docker", "compose", "version"], capture_output=True, timeout=15, check=False
    )
    if plugin.returncode != 0:
        pytest.skip("the Docker Compose plugin is not installed: `docker compose config` not run")
    result = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------------------------
# deploy/Dockerfile


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # comment lines inside a continuation are ignored by Docker too
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = pending + stripped
        pending = ""
        keyword, _, args = full.partition(" ")
        out.append((keyword.upper(), args.strip()))
    return out


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for instruction in dockerfile_instructions(DOCKERFILE.read_text()):
        if instruction[0] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def dockerfile_args() -> dict[str, str]:
    """Global ARG defaults (before the first FROM)."""
    args: dict[str, str] = {}
    for keyword, rest in dockerfile_instructions(DOCKERFILE.read_text()):
        if keyword == "FROM":
            break
        if keyword == "ARG" and "=" in rest:
            name, value = rest.split("=", 1)
            args[name] = value
    return args


def env_pairs(args: str) -> dict[str, str]:
    """`ENV A=1 B="2"` (the key=value form)."""
    return dict(token.split("=", 1) for token in shlex.split(args))


def final_stage() -> list[tuple[str, str]]:
    return dockerfile_stages()[-1]


def values(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    return [args for kw, args in stage if kw == keyword]


def test_dockerfile_is_multi_stage_on_python_311_slim() -> None:
    stages = dockerfile_stages()
    assert len(stages) >= 2
    base = values(final_stage(), "FROM")[0].split()[0]
    base = re.sub(r"\$\{?(\w+)\}?", lambda m: dockerfile_args().get(m.group(1), m.group(0)), base)
    assert base == "python:3.11-slim"


def test_dockerfile_builder_installs_with_the_constraints() -> None:
    builder = dockerfile_stages()[0]
    runs = " ".join(values(builder, "RUN"))
    assert re.search(r"pip install (\S+ )*-c constraints\.txt \.", runs), runs


def test_dockerfile_final_stage_runs_unprivileged_without_build_tools() -> None:
    stage = final_stage()
    users = values(stage, "USER")
    assert users, "the final stage must switch to a non-root USER"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    assert user == str(APP_UID), "deploy/k8s runAsUser relies on this UID"
    runs = " ".join(values(stage, "RUN"))
    for tool in ("build-essential", "gcc", "pip install", "apt-get install"):
        assert tool not in runs, f"final stage installs {tool!r}"
    assert any(args.startswith("--from=") for args in values(stage, "COPY"))


def test_dockerfile_final_stage_interface() -> None:
    stage = final_stage()
    assert "8000" in " ".join(values(stage, "EXPOSE")).split()
    assert json.loads(values(stage, "ENTRYPOINT")[-1]) == ["gpuplan"]
    assert json.loads(values(stage, "CMD")[-1]) == [
        "serve",
        "--host",
        "0.0.0.0",  # noqa: S104 - a container must listen on all interfaces
        "--port",
        "8000",
    ]
    healthcheck = values(stage, "HEALTHCHECK")[-1]
    assert "/healthz" in healthcheck and "urllib" in healthcheck and "curl" not in healthcheck


def test_dockerfile_environment() -> None:
    env: dict[str, str] = {}
    for args in values(final_stage(), "ENV"):
        env.update(env_pairs(args))
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["GPUPLAN_DATA_DIR"] == "/data"
    assert_real_settings(env, "deploy/Dockerfile ENV")
    assert any("/data" in v for v in values(final_stage(), "VOLUME"))


def dockerignore_patterns() -> list[str]:
    lines = (line.strip() for line in DOCKERIGNORE.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def dockerignored(path: str) -> bool:
    """Docker's rule, closely enough for these paths: a path is excluded when it or a parent
    directory matches; `**/` matches any number of leading directories; the last matching
    pattern wins and `!` re-includes."""
    parts = path.strip("/").split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for raw in dockerignore_patterns():
        negate = raw.startswith("!")
        pattern = raw.removeprefix("!").strip("/")
        for candidate in candidates:
            if pattern.startswith("**/"):
                pieces = candidate.split("/")
                tails = ["/".join(pieces[i:]) for i in range(len(pieces))]
                hit = any(fnmatch.fnmatchcase(tail, pattern[3:]) for tail in tails)
            else:
                hit = fnmatch.fnmatchcase(candidate, pattern)
            if hit:
                excluded = not negate
    return excluded


def copied_sources() -> list[str]:
    """Build-context paths COPY/ADD read (not `--from=` another stage)."""
    sources: list[str] = []
    for stage in dockerfile_stages():
        for keyword, args in stage:
            if keyword not in {"COPY", "ADD"}:
                continue
            tokens = [t for t in shlex.split(args) if not t.startswith("--")]
            if any(t.startswith("--from") for t in shlex.split(args)):
                continue
            sources.extend(tokens[:-1])
    return sources


def test_dockerfile_copies_only_existing_files_the_context_keeps() -> None:
    sources = copied_sources()
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        assert not dockerignored(source), f"COPY {source}: excluded by .dockerignore"


def test_dockerfile_copies_what_the_package_build_reads() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    readme = pyproject["project"]["readme"]
    needed = {"pyproject.toml", "constraints.txt", readme, "service"}
    assert needed <= set(copied_sources())
    for packaged in ("service/data/gpus.csv", "service/store/migrations/env.py"):
        assert not dockerignored(packaged), packaged


def test_dockerignore_keeps_local_state_out() -> None:
    for path in (".venv", ".git", "bench/out", ".pytest_cache", "tests", "service/__pycache__"):
        assert dockerignored(path), f"{path} should not be sent to the Docker build"


# --------------------------------------------------------------------------------------------
# deploy/k8s (kustomize base)


@pytest.fixture(scope="module")
def kustomization() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return data


def load_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


@pytest.fixture(scope="module")
def manifests(kustomization: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The base's resources by kind (one object of each kind)."""
    by_kind: dict[str, dict[str, Any]] = {}
    for resource in kustomization["resources"]:
        for doc in load_documents(K8S / resource):
            assert doc["kind"] not in by_kind, f"two {doc['kind']} objects: extend this helper"
            by_kind[doc["kind"]] = doc
    return by_kind


@pytest.fixture(scope="module")
def secret_example() -> dict[str, Any]:
    (doc,) = load_documents(K8S / "secret.example.yaml")
    return doc


def kustomization_resources() -> list[str]:
    data = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return list(data["resources"])


@pytest.mark.parametrize("resource", [*kustomization_resources(), "secret.example.yaml"])
def test_manifest_validates_against_kubernetes_schema(resource: str) -> None:
    docs = load_documents(K8S / resource)
    assert docs
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            pytest.fail(f"{resource}: {doc['kind']} {path}: {exc.message}")


def test_kustomization_lists_the_base_but_not_the_secret_example(
    kustomization: dict[str, Any], manifests: dict[str, dict[str, Any]]
) -> None:
    assert set(manifests) == {
        "ConfigMap",
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "Job",
    }
    assert "secret.example.yaml" not in kustomization["resources"]
    assert not any("secret" in str(r).lower() for r in kustomization["resources"])


def test_kustomize_images_set_both_containers(
    kustomization: dict[str, Any], manifests: dict[str, dict[str, Any]]
) -> None:
    (entry,) = kustomization["images"]
    assert f"{entry['name']}:{entry['newTag']}" == "ghcr.io/example/gpuplan:0.1.0"
    for kind in ("Deployment", "Job"):
        for container in pod_spec(manifests[kind])["containers"]:
            assert container["image"].rsplit(":", 1)[0] == entry["name"], kind


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def pod_labels(obj: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = obj["spec"]["template"]["metadata"]["labels"]
    return labels


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def only_container(obj: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod_spec(obj)["containers"]
    assert len(containers) == 1, "one container per pod (extend the checks for sidecars)"
    return containers[0]


def test_deployment_probes(manifests: dict[str, dict[str, Any]]) -> None:
    container = only_container(manifests["Deployment"])
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    ports = {p.get("name"): p["containerPort"] for p in container["ports"]}
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        port = container[probe]["httpGet"]["port"]
        assert ports.get(port, port) == 8000, probe


def test_deployment_shape(manifests: dict[str, dict[str, Any]]) -> None:
    deployment = manifests["Deployment"]
    assert deployment["spec"]["replicas"] == 2
    assert selects(deployment["spec"]["selector"]["matchLabels"], pod_labels(deployment))
    container = only_container(deployment)
    args = container["args"]
    assert args[0] == "serve"
    assert args[args.index("--port") + 1] == "8000"
    assert args[args.index("--host") + 1] == "0.0.0.0"  # noqa: S104 - pods listen on all
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][kind]), kind


def test_deployment_outlives_graceful_shutdown(manifests: dict[str, dict[str, Any]]) -> None:
    deployment = manifests["Deployment"]
    args = only_container(deployment)["args"]
    graceful = (
        int(args[args.index("--graceful-timeout") + 1])
        if "--graceful-timeout" in args
        else GRACEFUL_TIMEOUT_DEFAULT
    )
    assert pod_spec(deployment)["terminationGracePeriodSeconds"] > graceful


def test_deployment_prometheus_annotations(manifests: dict[str, dict[str, Any]]) -> None:
    deployment = manifests["Deployment"]
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    ports = [p["containerPort"] for p in only_container(deployment)["ports"]]
    assert int(annotations["prometheus.io/port"]) in ports


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_are_locked_down(manifests: dict[str, dict[str, Any]], kind: str) -> None:
    spec = pod_spec(manifests[kind])
    container = only_container(manifests[kind])
    pod_sc, sc = spec["securityContext"], container["securityContext"]
    assert pod_sc["runAsNonRoot"] is True and pod_sc["runAsUser"] == APP_UID
    assert pod_sc["seccompProfile"]["type"] == "RuntimeDefault"
    assert sc["runAsNonRoot"] is True and sc.get("runAsUser", APP_UID) == APP_UID
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    # A read-only root needs writable emptyDirs where gpuplan and Python write.
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    for path in ("/tmp", "/data"):  # noqa: S108 - the container's own /tmp, an emptyDir
        assert path in mounts, f"{kind}: {path} is not writable"
        assert "emptyDir" in volumes[mounts[path]], f"{kind}: {path} is not an emptyDir"
    assert {"cpu", "memory"} <= set(container["resources"]["limits"])
    # Service links would inject GPUPLAN_SERVICE_HOST, GPUPLAN_PORT ... (from the Service
    # named gpuplan), which gpuplan rejects as unknown settings at startup.
    assert spec["enableServiceLinks"] is False
    assert spec["automountServiceAccountToken"] is False


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_read_the_configmap_and_secret(
    manifests: dict[str, dict[str, Any]], secret_example: dict[str, Any], kind: str
) -> None:
    container = only_container(manifests[kind])
    sources = container["envFrom"]
    config_maps = [s["configMapRef"]["name"] for s in sources if "configMapRef" in s]
    secrets = [s["secretRef"]["name"] for s in sources if "secretRef" in s]
    assert config_maps == [manifests["ConfigMap"]["metadata"]["name"]]
    assert secrets == [secret_example["metadata"]["name"]]
    env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
    assert env.get("GPUPLAN_DATA_DIR", "/data") == "/data"


def test_k8s_gpuplan_variables_are_real_settings(
    manifests: dict[str, dict[str, Any]], secret_example: dict[str, Any]
) -> None:
    config = {str(k): str(v) for k, v in manifests["ConfigMap"]["data"].items()}
    secret = {str(k): str(v) for k, v in secret_example["stringData"].items()}
    assert {"GPUPLAN_LOG_FORMAT", "GPUPLAN_SOLVER_WORKERS", "GPUPLAN_CORS_ORIGINS"} <= set(config)
    assert {"GPUPLAN_DATABASE_URL", "GPUPLAN_REDIS_URL", "GPUPLAN_ADMIN_KEYS"} == set(secret)
    assert not set(config) & set(secret), "a name in both would be ambiguous"
    for kind in ("Deployment", "Job"):
        env = {
            e["name"]: e["value"]
            for e in only_container(manifests[kind]).get("env", [])
            if "value" in e
        }
        assert_real_settings({**config, **secret, **env}, f"deploy/k8s {kind}")


def test_secret_example_is_clearly_an_example(secret_example: dict[str, Any]) -> None:
    assert secret_example["kind"] == "Secret"
    data = secret_example["stringData"]
    assert "EXAMPLE" in data["GPUPLAN_ADMIN_KEYS"]
    assert "EXAMPLE" in (urlsplit(data["GPUPLAN_DATABASE_URL"]).password or "")
    text = (K8S / "secret.example.yaml").read_text()
    assert "kubectl create secret generic" in text


def test_migration_runs_as_the_owner_and_the_api_as_the_service_role(
    manifests: dict[str, dict[str, Any]],
) -> None:
    job_env = {e["name"]: e for e in only_container(manifests["Job"])["env"]}
    owner_url = job_env["GPUPLAN_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert owner_url == {"name": "gpuplan-migrate", "key": "GPUPLAN_DATABASE_URL"}
    assert job_env["GPUPLAN_SERVICE_ROLE"]["value"] == "gpuplan_app"
    api_env = {e["name"] for e in only_container(manifests["Deployment"]).get("env", [])}
    assert "GPUPLAN_DATABASE_URL" not in api_env  # the API's URL comes from Secret gpuplan


def test_migration_job(manifests: dict[str, dict[str, Any]]) -> None:
    job, deployment = manifests["Job"], manifests["Deployment"]
    container = only_container(job)
    command = [*container.get("command", []), *container.get("args", [])]
    assert command in (["migrate"], ["gpuplan", "migrate"])
    assert isinstance(job["spec"]["backoffLimit"], int)
    assert isinstance(job["spec"]["ttlSecondsAfterFinished"], int)
    assert pod_spec(job)["restartPolicy"] in {"Never", "OnFailure"}
    assert container["image"] == only_container(deployment)["image"]
    assert container["securityContext"] == only_container(deployment)["securityContext"]
    assert pod_spec(job)["securityContext"] == pod_spec(deployment)["securityContext"]


def test_hpa_targets_the_deployment(manifests: dict[str, dict[str, Any]]) -> None:
    hpa, deployment = manifests["HorizontalPodAutoscaler"], manifests["Deployment"]
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"]) == ("apps/v1", "Deployment")
    assert target["name"] == deployment["metadata"]["name"]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 10)
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"] == {"type": "Utilization", "averageUtilization": 70}


def test_pdb_and_service_select_the_api_pods_only(manifests: dict[str, dict[str, Any]]) -> None:
    api_labels = pod_labels(manifests["Deployment"])
    migrate_labels = pod_labels(manifests["Job"])
    pdb = manifests["PodDisruptionBudget"]
    assert pdb["spec"]["minAvailable"] == 1
    service = manifests["Service"]
    for selector in (pdb["spec"]["selector"]["matchLabels"], service["spec"]["selector"]):
        assert selects(selector, api_labels)
        assert not selects(selector, migrate_labels), "would select the migration pod"


def test_service_routes_port_80_to_the_api(manifests: dict[str, dict[str, Any]]) -> None:
    service = manifests["Service"]
    assert service["spec"]["type"] == "ClusterIP"
    (port,) = service["spec"]["ports"]
    assert port["port"] == 80
    ports = {
        p.get("name"): p["containerPort"] for p in only_container(manifests["Deployment"])["ports"]
    }
    assert ports.get(port["targetPort"], port["targetPort"]) == 8000


def test_kubectl_kustomize_renders_the_base() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH: the kustomize build itself is not checked")
    result = subprocess.run(
        [kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    docs = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert len(docs) == len(kustomization_resources())
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        if doc["kind"] in {"Deployment", "Job"}:
            for container in pod_spec(doc)["containers"]:
                assert container["image"] == "ghcr.io/example/gpuplan:0.1.0"


# --------------------------------------------------------------------------------------------
# deploy/terraform (text checks: no terraform binary or providers needed)

TF_FILES = ("main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md")


def tf_text(variant: str) -> str:
    return "\n".join(
        (TERRAFORM / variant / name).read_text() for name in TF_FILES if name.endswith(".tf")
    )


def tf_blocks(text: str, kind: str) -> set[str]:
    return set(re.findall(rf'^\s*{kind}\s+"([^"]+)"', text, flags=re.MULTILINE))


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("variant", ["http", "external"])
def test_terraform_module_files(variant: str) -> None:
    for name in TF_FILES:
        assert (TERRAFORM / variant / name).is_file(), f"{variant}/{name}"
    text = tf_text(variant)
    # Cheap syntax sanity without a parser: braces and brackets balance.
    for open_, close in ("{}", "[]", "()"):
        assert text.count(open_) == text.count(close), f"{variant}: unbalanced {open_}{close}"
    outputs = tf_blocks(text, "output")
    assert {"plan_id", "status", "usd_per_hour", "usd_per_month", "total_cards", "fleet"} <= outputs
    assert "gpuplan_url" in tf_blocks(text, "variable")
    assert "fleet" in text
    for key in ("gpu", "provider", "region", "instance_type", "tensor_parallel", "replicas"):
        assert re.search(rf"\b{key}\s*=", text), f"{variant}: fleet lines lack {key}"
    assert re.search(r"\bcards\s*=", text), f"{variant}: fleet lines lack cards"


def test_terraform_http_variant() -> None:
    text = tf_text("http")
    flat = squash(text)
    assert 'source = "hashicorp/http"' in flat
    assert 'data "http" "plan"' in text
    assert 'method = "POST"' in flat
    assert "/v1/plans" in text
    assert "request_body = jsonencode(" in flat
    assert re.search(r'"?Content-Type"?\s*=\s*"application/json"', text)
    assert re.search(r'"?Accept"?\s*=\s*"application/json"', text)
    assert "postcondition {" in flat
    assert "condition = contains([200], self.status_code)" in flat
    assert "jsondecode(data.http.plan.response_body)" in flat
    assert '"infeasible"' in text
    variables = tf_blocks(text, "variable")
    assert {"model", "precision", "workload", "slo", "budget", "constraints"} <= variables
    for attribute in ("qps", "prompt_tokens", "output_tokens", "ttft_ms", "tpot_ms", "percentile"):
        assert re.search(rf"\b{attribute}\s*=", text), attribute
    for attribute in ("usd_per_hour", "pricing", "gpus", "allow_mix", "headroom", "min_replicas"):
        assert re.search(rf"\b{attribute}\s*=", text), attribute
    # providers, regions, card caps, a request mix and the mixing policy reach the request
    for attribute in (
        "providers",
        "regions",
        "max_cards",
        "mix",
        "share",
        "mixing",
        "max_gpu_types",
        "min_mix_savings_percent",
        "allow_mixed_vendors",
        "allow_pcie_tensor_parallel",
        "routing",
        "spread",
        "min_providers",
        "min_regions",
    ):
        assert re.search(rf"\b{attribute}\s*=", text), attribute
    assert "routing" in variables
    assert {"mixing", "redundancy", "routing"} <= tf_blocks(text, "output")


def test_terraform_external_variant() -> None:
    text = tf_text("external")
    flat = squash(text)
    assert 'source = "hashicorp/external"' in flat
    assert 'data "external" "plan"' in text
    assert 'program = ["sh", "${path.module}/plan.sh"]' in flat
    assert '"infeasible"' in text and "postcondition {" in flat
    script = (TERRAFORM / "external" / "plan.sh").read_text()
    assert script.startswith("#!/bin/sh")
    assert "/v1/plan?" in script and '"format"] = "flat"' in script
    assert "curl" in script and "python3 -c" in script
    for key in ("fleet_lines", "gpu_", "cards_", "replicas_", "tensor_parallel_", "provider_"):
        assert key in text, key


def test_terraform_fmt() -> None:
    terraform = shutil.which("terraform")
    if terraform is None:
        pytest.skip("terraform is not on PATH: `terraform fmt -check` not run")
    result = subprocess.run(
        [terraform, "fmt", "-check", "-recursive", "-diff", str(TERRAFORM)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


class _FlatPlanStub(BaseHTTPRequestHandler):
    """GET /v1/plan?...&format=flat: echoes the query in a flat answer; model=unknown -> 404."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path != "/v1/plan" or query.get("model") == "unknown":
            status, body = 404, {"title": "Unknown model", "status": 404, "field": "model"}
        else:
            status, body = 200, {"plan_id": "pl_1", "status": "optimal", "query": url.query}
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flat_stub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FlatPlanStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def run_plan_sh(query: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(TERRAFORM / "external" / "plan.sh")],
        input=json.dumps(query),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_plan_sh_calls_the_flat_endpoint(flat_stub: str) -> None:
    missing = [tool for tool in ("sh", "curl", "python3") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not on PATH: plan.sh not run")
    ok = run_plan_sh(
        {
            "gpuplan_url": flat_stub,
            "timeout_s": "10",
            "model": "llama-3.1-70b",
            "qps": "40",
            "gpus": "h100,l40s",
            "pricing": "",
        }
    )
    assert ok.returncode == 0, ok.stderr
    answer = json.loads(ok.stdout)
    sent = parse_qs(answer["query"])
    assert sent["format"] == ["flat"]
    assert sent["gpus"] == ["h100,l40s"] and sent["qps"] == ["40"]
    assert "pricing" not in sent and "gpuplan_url" not in sent and "timeout_s" not in sent
    bad = run_plan_sh({"gpuplan_url": flat_stub, "timeout_s": "10", "model": "unknown"})
    assert bad.returncode != 0
    assert "HTTP 404" in bad.stderr and "Unknown model" in bad.stderr
