"""The planner's two views of a replay tick, and what the controller's plan does in them.

The main view (`sim_strategies.snapshot_of`) shows the planner one node per device in tenths of a
GPU: exact for the one-device pods (whole-GPU or GPU-sharing) that are 97% of the trace, and the
only view that can free part of a device for a sharing pod. A pending k-GPU pod, though, needs k
completely free devices on one node, which that view cannot express. So the replay plans in two
steps, each with the controller's real `plan()` on the same forecasts:

1. the device view, with only the one-device pending pods;
2. if that preempts nothing and a multi-GPU pod waits, the *node view* below, with only the
   multi-GPU pending pods, each shown as one pod of k slots.

Only one step acts in a tick, so the policy's per-cycle limits hold for the tick as a whole.
Resumes of suspended victims are planned apart (`planned_resumes`), in the device view with every
pending job, in ticks that preempt nothing.

The node view has one planner node per trace node with one slot per device (`replicas` 1), so
the planner's per-node fit check (`free // k`) is exactly "k free devices on one node". A device
counts as:

- free, when nothing runs on it;
- held by a non-reclaimable job, when any non-reclaimable job runs on it (the first by key is
  shown holding it, the others on it hold nothing there): no preemption can free it;
- held by its job, when a single reclaimable job runs on it (a whole-GPU pod or a lone sharing
  pod): preempting the job frees it;
- held by a *device group*, when several reclaimable sharing pods share it: freeing the device
  takes all of them, so the planner sees one pseudo-job (`<queue>/~<node>~<gpuN>`) holding it.
  It is forecast idle only when every member is (its forecast is the least confident member's),
  it is as young as its youngest member (so minimum runtime and cool-down protect every member),
  and preempting it preempts every member. Its work lost is the youngest member's, which the
  planner uses only to rank victims; the simulator counts every member's real loss. The
  planner's budget counts a group as one preemption.

Queue allocations and deserved shares are counted in devices in this view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from reclaimer.decisions import Action, ActionKind
from reclaimer.model import (
    Forecast,
    Job,
    JobKind,
    Node,
    Pod,
    PodPhase,
    Queue,
    Snapshot,
    StopWarning,
)
from reclaimer.simulate.sharing.usage import Usage
from reclaimer.simulate.strategies import (
    SLOTS_PER_GPU,
    ReplayPlanner,
    RunningJob,
    TickView,
    blind_forecasts,
    history_frame,
    snapshot_of,
)


def is_replica(name: str) -> bool:
    """A time-slice replica's node in the device view (`sim_pool.reshaping.replica_name`)."""
    return "#r" in name


@dataclass(frozen=True)
class NodeView:
    """The whole-device snapshot, its forecasts, and each device group's member job keys."""

    snapshot: Snapshot
    forecasts: Mapping[str, Forecast]
    members: Mapping[str, tuple[str, ...]]


def split_device(device: str) -> tuple[str, str]:
    """`node/gpu3` -> (`node`, `gpu3`)."""
    node, _, gpu = device.rpartition("/")
    return node, gpu


def _holders(view: TickView) -> dict[str, tuple[RunningJob, ...]]:
    """Device -> the running jobs that hold it in the node view (one, or a reclaimable group)."""
    on_device: dict[str, dict[str, RunningJob]] = {}
    for r in view.running:
        for pod in r.pods:
            if pod.node is not None and not is_replica(pod.node):  # no multi-GPU pod there
                on_device.setdefault(pod.node, {})[r.job.key] = r
    out: dict[str, tuple[RunningJob, ...]] = {}
    for device, by_key in sorted(on_device.items()):
        runs = [by_key[k] for k in sorted(by_key)]
        guaranteed = [r for r in runs if not r.reclaimable]
        out[device] = (guaranteed[0],) if guaranteed else tuple(runs)
    return out


def _group_job(device: str, runs: tuple[RunningJob, ...]) -> Job:
    node, gpu = split_device(device)
    queue = runs[0].job.queue
    name = f"~{node}~{gpu}"
    return Job(
        key=f"{queue}/{name}",
        kind=JobKind.PYTORCH_JOB,
        namespace=queue,
        name=name,
        queue=queue,
        gpus=1,
        start_time=max(r.job.start_time for r in runs),
        warning=_group_warning([r.job.warning for r in runs]),
    )


def _group_warning(members: list[StopWarning | None]) -> StopWarning | None:
    """A device group is warned once all its members are (warned together, for one demand)."""
    known = [w for w in members if w is not None]
    if not known or len(known) < len(members):
        return None
    return replace(
        known[0],
        warned_at=max(w.warned_at for w in known),
        stop_at=max(w.stop_at for w in known),
    )


def _group_forecast(key: str, members: list[Forecast | None]) -> Forecast | None:
    if any(f is None for f in members):
        return None
    known = [f for f in members if f is not None]
    worst = min(known, key=lambda f: (f.idle, f.confidence))
    return replace(worst, job=key, method=f"device group of {len(known)} ({worst.method})")


