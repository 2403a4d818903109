"""Kueue's controllers, as far as the reclaimer meets them: a Workload deactivated (`spec.active`
false) is evicted, its job suspended and its quota released; one reactivated is requeued and
admitted again when its ClusterQueue (with its cohort) has the quota.

Built from kubernetes-sigs/kueue: pkg/controller/core/workload_controller.go `Reconcile` evicts an
admitted Workload that is no longer active (`Evicted` condition, reason `Deactivated`, the v1beta2
`WorkloadDeactivated`; apis/kueue/v1beta2/workload_types.go); the job reconciler
(pkg/controller/jobframework/reconciler.go) then stops the job through its integration (a batch
Job: `spec.suspend` true; the Job controller, kubernetes pkg/controller/job/job_controller.go,
deletes its active pods; unsuspended, it creates `parallelism` pods, which wait unbound until the
test, playing the scheduler, binds them) and, once the job has no active pods (a terminating pod is
not active for the Job controller), unsets the quota reservation (`QuotaReserved` and `Admitted`
False, `status.admission` cleared). Setting `spec.active` back to true requeues it (`Requeued`
True, reason `Reactivated`) and the scheduler (pkg/scheduler/scheduler.go) admits it once its
ClusterQueue's nominal quota plus what it may borrow in its cohort covers its pod sets; it then
unsuspends the job. Only the `nvidia.com/gpu` quota is modelled, with no flavors but the first, no
lending limits and no preemption of Kueue's own (every `reclaimWithinCohort` is `Never`, the
default): the gap the reclaimer fills.

Here the reconcile runs right after each write the API accepts to a Workload (not after
dry-runs), as the controllers would soon after, and ends with the scheduler's pass (`schedule`).
"""

from __future__ import annotations

from typing import Any, Protocol

Obj = dict[str, Any]
Res = tuple[str, str, str]
GROUP = "kueue.x-k8s.io"
GPU = "nvidia.com/gpu"
JOBS: Res = ("batch", "v1", "jobs")
PODS: Res = ("", "v1", "pods")


class Store(Protocol):
    kueue_versions: frozenset[str]
    objects: dict[Res, dict[tuple[str, str], Obj]]

    def get(self, group: str, version: str, plural: str, name: str, ns: str = "") -> Obj | None: ...

    def _store(self, res: Res, obj: Obj) -> Obj: ...

    def delete(self, res: Res, ns: str, name: str, dry: bool, options: Any = None) -> Obj: ...

    def now(self) -> float: ...


def _true(obj: Obj, kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _set(obj: Obj, kind: str, status: bool, reason: str, at: str) -> None:
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    conditions[:] = [c for c in conditions if c.get("type") != kind]
    value = "True" if status else "False"
    conditions.append({"type": kind, "status": value, "reason": reason, "lastTransitionTime": at})


def _gpus(obj: Obj) -> int:
    total = 0
    for ps in (obj.get("spec") or {}).get("podSets") or []:
        for c in ((ps.get("template") or {}).get("spec") or {}).get("containers") or []:
            res = c.get("resources") or {}
            want = (res.get("requests") or {}).get(GPU) or (res.get("limits") or {}).get(GPU)
            total += int(ps.get("count", 1)) * int(want or 0)
    return total


def _owner_job(store: Store, wl: Obj) -> Obj | None:
    for ref in wl["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Job":
            return store.get(*JOBS, ref["name"], wl["metadata"]["namespace"])
    return None


def _suspend_job(store: Store, wl: Obj, suspend: bool) -> None:
    job = _owner_job(store, wl)
    if job is None or bool(job["spec"].get("suspend")) == suspend:
        return
    job["spec"]["suspend"] = suspend
    store._store(JOBS, job)
    if not suspend:  # the Job controller creates `parallelism` pods; the scheduler binds them
        _create_pods(store, job)
        return
    if suspend:  # the Job controller deletes a suspended Job's active pods
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        for (pns, pname), pod in list(store.objects.get(PODS, {}).items()):
            refs = pod["metadata"].get("ownerReferences") or []
            mine = any(r.get("kind") == "Job" and r.get("name") == name for r in refs)
            if pns == ns and mine and not pod["metadata"].get("deletionTimestamp"):
                store.delete(PODS, pns, pname, dry=False)


def _create_pods(store: Store, job: Obj) -> None:
    meta = job["metadata"]
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"]}
    template = job["spec"].get("template") or {}
    for i in range(int(job["spec"].get("parallelism", 1))):
        name = f"{meta['name']}-{store.version:x}-{i}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": {
                    **(template.get("metadata") or {}).get("labels", {}),
                    "job-name": meta["name"],
                },
                "ownerReferences": [{**owner, "controller": True}],
            },
            "spec": {k: v for k, v in (template.get("spec") or {}).items() if k != "nodeName"},
            "status": {"phase": "Pending"},
        }
        store._store(PODS, pod)


