"""deploy/: both overlays render with `kubectl kustomize`, validate, and keep their promises.

Built-in kinds are validated against the Kubernetes 1.32 schemas (strict); CRD kinds
(ServiceMonitor, PrometheusRule) are checked structurally here. The promises: the exporter runs
with hostPID, no privileged container anywhere, read-only root filesystems, the kubelet socket
mounted read-only, NODE_NAME from the downward API; the reclaimer is dry-run unless enforcing,
with exactly the RBAC grants listed below (no wildcards); generated manifests match their sources.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from manifests import (
    DEPLOY,
    OVERLAYS,
    REPO,
    Obj,
    containers,
    grants,
    name_of,
    render,
    schema_errors,
    walk,
)
from promserver import PROMTOOL, require_prometheus


@cache
def rendered(overlay: str) -> tuple[Obj, ...]:
    return tuple(render(DEPLOY / "overlays" / overlay))


def one(overlay: str, kind: str, name: str) -> Obj:
    found = [o for o in rendered(overlay) if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} objects"
    return found[0]


def all_objects() -> list[Obj]:
    return [o for overlay in OVERLAYS for o in rendered(overlay)]


def load_render_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deploy_render", DEPLOY / "render.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_builtin_objects_validate_against_kubernetes_schemas(overlay: str) -> None:
    errors = {name_of(o): schema_errors(o) for o in rendered(overlay)}
    assert not {k: v for k, v in errors.items() if v}, errors
    crds = sorted({o["kind"] for o in rendered(overlay) if schema_errors(o) is None})
    assert crds == ["PrometheusRule", "ServiceMonitor"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_service_monitors_select_a_service_port(overlay: str) -> None:
    services = [o for o in rendered(overlay) if o["kind"] == "Service"]
    monitors = [o for o in rendered(overlay) if o["kind"] == "ServiceMonitor"]
    assert {m["metadata"]["name"] for m in monitors} == {"gpu-exporter", "gpu-reclaimer"}
    for m in monitors:
        assert m["apiVersion"] == "monitoring.coreos.com/v1"
        want = m["spec"]["selector"]["matchLabels"]
        ns = m["spec"]["namespaceSelector"]["matchNames"]
        matched = [
            s
            for s in services
            if s["metadata"]["namespace"] in ns
            and want.items() <= s["metadata"].get("labels", {}).items()
        ]
        assert len(matched) == 1, name_of(m)
        ports = {p["name"] for p in matched[0]["spec"]["ports"]}
        assert {e["port"] for e in m["spec"]["endpoints"]} <= ports


def test_exporter_daemonset() -> None:
    ds = one("dry-run", "DaemonSet", "gpu-exporter")
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostPID"] is True
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    (c,) = pod["containers"]
    env = {e["name"]: e for e in c["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    sock = mounts["pod-resources"]
    assert sock["readOnly"] is True
    assert volumes["pod-resources"]["hostPath"]["path"] == "/var/lib/kubelet/pod-resources"
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["resources"]["requests"]["memory"] == "64Mi"
    assert c["resources"]["limits"]["memory"] == "128Mi"
    assert "--backend=nvml" in c["args"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_privileged_container_and_read_only_root(overlay: str) -> None:
    found = list(c for o in rendered(overlay) for c in containers(o))
    assert len(found) == 2
    for where, c in found:
        sc = c.get("securityContext", {})
        assert sc.get("privileged", False) is False, where
        assert sc.get("readOnlyRootFilesystem") is True, where
    assert not [p for o in rendered(overlay) for p, k, v in walk(o) if k == "privileged" and v]


@pytest.mark.parametrize(("overlay", "applies"), [("dry-run", False), ("enforce", True)])
def test_reclaimer_is_dry_run_unless_enforcing(overlay: str, applies: bool) -> None:
    dep = one(overlay, "Deployment", "gpu-reclaimer")
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    (c,) = pod["containers"]
    assert c["command"] == ["gpu-reclaimer"]
    assert c["args"][0] == "run"
    assert "--leader-elect" in c["args"]
    assert "--policy-file=/etc/gpu-reclaim/policy.yaml" in c["args"]
    assert ("--apply" in c["args"]) is applies
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["policy"]["configMap"]["name"] == "gpu-sharing-config"
    one(overlay, "ConfigMap", "gpu-sharing-config")
    # the table in docs/reclaimer.md#memory-and-scale: 10,000 GPU pods peak at 441 MiB
    assert c["resources"]["requests"]["memory"] == "512Mi"
    assert c["resources"]["limits"]["memory"] == "768Mi"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_reclaimer_mounts_the_optional_webhook_secret_read_only(overlay: str) -> None:
    """The warning webhooks' URLs come from a Secret volume the kubelet mounts (so no RBAC on
    Secrets, which test_rbac_grants_exactly_what_is_needed holds): optional, so a cluster
    without webhooks starts unchanged, and readable by the reclaimer's uid through its group."""
    pod = one(overlay, "Deployment", "gpu-reclaimer")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert "--webhook-secret-dir=/etc/gpu-reclaim-webhooks" in c["args"]
    mounts = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/gpu-reclaim-webhooks"]
    assert mounts == [
        {"name": "webhooks", "mountPath": "/etc/gpu-reclaim-webhooks", "readOnly": True}
    ]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "webhooks"]
    assert volume["secret"]["secretName"] == "gpu-reclaim-webhooks"
    assert volume["secret"]["optional"] is True
    assert volume["secret"]["defaultMode"] == 0o440
    assert pod["securityContext"]["fsGroup"] == c.get("securityContext", {}).get(
        "runAsGroup", pod["securityContext"]["runAsGroup"]
    )


