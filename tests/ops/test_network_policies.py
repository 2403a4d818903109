"""deploy/base/networkpolicies.yaml: who reaches the exporter and the reclaimer, where the
reclaimer reaches, evaluated with NetworkPolicy semantics (rules are OR-ed, a rule's peers and its
ports must both match, a peer's namespaceSelector and podSelector are AND-ed, a rule without peers
matches any address) for a table of peers. Also: the policies select the pods they are for, their
ports are the containers' and Prometheus' ports, and the patch in docs/security-deploy.md moves
every Prometheus peer.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from manifests import DEPLOY, OVERLAYS, REPO, Obj, render

from reclaimer.kube.objects.disruption import selects

PROMETHEUS = (
    {"kubernetes.io/metadata.name": "monitoring"},
    {"app.kubernetes.io/name": "prometheus"},
)
GRAFANA = ({"kubernetes.io/metadata.name": "monitoring"}, {"app.kubernetes.io/name": "grafana"})
TENANT = ({"kubernetes.io/metadata.name": "team-a"}, {"app": "notebook"})
TENANT_AS_PROMETHEUS = (
    {"kubernetes.io/metadata.name": "team-a"},
    {"app.kubernetes.io/name": "prometheus"},
)
RECLAIMER = (
    {"kubernetes.io/metadata.name": "gpu-reclaim"},
    {"app.kubernetes.io/name": "gpu-reclaimer"},
)
OUTSIDE = None  # an address no selector matches: the API server's host network, a DNS cache


@cache
def policies(overlay: str = "dry-run") -> dict[str, Obj]:
    objs = render(DEPLOY / "overlays" / overlay)
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == "NetworkPolicy"}


@cache
def workload(kind: str, name: str) -> Obj:
    (found,) = [
        o
        for o in render(DEPLOY / "overlays" / "dry-run")
        if (o["kind"], o["metadata"]["name"]) == (kind, name)
    ]
    return found


def peer_matches(peer: Obj, who: tuple[dict[str, str], dict[str, str]] | None) -> bool:
    if who is None or "ipBlock" in peer:  # no ipBlock is used: an ipBlock would need an address
        return False
    ns_labels, pod_labels = who
    in_namespace = (
        selects(peer["namespaceSelector"], ns_labels)
        if "namespaceSelector" in peer
        else ns_labels.get("kubernetes.io/metadata.name") == "gpu-reclaim"
    )
    return in_namespace and selects(peer.get("podSelector", {}), pod_labels)


def allows(policy: Obj, direction: str, who: Any, port: int, protocol: str = "TCP") -> bool:
    peers_key = "from" if direction == "ingress" else "to"
    for rule in policy["spec"].get(direction, []):
        peers = rule.get(peers_key)
        peer_ok = not peers or any(peer_matches(p, who) for p in peers)
        ports = rule.get("ports")
        port_ok = not ports or any(
            p["port"] == port and p.get("protocol", "TCP") == protocol for p in ports
        )
        if peer_ok and port_ok:
            return True
    return False


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_has_both_policies(overlay: str) -> None:
    assert sorted(policies(overlay)) == ["gpu-exporter", "gpu-reclaimer"]
    assert policies(overlay) == policies("dry-run")


@pytest.mark.parametrize(
    ("kind", "name", "types"),
    [
        ("DaemonSet", "gpu-exporter", ["Ingress", "Egress"]),
        ("Deployment", "gpu-reclaimer", ["Ingress", "Egress"]),
    ],
)
def test_each_policy_selects_its_pods(kind: str, name: str, types: list[str]) -> None:
    policy = policies()[name]
    pod_labels = workload(kind, name)["spec"]["template"]["metadata"]["labels"]
    assert selects(policy["spec"]["podSelector"], pod_labels)
    assert policy["spec"]["policyTypes"] == types
    ports = {
        p["containerPort"]
        for c in workload(kind, name)["spec"]["template"]["spec"]["containers"]
        for p in c["ports"]
    }
    ingress_ports = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    assert ingress_ports == ports


INGRESS = [
    ("gpu-exporter", PROMETHEUS, 9400, True),
    ("gpu-exporter", PROMETHEUS, 9401, False),
    ("gpu-exporter", GRAFANA, 9400, False),
    ("gpu-exporter", TENANT, 9400, False),
    ("gpu-exporter", TENANT_AS_PROMETHEUS, 9400, False),
    ("gpu-reclaimer", PROMETHEUS, 9401, True),
    ("gpu-reclaimer", PROMETHEUS, 9400, False),
    ("gpu-reclaimer", TENANT, 9401, False),
    ("gpu-reclaimer", TENANT_AS_PROMETHEUS, 9401, False),
    ("gpu-reclaimer", RECLAIMER, 9401, False),
    ("gpu-reclaimer", OUTSIDE, 9401, False),
]


@pytest.mark.parametrize(
    ("policy", "who", "port", "allowed"),
    INGRESS,
    ids=lambda v: v if isinstance(v, str | int | bool) else None,
)
def test_ingress(policy: str, who: Any, port: int, allowed: bool) -> None:
    assert allows(policies()[policy], "ingress", who, port) is allowed


EGRESS = [
    pytest.param(PROMETHEUS, 9090, "TCP", True, id="prometheus-api"),
    pytest.param(PROMETHEUS, 9091, "TCP", False, id="prometheus-other-port"),
    pytest.param(TENANT, 9090, "TCP", False, id="tenant-9090"),
    pytest.param(TENANT_AS_PROMETHEUS, 9090, "TCP", False, id="tenant-labelled-prometheus"),
    pytest.param(OUTSIDE, 53, "UDP", True, id="dns-udp"),
    pytest.param(OUTSIDE, 53, "TCP", True, id="dns-tcp"),
    pytest.param(OUTSIDE, 443, "TCP", True, id="api-server-443"),
    pytest.param(OUTSIDE, 6443, "TCP", True, id="api-server-6443"),
    pytest.param(OUTSIDE, 80, "TCP", False, id="http-anywhere"),
    pytest.param(OUTSIDE, 22, "TCP", False, id="ssh-anywhere"),
    pytest.param(TENANT, 8888, "TCP", False, id="tenant-notebook"),
    pytest.param(OUTSIDE, 443, "UDP", False, id="quic"),
]


@pytest.mark.parametrize(("who", "port", "protocol", "allowed"), EGRESS)
def test_reclaimer_egress(who: Any, port: int, protocol: str, allowed: bool) -> None:
    assert allows(policies()["gpu-reclaimer"], "egress", who, port, protocol) is allowed


# The exporter: DNS and the API server, and nothing else (not even Prometheus).
EXPORTER_EGRESS = [p for p in EGRESS if p.id != "prometheus-api"] + [
    pytest.param(PROMETHEUS, 9090, "TCP", False, id="prometheus-api"),
]


@pytest.mark.parametrize(("who", "port", "protocol", "allowed"), EXPORTER_EGRESS)
def test_exporter_egress(who: Any, port: int, protocol: str, allowed: bool) -> None:
    assert allows(policies()["gpu-exporter"], "egress", who, port, protocol) is allowed


def test_egress_reaches_the_prometheus_of_the_reclaimers_url() -> None:
    (container,) = workload("Deployment", "gpu-reclaimer")["spec"]["template"]["spec"]["containers"]
    (url,) = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--prometheus-url=")]
    host = urlsplit(url)
    namespace = host.hostname.split(".")[1]  # service.namespace.svc
    prometheus = ({"kubernetes.io/metadata.name": namespace}, PROMETHEUS[1])
    assert allows(policies()["gpu-reclaimer"], "egress", prometheus, host.port)


def prometheus_peers(policy: Obj) -> list[Obj]:
    spec = policy["spec"]
    peers = [spec["ingress"][0]["from"][0]]
    if "to" in spec.get("egress", [{}])[0]:
        peers.append(spec["egress"][0]["to"][0])
    return peers


def test_the_documented_patch_moves_every_prometheus_peer(tmp_path: Path) -> None:
    doc = (REPO / "docs" / "security-deploy.md").read_text("utf-8")
    match = re.search(r"<!-- prometheus-elsewhere -->\s*```yaml\n(.*?)```", doc, re.S)
    assert match, "docs/security-deploy.md lost its prometheus-elsewhere example"
    kustomization = yaml.safe_load(match.group(1))
    assert kustomization["resources"] == ["../dry-run"]  # as if in deploy/overlays/<cluster>
    kustomization["resources"] = [os.path.relpath(DEPLOY / "overlays" / "dry-run", tmp_path)]
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization), "utf-8")
    moved = {o["metadata"]["name"]: o for o in render(tmp_path) if o["kind"] == "NetworkPolicy"}
    before = [p for policy in policies().values() for p in prometheus_peers(policy)]
    after = [p for policy in moved.values() for p in prometheus_peers(policy)]
    assert len(after) == len(before) == 3
    assert all(p == after[0] for p in after) and after[0] != before[0]
    assert "monitoring" not in yaml.safe_dump(list(moved.values()))
