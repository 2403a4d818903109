"""Forecasters judged where they act: the replay run side by side for each one (not a test).

    .venv/bin/python bench/forecaster_backtest.py [--utilization FILE] [--seeds 0 1]
        [--capacity-scale 0.007] [--json]

Each row replays the alibaba-openb trace once per seed through the controller's own `plan()`,
the forecast coming from the named method (`simulate --forecaster`): the default
(`pooled-logistic`), the `decayed-p95` rule, each also with the policy's `costAwareStops`
(`reclaimer.plan.stop_cost`), and the `threshold` strategy (idle 30 minutes, then evicted). Reclaim
only (no time-sliced pool) and no cold starts, as `bench/simulate_table.py` measures, at the
default 40 GPUs: equal capacity for every row.

Per row, summed over the seeds: preemptions, wrongful ones (the victim was busy again within the
horizon), lost GPU-hours of work, and the GPU-hours reclaimed: for every preemption, the
victim's GPUs times the time until it runs again (or the replay ends), read from the replay's
own events. `wrongful per reclaimed GPU-h` divides the two; the guaranteed wait p95 is listed
per seed. `--utilization` replays other pods' profiles (a file in the GenTD26 format).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from reclaimer.forecast.forecaster import DEFAULT_METHOD
from reclaimer.policy.settings import Policy
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import read_nodes, read_pods, read_profiles

DATA = Path("/work/shared/data")


@dataclass(frozen=True)
class Row:
    name: str
    strategy: Strategy
    forecaster: str
    policy: Policy


ROWS = (
    Row(f"{DEFAULT_METHOD} (default)", Strategy.FORECAST, DEFAULT_METHOD, Policy()),
    Row("decayed-p95", Strategy.FORECAST, "decayed-p95", Policy()),
    Row(
        f"{DEFAULT_METHOD}, costAwareStops",
        Strategy.FORECAST,
        DEFAULT_METHOD,
        replace(Policy(), cost_aware_stops=True),
    ),
    Row(
        "decayed-p95, costAwareStops",
        Strategy.FORECAST,
        "decayed-p95",
        replace(Policy(), cost_aware_stops=True),
    ),
    Row("threshold (30m)", Strategy.THRESHOLD, DEFAULT_METHOD, Policy()),
)


def reclaimed_gpu_hours(events: list[Event], gpus: list[float]) -> float:
    """Sum over preemptions of the victim's GPUs x the time until it next starts (or the end)."""
    end = max((e.at for e in events), default=0.0)
    stopped: dict[int, float] = {}
    total = 0.0
    for e in events:
        if e.kind is EventKind.PREEMPTED:
            stopped[e.job] = e.at
        elif e.kind is EventKind.STARTED and e.job in stopped:
            total += gpus[e.job] * (e.at - stopped.pop(e.job))
    total += sum(gpus[j] * (end - at) for j, at in stopped.items())
    return total / 3600.0


def run_row(row: Row, args: argparse.Namespace) -> dict[str, object]:
    openb = args.data / "alibaba-openb"
    jobs = read_pods(openb / "openb_pod_list_default.csv")
    nodes = read_nodes(openb / "openb_node_list_gpu_node.csv", args.capacity_scale)
    profiles = read_profiles(args.utilization)
    planner = planner_for(row.policy, forecaster=row.forecaster)
    gpus = [float(g) for g in jobs.gpus]
    out: dict[str, object] = {"row": row.name, "gpus": int(nodes.gpus.sum())}
    sums = {"preemptions": 0, "wrongful": 0, "lost_gpu_h": 0.0, "reclaimed_gpu_h": 0.0}
    waits = []
    for seed in args.seeds:
        events: list[Event] = []
        settings = SimSettings(
            strategy=row.strategy,
            seed=seed,
            checkpoint_seconds=row.policy.checkpoint_interval_seconds,
            queue_shares=MappingProxyType(dict(row.policy.queue_shares)),
        )
        result = simulate(jobs, nodes, profiles, settings, planner=planner, on_event=events.append)
        sums["preemptions"] += result.preemptions
        sums["wrongful"] += result.wrongful_preemptions
        sums["lost_gpu_h"] += result.lost_gpu_hours
        sums["reclaimed_gpu_h"] += reclaimed_gpu_hours(events, gpus)
        waits.append(result.guaranteed_wait_p95_s)
    reclaimed = float(sums["reclaimed_gpu_h"])
    per = sums["wrongful"] / reclaimed if reclaimed else 0.0
    return out | sums | {"wrongful_per_reclaimed_gpu_h": per, "guaranteed_wait_p95_s": waits}


def format_table(rows: list[dict[str, object]]) -> str:
    head = (
        f"{'row':<34} {'stops':>6} {'wrongful':>8} {'lost GPU-h':>10} {'reclaimed GPU-h':>15}"
        f" {'wrongful/GPU-h':>14}  guaranteed wait p95 s (per seed)"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        waits = " / ".join(f"{w:,.0f}" for w in r["guaranteed_wait_p95_s"])  # type: ignore[attr-defined]
        lines.append(
            f"{r['row']:<34} {r['preemptions']:>6} {r['wrongful']:>8} {r['lost_gpu_h']:>10.1f}"
            f" {r['reclaimed_gpu_h']:>15.1f} {r['wrongful_per_reclaimed_gpu_h']:>14.4f}  {waits}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--utilization",
        type=Path,
        default=DATA / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--capacity-scale", type=float, default=0.007)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [run_row(row, args) for row in ROWS]
    print(json.dumps(rows, indent=2) if args.json else format_table(rows))


if __name__ == "__main__":
    main()