def node_view(view: TickView, forecasts: Mapping[str, Forecast]) -> NodeView:
    """The tick as whole devices per node, with only the multi-GPU pending pods."""
    held: dict[str, tuple[Job, dict[str, int]]] = {}
    members: dict[str, tuple[str, ...]] = {}
    group_forecasts: dict[str, Forecast] = {}
    for device, runs in _holders(view).items():
        node, _ = split_device(device)
        if len(runs) == 1:
            job = runs[0].job
        else:
            job = _group_job(device, runs)
            members[job.key] = tuple(r.job.key for r in runs)
            f = _group_forecast(job.key, [forecasts.get(r.job.key) for r in runs])
            if f is not None:
                group_forecasts[job.key] = f
        by_node = held.setdefault(job.key, (job, {}))[1]
        by_node[node] = by_node.get(node, 0) + 1
    jobs: list[Job] = []
    pods: list[Pod] = []
    for job, by_node in held.values():
        job_pods = tuple(_pod(job, node, devices) for node, devices in sorted(by_node.items()))
        pods += job_pods
        keys = tuple(p.key for p in job_pods)
        jobs.append(replace(job, gpus=sum(by_node.values()), min_member=len(keys), pods=keys))
    snapshot = replace(
        snapshot_of(view),
        queues=tuple(_in_devices(q) for q in view.queues),
        jobs=tuple(jobs),
        pods=tuple(pods),
        nodes=_nodes(view.nodes),
        pending=tuple(
            replace(d, gpus=d.min_member, min_member=1) for d in view.pending if d.min_member > 1
        ),
        last_actions=_group_actions(view.last_actions, members),
        pod_gpus=(),  # no pool GPU is in this view
    )
    return NodeView(snapshot, {**forecasts, **group_forecasts}, members)


def _pod(job: Job, node: str, devices: int) -> Pod:
    name = f"{job.name}@{node}"
    return Pod(
        key=f"{job.namespace}/{name}",
        namespace=job.namespace,
        name=name,
        node=node,
        gpus=devices,
        phase=PodPhase.RUNNING,
        job=job.key,
        start_time=job.start_time,
    )


def _in_devices(queue: Queue) -> Queue:
    if queue.deserved_gpus is None:
        return queue
    return replace(queue, deserved_gpus=queue.deserved_gpus / SLOTS_PER_GPU)


def _nodes(devices: tuple[Node, ...]) -> tuple[Node, ...]:
    count: dict[str, int] = {}
    for d in devices:
        if is_replica(d.name):
            continue
        node, _ = split_device(d.name)
        count[node] = count.get(node, 0) + 1
    return tuple(Node(name=n, gpus=c, replicas=1) for n, c in sorted(count.items()))


def _group_actions(
    last: Mapping[str, float], members: Mapping[str, tuple[str, ...]]
) -> dict[str, float]:
    out = dict(last)
    for group, keys in members.items():
        times = [last[k] for k in keys if k in last]
        if times:
            out[group] = max(times)
    return out


def planned_victims(
    view: TickView,
    usage: Usage,
    planner: ReplayPlanner,
    blind: bool,
    *,
    forecasting: bool = True,
    notices: list[Action] | None = None,
) -> dict[int, str]:
    """Forecast (or the blind stand-in), then plan in the device view, then the node view.

    Returns each victim with the reason the plan stopped it for. Without `forecasting` (a tick
    planned only because a busy reclaimable pod shares a GPU with a busy guaranteed one), no job
    is forecast and only the device view is planned: contention relief needs no forecast.
    The plans' warnings and their cancels (`reclaimer.plan.warning`) go to `notices`, a device
    group's as its members'.
    """
    forecasts: Mapping[str, Forecast] = {}
    if blind:
        forecasts = blind_forecasts(view, planner)
    elif forecasting:
        history = history_frame(view, usage, planner.history_seconds)
        forecasts = planner.forecast(history, view.now)
    by_key = {r.job.key: r.index for r in view.running}
    single = replace(view, pending=tuple(d for d in view.pending if d.min_member <= 1))
    plan = planner.plan(snapshot_of(single), forecasts, view.now)
    if notices is not None:
        notices += [a for a in plan.actions if _notice(a, view, gangs=False)]
    victims = {
        by_key[a.target]: a.reason.value
        for a in plan.actions
        if a.kind is ActionKind.PREEMPT and a.target in by_key
    }
    if victims or not forecasting or not any(d.min_member > 1 for d in view.pending):
        return victims
    nodes = node_view(view, forecasts)
    plan = planner.plan_devices(nodes.snapshot, nodes.forecasts, view.now)
    if notices is not None:  # a device group's warning is its members'
        notices += [
            replace(a, target=key)
            for a in plan.actions
            for key in nodes.members.get(a.target, (a.target,))
            if key in by_key and _notice(replace(a, target=key), view, gangs=True)
        ]
    return {
        by_key[key]: a.reason.value
        for a in plan.actions
        if a.kind is ActionKind.PREEMPT
        for key in nodes.members.get(a.target, (a.target,))
        if key in by_key
    }


def _notice(a: Action, view: TickView, gangs: bool) -> bool:
    """A warning or cancel this view may decide: not the cancel of a job warned for a job still
    pending that the view does not show (the device view shows single-pod pending jobs, the node
    view multi-pod ones, `gangs`): the other view decides that one."""
    if a.kind is ActionKind.WARN:
        return True
    if a.kind is not ActionKind.CANCEL:
        return False
    warned = next((r.job.warning for r in view.running if r.job.key == a.target), None)
    elsewhere = {d.job for d in view.pending if (d.min_member > 1) != gangs}
    return warned is None or warned.for_pending not in elsewhere


def planned_resumes(view: TickView, planner: ReplayPlanner) -> list[int]:
    """The suspended victims the controller's plan resumes now, in the device view.

    This plan sees every pending job (multi-GPU ones as gangs of whole-device pods), so a
    starved job of any shape that finds no room holds the resumes back, as in the controller.
    """
    by_key = {h.job.key: h.index for h in view.suspended}
    plan = planner.plan_resumes(snapshot_of(view), {}, view.now)
    return [by_key[a.target] for a in plan.actions if a.kind is ActionKind.RESUME]
