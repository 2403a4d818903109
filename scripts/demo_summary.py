"""The demo's fleet utilization summary, read from Prometheus over the backfilled history.

Per node: GPUs and mean utilization now and over the history; the fleet's GPUs by 20% bucket now
(recorded by rules/) and as a share of GPU-time over the history (the seed's chart); per
namespace: GPU slots held (time-slice replicas and MIG instances, one per pod and device), the
physical GPUs they are, mean utilization and idle GPU-hours. A device shared by n pods (time-slice
replicas, or the MIG instances of one GPU: they carry its UUID) gives each 1/n of its time, so the
idle GPU-hours of its sharers add up to at most the GPU's hours.
History figures come from raw series with 5-minute subqueries: the demo backfills only the
recording rules the reclaimer reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from demo_stack import prom_query

import gpu_contract as gc

UTIL, POD_UTIL, ALLOC = gc.DCGM_GPU_UTIL, gc.POD_UTILIZATION, gc.POD_ALLOCATED
BUCKETS = ((0, 20), (20, 40), (40, 60), (60, 80), (80, 101))


def _by(url: str, expr: str, label: str) -> dict[str, float]:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in prom_query(url, expr)}


def _one(url: str, expr: str) -> float:
    result = prom_query(url, expr)
    return float(result[0]["value"][1]) if result else 0.0


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return ["  " + fmt.format(*header).rstrip(), *("  " + fmt.format(*r).rstrip() for r in rows)]


def _nodes(url: str, rng: str) -> list[str]:
    gpus = _by(url, f"count by (Hostname) ({UTIL})", "Hostname")
    now = _by(url, f"avg by (Hostname) (avg_over_time({UTIL}[5m]))", "Hostname")
    hist = _by(url, f"avg by (Hostname) (avg_over_time({UTIL}[{rng}]))", "Hostname")
    rows = [
        (n, f"{gpus[n]:.0f}", f"{now.get(n, 0):.0f}%", f"{hist.get(n, 0):.0f}%")
        for n in sorted(gpus)
    ]
    total = max(sum(gpus.values()), 1)
    fleet_now = sum(now.get(n, 0) * gpus[n] for n in gpus) / total
    fleet_hist = sum(hist.get(n, 0) * gpus[n] for n in gpus) / total
    rows.append(("fleet", f"{sum(gpus.values()):.0f}", f"{fleet_now:.0f}%", f"{fleet_hist:.0f}%"))
    return _table(("node", "GPUs", "util 5m", f"util {rng}"), rows)


def _buckets(url: str, rng: str) -> list[str]:
    now = _by(url, "cluster:gpu_utilization_bucket:count", "bucket")
    five = f"avg_over_time({UTIL}[5m])"
    hist = {
        f"{lo}-{min(hi, 100)}": _one(
            url, f"sum(count_over_time(({five} >= {lo} < {hi})[{rng}:5m]))"
        )
        for lo, hi in BUCKETS
    }
    total = sum(hist.values()) or 1.0
    rows = [
        (f"{b}%", f"{now.get(b, 0):.0f}", f"{100 * v / total:.0f}%", "#" * round(30 * v / total))
        for b, v in hist.items()
    ]
    return _table(("utilization", "GPUs now", f"GPU-time {rng}", ""), rows)


# Each pod's share of its GPU: 1 / the pods (slots) allocated a device with that UUID on that node.
SHARE = f"({ALLOC} / on (Hostname, UUID) group_left () count by (Hostname, UUID) ({ALLOC}))"


def idle_gpu_hours(url: str, rng: str) -> dict[str, float]:
    """Namespace -> GPU-hours its pods held below 5% utilization, each pod its share of the GPU."""
    idle_5m = f"({SHARE} and avg_over_time({POD_UTIL}[5m]) < 0.05)"
    expr = f"sum by (namespace) (sum_over_time({idle_5m}[{rng}:5m])) * 5 / 60"
    return _by(url, expr, "namespace")


def _namespaces(url: str, rng: str) -> list[str]:
    held = _by(url, f"sum by (namespace) ({ALLOC})", "namespace")
    gpus = _by(url, f"sum by (namespace) ({SHARE})", "namespace")
    util = _by(url, f"avg by (namespace) (avg_over_time({POD_UTIL}[{rng}]))", "namespace")
    idle = idle_gpu_hours(url, rng)
    rows = [
        (
            ns,
            f"{held[ns]:.0f}",
            f"{gpus.get(ns, 0):.2g}",
            f"{100 * util.get(ns, 0):.0f}%",
            f"{idle.get(ns, 0):.1f}",
        )
        for ns in sorted(held)
    ]
    header = ("namespace", "GPU slots", "GPUs", f"util {rng}", f"idle GPU-hours {rng}")
    return _table(header, rows)


def fleet_summary(url: str, days: float) -> str:
    rng = f"{round(days * 24)}h"
    lines = [*_nodes(url, rng), "", *_buckets(url, rng), "", *_namespaces(url, rng)]
    return "\n".join(lines)