READ = ("get", "list", "watch")
RECLAIMER_DRY_RUN = {
    *(("cluster", "", "pods", v) for v in (*READ, "patch")),
    ("cluster", "", "pods/eviction", "create"),
    *(("cluster", "", "nodes", v) for v in READ),
    ("cluster", "", "events", "create"),
    *(("cluster", "policy", "poddisruptionbudgets", v) for v in READ),
    *(("cluster", "scheduling.k8s.io", "priorityclasses", v) for v in READ),
    *(("cluster", "scheduling.volcano.sh", r, v) for r in ("queues", "podgroups") for v in READ),
    *(
        ("cluster", "resource.k8s.io", r, "list")
        for r in ("resourceclaims", "resourceclaimtemplates", "resourceslices", "deviceclasses")
    ),
    *(("cluster", "batch.volcano.sh", "jobs", v) for v in (*READ, "patch")),
    *(("cluster", "bus.volcano.sh", "commands", v) for v in ("get", "list", "create")),
    *(
        ("cluster", "kubeflow.org", r, v)
        for r in ("pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", "paddlejobs", "jaxjobs")
        for v in (*READ, "patch")
    ),
    *(("cluster", "kubeflow.org", "notebooks", v) for v in (*READ, "patch")),
    *(("cluster", "batch", "jobs", v) for v in (*READ, "patch")),
    *(("cluster", "jobset.x-k8s.io", "jobsets", v) for v in (*READ, "patch")),
    *(("cluster", "ray.io", "rayjobs", v) for v in (*READ, "patch")),
    *(("cluster", "trainer.kubeflow.org", "trainjobs", v) for v in (*READ, "patch")),
    *(("cluster", "kueue.x-k8s.io", "workloads", v) for v in (*READ, "patch")),
    *(("cluster", "kueue.x-k8s.io", r, v) for r in ("localqueues", "clusterqueues") for v in READ),
    *(("cluster", "apps", "statefulsets", v) for v in READ),
    *(("cluster", "ray.io", "rayclusters", v) for v in READ),
    *(("cluster", "nvidia.com", "clusterpolicies", v) for v in ("get", "list")),
    *(("gpu-operator", "", "configmaps", v) for v in READ),
    *(("gpu-reclaim", "coordination.k8s.io", "leases", v) for v in ("get", "create", "update")),
}
# the node's pods, and its DRA devices' ResourceSlices: listed, never watched or fetched one by one
EXPORTER = {
    *(("cluster", "", "pods", v) for v in READ),
    ("cluster", "resource.k8s.io", "resourceslices", "list"),
}
RESHAPE_WRITES = {
    ("gpu-operator", "", "configmaps", "patch"),
    ("cluster", "", "nodes", "patch"),
}
EXPECTED_GRANTS = {
    ("dry-run", "gpu-reclaimer"): RECLAIMER_DRY_RUN,
    ("enforce", "gpu-reclaimer"): RECLAIMER_DRY_RUN | RESHAPE_WRITES,
    ("dry-run", "gpu-exporter"): EXPORTER,
    ("enforce", "gpu-exporter"): EXPORTER,
}


@pytest.mark.parametrize(
    ("overlay", "account"), [pytest.param(o, a, id=f"{o}/{a}") for o, a in sorted(EXPECTED_GRANTS)]
)
def test_rbac_grants_exactly_what_is_needed(overlay: str, account: str) -> None:
    got = grants(list(rendered(overlay)), account, "gpu-reclaim")
    want = EXPECTED_GRANTS[overlay, account]
    assert got == want, f"extra: {sorted(got - want)} missing: {sorted(want - got)}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_rbac_has_no_wildcards(overlay: str) -> None:
    for o in rendered(overlay):
        for rule in o.get("rules", []) if o["kind"] in ("Role", "ClusterRole") else []:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule.get(field, []), f"{name_of(o)} {field}"
            assert "nonResourceURLs" not in rule


def test_reshape_writes_are_limited_to_the_device_plugin_configmap() -> None:
    role = one("enforce", "Role", "gpu-reclaimer-device-plugin-write")
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["time-slicing-config"],
            "verbs": ["patch"],
        }
    ]


def test_no_fractional_gpu_and_no_overcommit_ratio_anywhere() -> None:
    objs = all_objects()
    for o in objs:
        for path, key, value in walk(o):
            assert key != "overcommitRatio", f"{name_of(o)}{path}"
            if key == "nvidia.com/gpu":
                assert str(value).isdigit(), f"{name_of(o)}{path} = {value!r}"


def test_generated_manifests_match_their_sources() -> None:
    for path, text in load_render_script().render().items():
        assert path.read_text("utf-8") == text, f"{path.name} is stale: run deploy/render.py"


def test_prometheus_rule_is_the_rules_file(tmp_path: Path) -> None:
    rule = one("dry-run", "PrometheusRule", "gpu-reclaim")
    source = yaml.safe_load((REPO / "rules" / "gpu-reclaim.rules.yml").read_text("utf-8"))
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["spec"]["groups"] == source["groups"]
    require_prometheus()
    extracted = tmp_path / "extracted.rules.yml"
    extracted.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}), encoding="utf-8")
    check = subprocess.run(
        [PROMTOOL, "check", "rules", str(extracted)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_dashboards_ship_as_labelled_configmaps() -> None:
    maps = [
        o
        for o in rendered("dry-run")
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("grafana-dashboard-")
    ]
    boards = sorted((REPO / "grafana").glob("*.json"))
    assert len(maps) == len(boards)
    shipped = {k: v for m in maps for k, v in m["data"].items()}
    for m in maps:
        assert m["metadata"]["labels"]["grafana_dashboard"] == "1"
    for path in boards:
        assert json.loads(shipped[path.name]) == json.loads(path.read_text("utf-8"))
