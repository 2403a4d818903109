"""The tenants dashboard shows DRA pods with the labels it already reads.

The exporter's exposition of the DRA node (`dra_node`: an idle DRA GPU, a busy one, a claim two
pods share, a MIG device, a device plugin GPU) is scraped by a real Prometheus with rules/
loaded; the panels' own expressions from grafana/gpu-tenants.json, with Grafana's "All"
substituted, must then list the DRA pods: the idle one among the idle pods holding GPUs, the
two pods of the shared claim among the shared GPUs, every one in the per-pod utilization.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from dra_node import NS, dra_node
from livehistory import serving
from promserver import start_prometheus
from repo_paths import REPO

ALL = {"$cluster": ".*", "$node": ".*", "$namespace": ".*", "$__rate_interval": "1m"}
GIVE_UP_S = 300.0  # a give-up for a hang (rules need a first evaluation), not a bound on speed


def panel_exprs(title: str) -> list[str]:
    board = json.loads((REPO / "grafana" / "gpu-tenants.json").read_text("utf-8"))
    (panel,) = [p for p in board["panels"] if p["title"] == title]
    out = []
    for target in panel["targets"]:
        expr = target["expr"]
        for var, value in ALL.items():
            expr = expr.replace(var, value)
        out.append(expr)
    return out


def query(url: str, expr: str) -> list[dict[str, Any]]:
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=60) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def pods_of(url: str, expr: str, done: Callable[[set[str]], bool]) -> set[str]:
    """The `pod` labels `expr` answers, once `done` holds for them (or the give-up passes)."""
    deadline = time.monotonic() + GIVE_UP_S
    while True:
        pods = {r["metric"]["pod"] for r in query(url, expr) if r["metric"].get("namespace") == NS}
        if done(pods) or time.monotonic() > deadline:
            return pods
        time.sleep(0.5)


def fast_rules(workdir: Path) -> Path:
    """rules/ as deployed, evaluated at the scrape interval instead of the groups' own."""
    doc = yaml.safe_load((REPO / "rules" / "gpu-reclaim.rules.yml").read_text("utf-8"))
    for group in doc["groups"]:
        group.pop("interval", None)
    out = workdir / "rules.yml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


@pytest.mark.prometheus
@pytest.mark.slow
def test_tenants_dashboard_lists_dra_pods(tmp_path: Path) -> None:
    with dra_node(tmp_path / "node") as node:
        node.pods.refresh()
        node.slices.refresh()
        node.loop.collect_once()  # GPM (the MIG instance) needs two samples
        text = node.loop.collect_once().exposition.body.decode()
    (tmp_path / "prom").mkdir()
    with (
        serving(text) as target,
        start_prometheus(
            tmp_path / "prom",
            scrape_targets=[target],
            rule_files=[fast_rules(tmp_path / "prom")],
            target_labels={"cluster": "c1"},
        ) as prom,
    ):
        (idle,) = panel_exprs("Idle pods holding GPUs (5-minute mean below 5%)")
        assert pods_of(prom.url, idle, lambda p: "idle-dra" in p) == {"idle-dra", "share-b"}
        shared = panel_exprs("Shared GPUs: each pod's share and the device total")[0]
        assert pods_of(prom.url, shared, bool) == {"share-a", "share-b"}
        (per_pod,) = panel_exprs("Per-pod utilization (busiest GPU)")
        everyone = {"idle-dra", "busy-dra", "share-a", "share-b", "mig-dra", "plugin"}
        assert pods_of(prom.url, per_pod, lambda p: p >= everyone) == everyone
