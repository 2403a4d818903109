"""Who was busy beside whom: each pod's present, busy and co-busy time over the last day. Pure.

Queries and their parsing only (`contention_read` sends them). From the exporter's per-pod
utilization, U = `max by (Hostname, UUID, GPU_I_ID, namespace, pod) (gpu_pod_utilization_ratio)`
(one series per pod and device: a pod's containers are one, a time-slice replica `GPU-<uuid>::<n>`
is labelled with its physical GPU's `UUID`, and a MIG instance, `UUID` and `GPU_I_ID`, is a
device of its own), three instant queries at the cycle's time count, per (namespace, pod),
the steps of a `[1d:60s]` subquery at which
- present: U has a value;
- busy: U > 0;
- co-busy: U > 0 and at least one other pod on the same device has U > 0 then too:
  `(U > 0) and on (Hostname, UUID, GPU_I_ID) (count by (Hostname, UUID, GPU_I_ID) (U > 0) > 1)`.
Each count times `CONTENTION_STEP` is seconds; a pod on several devices sums over them.

PromQL, as Prometheus documents it (prometheus/prometheus docs/querying): a subquery
`<instant_query>[<range>:<resolution>]` runs the instant query at each resolution step of the
range and gives a range vector (basics.md, "Subquery"); its steps are the multiples of the
resolution in Unix time after `t - range` up to the query's time t (promql/engine.go,
`subqueryTimeRange`): a day holds 1,440 steps whenever in the minute the cycle runs. At each
step a series' value is its newest sample at most the lookback (5 minutes) old (basics.md,
"Staleness"): a pod whose series stopped without a staleness marker reads present for up to 5
more minutes. A comparison with a scalar filters, keeping the elements for which it is true
(operators.md, "Comparison binary operators"); `count by (labels)` counts the elements of each
group of those labels (operators.md, "Aggregation operators"), and a label a series lacks
(`GPU_I_ID` on a whole GPU) groups as empty; `vector1 and on (labels) vector2` keeps the
elements of `vector1`, values and labels, for which `vector2` has an element with the same
values of those labels (operators.md, "Logical/set binary operators" and "One-to-one vector
matches"; `and` matches many-to-many). `count_over_time` counts a range's samples
(functions.md, "`<aggregation>_over_time()`").

dcgm-exporter copies a device's utilization onto every pod there and has no per-pod share,
so under the DCGM source these queries are not sent: the reading is `DCGM_UNREAD`, unknown to
the contention rule (raises refused, nothing lowered), and not a failure to read again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import gpu_contract as gc
from reclaimer.model import CONTENTION_WINDOW, Contention, PodBusy
from reclaimer.prometheus.series import QueryResult

CONTENTION_STEP = 60.0  # seconds between the subquery's steps: one step is this much time
_DEVICE = "Hostname, UUID, GPU_I_ID"
KINDS = ("present", "busy", "cobusy")
DCGM_UNREAD = Contention(
    CONTENTION_WINDOW,
    error="not read: the DCGM source has no per-pod utilization (dcgm-exporter copies the "
    "device's value onto each pod there)",
)


def contention_queries() -> dict[str, str]:
    """The three instant queries, by kind: each pod's count of subquery steps."""
    u = f"max by ({_DEVICE}, namespace, pod) ({gc.POD_UTILIZATION})"
    busy = f"({u} > 0)"
    cobusy = f"({busy} and on ({_DEVICE}) (count by ({_DEVICE}) {busy} > 1))"
    rng = f"[{int(CONTENTION_WINDOW)}s:{int(CONTENTION_STEP)}s]"
    return {
        kind: f"sum by (namespace, pod) (count_over_time({expr}{rng}))"
        for kind, expr in zip(KINDS, (f"({u})", busy, cobusy), strict=True)
    }


def contention(results: Mapping[str, QueryResult]) -> Contention:
    """Each pod's `PodBusy` from the answers of `contention_queries` (all three, by kind): a
    pod with no busy or co-busy step has none there, and reads 0. Partial answers (Prometheus
    warnings) give no pods and say why: the contention rule never acts on part of a fleet."""
    partial = [w for r in results.values() for w in r.warnings]
    if partial:
        return Contention(CONTENTION_WINDOW, error=f"partial answer: {'; '.join(partial)}")
    counts = {kind: _counts(results[kind]) for kind in KINDS}
    pods = {
        key: PodBusy(
            present=counts["present"].get(key, 0.0) * CONTENTION_STEP,
            busy=counts["busy"].get(key, 0.0) * CONTENTION_STEP,
            cobusy=counts["cobusy"].get(key, 0.0) * CONTENTION_STEP,
        )
        for key in sorted(counts["present"].keys() | counts["busy"].keys())
    }
    return Contention(CONTENTION_WINDOW, MappingProxyType(pods))


def _counts(result: QueryResult) -> dict[str, float]:
    """Pod key ("namespace/pod") -> its count of steps; NaN and unnamed series left out."""
    out: dict[str, float] = {}
    for s in result.series:
        ns, pod = s.labels.get("namespace", ""), s.labels.get("pod", "")
        if pod and s.points and not math.isnan(s.points[-1][1]):
            out[f"{ns}/{pod}"] = max(0.0, s.points[-1][1])
    return out
