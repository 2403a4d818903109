"""Volcano's job controller, as far as an AbortJob Command goes, run when a test says so.

Built from volcano-sh/volcano pkg/controllers/job (v1.10 through v1.16):
- `processNextCommand` (job_controller_handler.go) deletes the Command before anything else
  ("clean it up to make sure executed not more than once"), records a `CommandIssued` Event on
  the Job, then hands the action to the Job's state.
- In Pending or Running (state/pending.go, state/running.go) AbortJob is `KillJob` with
  `PodRetainPhaseSoft` (state/factory.go: Succeeded and Failed pods are kept) and the phase set
  to Aborting. `killPods` (job_controller_actions.go) marks each pod to kill out of sync (the
  annotation `volcano.sh/controller-out-of-sync`, helpers.go `OutOfSyncJSONPatch`) and deletes
  it, which leaves it Terminating for its grace period (`fakeapi.lifecycle`); a pod already
  being deleted is counted as terminating. Then it writes the Job's status (phase Aborting,
  `terminating` those pods, `pending` and `running` 0) and deletes the Job's PodGroup
  (`getPodGroupByJob`: `<job>-<uid>`, else `<job>`).
- In Aborting (state/aborting.go) each later sync of the Job kills again and sets Aborted once
  no pod is pending, running or terminating. Volcano syncs on the pods' deletion; here the test,
  having played the kubelet (`finish_termination`), calls `reconcile` again.

`reconcile` holds the store's lock for the whole pass, so the served API never answers from a
half-made step, and returns the steps it took, in order. Anything else (other actions, other
phases, plugins, retries) is not modelled and raises before touching the store.
"""

from __future__ import annotations

from typing import Any

from fakeapi.lifecycle import PODS, iso
from fakeapi.store import FakeCluster

Obj = dict[str, Any]
JOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
COMMANDS = ("bus.volcano.sh", "v1alpha1", "commands")
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"
KEPT = frozenset({"Succeeded", "Failed"})  # PodRetainPhaseSoft
ABORTABLE = frozenset({"Pending", "Running"})
MERGE = "application/merge-patch+json"


def reconcile(cluster: FakeCluster) -> list[str]:
    """One pass of the controller: every Command taken up, then every Aborting Job synced."""
    with cluster.lock:
        steps: list[str] = []
        for cmd in sorted(cluster.all(*COMMANDS), key=lambda c: c["metadata"]["name"]):
            steps += _take_up(cluster, cmd)
        for job in cluster.all(*JOBS):
            if _phase(job) == "Aborting":
                steps += _sync_aborting(cluster, job)
        return steps


def _phase(job: Obj) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "Pending")


def _take_up(cluster: FakeCluster, cmd: Obj) -> list[str]:
    target = cmd.get("target") or {}
    if (target.get("apiVersion"), target.get("kind")) != ("batch.volcano.sh/v1alpha1", "Job"):
        return []  # the job controller watches only Commands aimed at a Volcano Job
    ns, name = cmd["metadata"].get("namespace", ""), cmd["metadata"]["name"]
    job = cluster.get(*JOBS, str(target.get("name")), ns)
    if job is None or cmd.get("action") != "AbortJob" or _phase(job) not in ABORTABLE:
        raise NotImplementedError(f"{cmd.get('action')} on {_phase(job) if job else 'no Job'}")
    cluster.delete(COMMANDS, ns, name, dry=False)
    steps = [f"Command {name} deleted"]
    cluster.add(_event(job, cmd, iso(cluster.now())))
    steps.append("CommandIssued Event")
    return steps + _kill(cluster, job, "Aborting")


def _owned(cluster: FakeCluster, job: Obj, res: tuple[str, str, str]) -> list[Obj]:
    uid = job["metadata"]["uid"]
    ns = job["metadata"].get("namespace", "")
    return sorted(
        (
            o
            for o in cluster.all(*res)
            if o["metadata"].get("namespace", "") == ns
            and any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])
        ),
        key=lambda o: o["metadata"]["name"],
    )


def _kill(cluster: FakeCluster, job: Obj, phase: str) -> list[str]:
    """`killPods` of a whole Job, then its status written with `phase`, then its PodGroup."""
    ns, steps, terminating = job["metadata"].get("namespace", ""), [], 0
    for pod in _owned(cluster, job, PODS):
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            terminating += 1
            continue
        if (pod.get("status") or {}).get("phase") in KEPT:
            continue
        marked = {"metadata": {"annotations": {OUT_OF_SYNC: "true"}}}
        cluster.patch(PODS, ns, name, marked, MERGE, dry=False)
        steps.append(f"Pod {name} out of sync")
        gone = cluster.delete(PODS, ns, name, dry=False)
        steps.append(f"Pod {name} Terminating {gone['metadata']['deletionGracePeriodSeconds']}s")
        terminating += 1
    steps.append(_set_phase(cluster, job, phase, terminating))
    uid = job["metadata"]["uid"]
    for pg_name in (f"{job['metadata']['name']}-{uid}", job["metadata"]["name"]):
        if cluster.get(*PODGROUPS, pg_name, ns) is not None:
            cluster.delete(PODGROUPS, ns, pg_name, dry=False)
            steps.append(f"PodGroup {pg_name} deleted")
            break
    return steps


def _sync_aborting(cluster: FakeCluster, job: Obj) -> list[str]:
    """state/aborting.go: kill again; Aborted once no pod is pending, running or terminating."""
    alive = [
        p
        for p in _owned(cluster, job, PODS)
        if p["metadata"].get("deletionTimestamp")
        or (p.get("status") or {}).get("phase") not in KEPT
    ]
    if alive:
        return []
    return [_set_phase(cluster, job, "Aborted", 0)]


def _set_phase(cluster: FakeCluster, job: Obj, phase: str, terminating: int) -> str:
    """The Job's status update (`UpdateStatus`), through the store."""
    ns, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]
    status = dict(cluster.current(JOBS, ns, name).get("status") or {})
    status.update(pending=0, running=0, terminating=terminating)
    status["state"] = {"phase": phase, "lastTransitionTime": iso(cluster.now())}
    cluster.patch(JOBS, ns, name, {"status": status}, MERGE, dry=False)
    return f"Job {name} {phase}"


def _event(job: Obj, cmd: Obj, now: str) -> Obj:
    """The Event `recordJobEvent` writes (its recorder's component: job_controller.go)."""
    meta = job["metadata"]
    ns = meta.get("namespace", "")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{cmd['metadata']['name']}", "namespace": ns},
        "involvedObject": {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": meta["name"],
            "namespace": ns,
            "uid": meta["uid"],
        },
        "reason": "CommandIssued",
        "message": f"Start to execute command {cmd.get('action')}, and clean it up to make sure "
        "executed not more than once.",
        "type": "Normal",
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "source": {"component": "vc-controller-manager"},
    }