def reconcile(store: Store, res: Res, ns: str, name: str, at: str) -> None:
    """After a write to `res` ns/name: Kueue's reaction to a Workload's `spec.active`."""
    if res[0] != GROUP or res[2] != "workloads":
        return
    wl = store.get(*res, name, ns)
    if wl is None:
        return
    active = (wl.get("spec") or {}).get("active", True)
    if not active and _true(wl, "QuotaReserved"):
        _set(wl, "Evicted", True, "Deactivated", at)
        _set(wl, "Requeued", False, "Deactivated", at)
        _suspend_job(store, wl, True)
        _set(wl, "QuotaReserved", False, "Pending", at)
        _set(wl, "Admitted", False, "NoReservation", at)
        wl["status"].pop("admission", None)
        store._store(res, wl)
    elif active and _true(wl, "Evicted"):
        _set(wl, "Evicted", False, "Reactivated", at)
        _set(wl, "Requeued", True, "Reactivated", at)
        store._store(res, wl)
    schedule(store, res[1], at)


def _quota(cq: Obj) -> tuple[int, int | None]:
    """(nominal GPUs, borrowing limit or None) of a ClusterQueue's first GPU flavor."""
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                if r.get("name") == GPU:
                    limit = r.get("borrowingLimit")
                    return int(r.get("nominalQuota", 0)), None if limit is None else int(limit)
    return 0, None


def _cohort(cq: Obj) -> str:
    spec = cq.get("spec") or {}
    return str(spec.get("cohortName") or spec.get("cohort") or "")


def schedule(store: Store, version: str, at: str) -> None:
    """Admit every active Workload waiting for quota that now fits, oldest first."""
    res = (GROUP, version, "workloads")
    cqs = {k[1]: cq for k, cq in store.objects.get((GROUP, version, "clusterqueues"), {}).items()}
    lqs = store.objects.get((GROUP, version, "localqueues"), {})
    wls = sorted(store.objects.get(res, {}).values(), key=lambda w: w["metadata"]["name"])
    for wl in wls:
        spec, meta = wl.get("spec") or {}, wl["metadata"]
        lq = lqs.get((meta["namespace"], spec.get("queueName", "")))
        cq_name = (lq or {}).get("spec", {}).get("clusterQueue", "")
        if not spec.get("active", True) or _true(wl, "QuotaReserved") or cq_name not in cqs:
            continue
        if _true(wl, "Finished") or _gpus(wl) > _room(cqs, cq_name, wls):
            continue
        wl.setdefault("status", {})["admission"] = {
            "clusterQueue": cq_name,
            "podSetAssignments": [
                {"name": ps["name"], "count": ps.get("count", 1), "flavors": {GPU: "default"}}
                for ps in spec.get("podSets") or []
            ],
        }
        _set(wl, "QuotaReserved", True, "QuotaReserved", at)
        _set(wl, "Admitted", True, "Admitted", at)
        _set(wl, "Evicted", False, "QuotaReserved", at)
        store._store(res, wl)
        _suspend_job(store, wl, False)


def _room(cqs: dict[str, Obj], name: str, wls: list[Obj]) -> int:
    """GPUs `name` may still reserve: its unused nominal quota, plus the unused quota of its
    cohort's other queues up to its borrowing limit."""
    used = {n: 0 for n in cqs}
    for wl in wls:
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
        if cq in used and _true(wl, "QuotaReserved") and not _true(wl, "Finished"):
            used[cq] += _gpus(wl)
    nominal, limit = _quota(cqs[name])
    own = nominal - used[name]
    cohort = _cohort(cqs[name])
    if not cohort:
        return own
    members = [n for n, cq in cqs.items() if _cohort(cq) == cohort]
    pool = sum(_quota(cqs[n])[0] - used[n] for n in members)
    borrowed_now = max(0, -own)
    may_borrow = None if limit is None else limit - borrowed_now
    room = pool if may_borrow is None else min(pool, max(own, 0) + may_borrow)
    return max(0, room)
