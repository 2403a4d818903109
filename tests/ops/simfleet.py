"""A live simulated fleet for the ops tests: sim exporters, backfilled history, a real Prometheus.

`sim_fleet()` starts one `gpu-exporter --backend sim` per example node (pods named after
deploy/examples through the `sim/*.workloads.yaml` files), then Prometheus through
tests/promserver.py: it backfills what no exporter produces (the reclaimer's own metrics and
kube-state-metrics' pod labels/annotations that give the Volcano queue) with `promtool tsdb
create-blocks-from openmetrics`, then runs /usr/bin/prometheus scraping the exporters every second
with rules/ loaded (group intervals dropped so recording rules run every second too). It waits
until recorded series exist. Every process is stopped on exit.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from promserver import SeriesSpec, openmetrics, require_prometheus, start_prometheus
from repo_paths import REPO
from simexporter import EXAMPLE_NODES, sim_exporter

SIM = REPO / "deploy" / "examples" / "sim"
RULES = REPO / "rules" / "gpu-reclaim.rules.yml"
CLUSTER = "sim"


@dataclass(frozen=True)
class Fleet:
    prometheus: str
    exporters: tuple[str, ...]


def query(url: str, expr: str) -> list[dict[str, Any]]:
    """Instant query; raises on any error status, returns the result list."""
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=60) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body}")
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def _series(
    name: str, labels: dict[str, str], start: float, end: float, step: float, fn: Any
) -> SeriesSpec:
    n = int((end - start) // step)
    return (name, labels, [(start + i * step, float(fn(i))) for i in range(n + 1)])


def reclaimer_series(start: float, end: float, step: float = 30.0) -> list[SeriesSpec]:
    """Two reclaimer replicas (one leader) in dry-run, planning and counting as they would."""
    base = {"cluster": CLUSTER, "job": "gpu-reclaimer"}
    a, b = dict(base, instance="reclaimer-a:9401"), dict(base, instance="reclaimer-b:9401")
    act = {"kind": "preempt", "reason": "IdleJobForStarvedQueue"}
    s = [
        _series("gpu_reclaimer_dry_run", a, start, end, step, lambda i: 1),
        _series("gpu_reclaimer_dry_run", b, start, end, step, lambda i: 1),
        _series("gpu_reclaimer_is_leader", a, start, end, step, lambda i: 1),
        _series("gpu_reclaimer_is_leader", b, start, end, step, lambda i: 0),
        _series("gpu_reclaimer_cycle_duration_seconds", a, start, end, step, lambda i: 0.4),
        _series(
            "gpu_reclaimer_last_success_timestamp_seconds",
            a,
            start,
            end,
            step,
            lambda i: start + i * step,
        ),
        _series(
            "gpu_reclaimer_cycles_total", dict(a, result="success"), start, end, step, lambda i: i
        ),
        _series(
            "gpu_reclaimer_cycles_total",
            dict(a, result="skipped"),
            start,
            end,
            step,
            lambda i: i // 40,
        ),
        _series(
            "gpu_reclaimer_actions_planned_total",
            dict(a, **act),
            start,
            end,
            step,
            lambda i: i // 4,
        ),
        _series(
            "gpu_reclaimer_actions_applied_total",
            dict(a, **act),
            start,
            end,
            step,
            lambda i: i // 5,
        ),
        _series(
            "gpu_reclaimer_actions_failed_total",
            dict(a, **act),
            start,
            end,
            step,
            lambda i: i // 50,
        ),
        _series("gpu_reclaimer_forecasts", dict(a, outcome="idle"), start, end, step, lambda i: 1),
        _series("gpu_reclaimer_forecasts", dict(a, outcome="busy"), start, end, step, lambda i: 1),
        _series(
            "gpu_reclaimer_forecast_checks_total",
            dict(a, result="correct"),
            start,
            end,
            step,
            lambda i: i // 3,
        ),
        _series(
            "gpu_reclaimer_forecast_checks_total",
            dict(a, result="wrong"),
            start,
            end,
            step,
            lambda i: i // 30,
        ),
        _series(
            "gpu_reclaimer_reclaimed_gpu_seconds_total", a, start, end, step, lambda i: i * 2 * step
        ),
    ]
    return s


def ksm_series(start: float, end: float, step: float = 30.0) -> list[SeriesSpec]:
    """kube-state-metrics series naming each example pod's Volcano queue."""
    base = {"cluster": CLUSTER, "job": "kube-state-metrics"}
    s: list[SeriesSpec] = []
    for path in sorted(SIM.glob("*.workloads.yaml")):
        for w in yaml.safe_load(path.read_text("utf-8")):
            pod = dict(base, namespace=w["namespace"], pod=w["pod"])
            if w["namespace"] == "research":  # PyTorchJob pods: the operator's annotation
                ann = dict(pod, annotation_scheduling_volcano_sh_queue_name="research")
                s.append(_series("kube_pod_annotations", ann, start, end, step, lambda i: 1))
            else:  # Volcano-scheduled bare pods in this example carry the label
                lab = dict(pod, label_volcano_sh_queue_name="interactive")
                s.append(_series("kube_pod_labels", lab, start, end, step, lambda i: 1))
    return s


def history(start: float, end: float) -> str:
    """OpenMetrics text of the reclaimer's and kube-state-metrics' series, for backfilling."""
    series = reclaimer_series(start, end) + ksm_series(start, end)
    counters = {n for n, _, _ in series if n.endswith("_total")}
    return openmetrics(series, {n: "counter" for n in counters})


def _fast_rules(workdir: Path) -> Path:
    doc = yaml.safe_load(RULES.read_text("utf-8"))
    for group in doc["groups"]:
        group.pop("interval", None)
    out = workdir / "rules.yml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


def _wait(
    what: str, check: Any, timeout: float, proc: subprocess.Popen[bytes] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: process exited with {proc.returncode}")
        try:
            if check():
                return
        except OSError as exc:  # not listening yet
            last = exc
        time.sleep(0.3)
    raise RuntimeError(f"{what}: not ready after {timeout}s ({last})")


@contextmanager
def sim_fleet(workdir: Path, history_hours: float = 2.0) -> Iterator[Fleet]:
    require_prometheus()  # skip before starting the exporters
    with ExitStack() as stack:
        nodes = EXAMPLE_NODES.items()
        targets = [stack.enter_context(sim_exporter(workdir, n, g)) for n, g in nodes]
        end = time.time() - 1
        server = stack.enter_context(
            start_prometheus(
                workdir,
                history=history(end - history_hours * 3600, end),
                scrape_targets=targets,
                rule_files=[_fast_rules(workdir)],
                target_labels={"cluster": CLUSTER},
            )
        )
        url = server.url
        _wait(
            "scrapes and recording rules",
            lambda: (
                len(query(url, 'up{job="gpu-exporter"} == 1')) == len(targets)
                and bool(query(url, "count_over_time(gpu_pod_allocated[1m]) >= 3"))
                and bool(query(url, "namespace:gpu_pod_idle_allocated:sum"))
                and bool(query(url, "queue:gpu_pod_allocated:sum"))
            ),
            300,  # a give-up for a fleet that never comes up, not a bound on the machine's pace
            server.process,
        )
        yield Fleet(url, tuple(targets))
