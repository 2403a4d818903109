"""One cluster snapshot per cycle from the API server: list everything, then convert (pure).

Blocking `kubernetes` calls run in a worker thread (`read_cluster` wraps `read_cluster_sync` in
`asyncio.to_thread`). Lists are paged; an expired continue token (410) restarts a list once; a
throttled page (429) is asked again after the `Retry-After` the API server gives (bounded, a
few times, one log line each). A
custom resource whose group/version the server does not serve (404: Volcano or Kubeflow not
installed) is read as empty and noted in `problems`, so the planner runs without what needs it; any
other failure raises `ClusterReadError`, which the loop turns into "incomplete data, no actions".
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from reclaimer.kube.client import KubeApi, KubeError, call
from reclaimer.kube.objects import kinds, kueue
from reclaimer.kube.objects import resources as r
from reclaimer.kube.objects.convert import ClusterObjects, to_cluster_view
from reclaimer.kube.objects.dra import GpuClasses
from reclaimer.model import ClusterView

log = logging.getLogger(__name__)
PAGE_SIZE = 500
THROTTLE_RETRIES = 3  # a page answered 429 is asked again this many times
MAX_RETRY_AFTER_S = 10.0  # a longer Retry-After waits this long: the cycle has a deadline
_DISABLED = {
    r.QUEUES: "Volcano Queues not served (scheduling.volcano.sh/v1beta1): queue shares unknown",
    r.PODGROUPS: "Volcano PodGroups not served (scheduling.volcano.sh/v1beta1): no pending demand",
}


def _disabled(res: r.Resource) -> str:
    what = _DISABLED.get(res)
    if what is not None:
        return what
    return f"{res.kind}s not served ({res.api_version}): {res.kind}s ignored"


class ClusterReadError(Exception):
    """The snapshot is incomplete: the cycle must not act on it."""


def _paged(
    api: KubeApi, what: str, method: Callable[..., Any], *args: Any, **kwargs: Any
) -> list[Any]:
    """Every item, page by page; a 410 Expired (the list's revision was compacted between
    pages) starts the list again, once: a consistent list, never a mix of two."""
    try:
        return _pages(api, what, method, *args, **kwargs)
    except KubeError as exc:
        if exc.status != 410:
            raise
        log.info("list restarted: its continue token expired (%s)", exc.message)
        return _pages(api, what, method, *args, **kwargs)


def _pages(
    api: KubeApi, what: str, method: Callable[..., Any], *args: Any, **kwargs: Any
) -> list[Any]:
    items: list[Any] = []
    token: str | None = None
    while True:
        page = _page(api, what, method, *args, limit=PAGE_SIZE, _continue=token, **kwargs)
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue") or None
        if token is None:
            return items


def _page(api: KubeApi, what: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """One page; a throttled answer (429) is asked again after its `Retry-After` (1 s when it
    has none, at most `MAX_RETRY_AFTER_S`), up to `THROTTLE_RETRIES` times, with one log line
    each: the API server sheds load this way (priority and fairness) and says when to return."""
    for attempt in range(THROTTLE_RETRIES + 1):
        try:
            return call(api, method, *args, **kwargs)
        except KubeError as exc:
            if exc.status != 429 or attempt == THROTTLE_RETRIES:
                raise
            asked = 1.0 if exc.retry_after is None else exc.retry_after
            wait = min(asked, MAX_RETRY_AFTER_S)
            log.warning(
                "listing %s: throttled by the API server (429, Retry-After %s); asking again"
                " in %gs (%d/%d)",
                what,
                "none" if exc.retry_after is None else f"{exc.retry_after:g}s",
                wait,
                attempt + 1,
                THROTTLE_RETRIES,
            )
            api.sleep(wait)
    raise AssertionError("unreachable")  # the last attempt returned or raised


def _with_kind(items: list[Any], res: r.Resource) -> list[Any]:
    # list items from the API carry no kind/apiVersion: the converter tells workload kinds
    # apart by them (a batch/v1 Job from a Volcano Job), as it does for a dump
    for item in items:
        item.setdefault("kind", res.kind)
        item.setdefault("apiVersion", res.api_version)
    return items


def list_custom(api: KubeApi, res: r.Resource, problems: list[str]) -> list[Any]:
    """Every object of a custom resource, or [] (with a problem) when its CRD is absent."""
    try:
        items = _paged(
            api,
            f"{res.plural}.{res.group}",
            api.custom.list_cluster_custom_object,
            res.group,
            res.version,
            res.plural,
        )
    except KubeError as exc:
        if exc.status == 404:
            log.info("%s; continuing without them", _disabled(res))
            problems.append(_disabled(res))
            return []
        raise ClusterReadError(f"listing {res.plural}.{res.group}: {exc}") from exc
    return _with_kind(items, res)


def read_device_plugin(api: KubeApi, ref: r.ConfigMapRef, problems: list[str]) -> list[Any]:
    try:
        cm = call(api, api.core.read_namespaced_config_map, ref.name, ref.namespace)
    except KubeError as exc:
        if exc.status == 404:
            msg = f"device-plugin ConfigMap {ref.namespace}/{ref.name} not found: reshape disabled"
            log.warning(msg)
            problems.append(msg)
            return []
        raise ClusterReadError(f"reading ConfigMap {ref.namespace}/{ref.name}: {exc}") from exc
    return _with_kind([cm], r.CONFIGMAPS)


def _optional(api: KubeApi, resources: list[r.Resource], problems: list[str]) -> list[Any]:
    """Objects of kinds a cluster may not have installed; the missing ones noted in one line."""
    found: list[Any] = []
    missing: list[str] = []
    for res in resources:
        found += list_custom(api, res, missing)
    if missing:
        kinds_ = ", ".join(m.split(" not served")[0].removesuffix("s") for m in missing)
        problems.append(f"not installed, so ignored: {kinds_}")
    return found


def list_dra(api: KubeApi) -> dict[str, list[Any]]:
    """ResourceClaims, their templates, ResourceSlices and DeviceClasses, each at the first of
    `resource.k8s.io` v1, v1beta2, v1beta1 the server serves (v1 from Kubernetes 1.34, v1beta1
    only on 1.32); a server that serves none has no DRA: nothing to read, nothing noted."""
    out: dict[str, list[Any]] = {}
    for res in r.DRA_RESOURCES:
        out[res.plural] = []
        for version in r.DRA_VERSIONS:
            served = dataclasses.replace(res, version=version)
            what = f"{res.plural}.{res.group}/{version}"
            method = api.custom.list_cluster_custom_object
            try:
                items = _paged(api, what, method, res.group, version, res.plural)
            except KubeError as exc:
                if exc.status == 404:
                    continue
                raise ClusterReadError(f"listing {what}: {exc}") from exc
            out[res.plural] = _with_kind(items, served)
            break
    return out


def list_kueue(api: KubeApi, problems: list[str]) -> dict[str, list[Any]]:
    """Kueue's ClusterQueues, LocalQueues and Workloads in the newest version the server serves
    (`kueue.VERSIONS`), as `ClusterObjects` fields; none (with a problem) when it serves none."""
    for version in kueue.VERSIONS:
        res = kueue.cluster_queues(version)
        try:
            what, lister = f"{res.plural}.{res.group}", api.custom.list_cluster_custom_object
            cqs = _paged(api, what, lister, res.group, res.version, res.plural)
        except KubeError as exc:
            if exc.status == 404:
                continue  # not this version: an older Kueue, or none
            raise ClusterReadError(f"listing {res.plural}.{res.group}: {exc}") from exc
        return {
            "cluster_queues": _with_kind(cqs, res),
            "local_queues": list_custom(api, kueue.local_queues(version), problems),
            "kueue_workloads": list_custom(api, kueue.workloads(version), problems),
        }
    served = ", ".join(kueue.VERSIONS)
    problems.append(f"Kueue not installed ({kueue.GROUP} {served} not served), so ignored")
    return {}


def _list_core(api: KubeApi, res: r.Resource, method: Callable[..., Any], **kw: Any) -> list[Any]:
    try:
        return _with_kind(_paged(api, res.plural, method, **kw), res)
    except KubeError as exc:
        raise ClusterReadError(f"listing {res.plural}: {exc}") from exc


def list_objects(api: KubeApi, device_plugin: r.ConfigMapRef) -> ClusterObjects:
    """Every object the converter needs (blocking). Raises `ClusterReadError`."""
    problems: list[str] = []
    live_pods = "status.phase!=Succeeded,status.phase!=Failed"
    queues = list_custom(api, r.QUEUES, problems)
    podgroups = list_custom(api, r.PODGROUPS, problems)
    volcano_jobs = list_custom(api, r.VOLCANO_JOBS, problems)
    dra = list_dra(api)
    return ClusterObjects(
        queues=queues,
        podgroups=podgroups,
        volcano_jobs=volcano_jobs,
        # Commands Volcano has not taken up yet: an AbortJob waiting is a stop made
        commands=list_custom(api, r.VOLCANO_COMMANDS, problems) if volcano_jobs else [],
        workloads=_optional(api, [w.resource for w in kinds.SUSPENDABLE], problems),
        controllers=_optional(api, list(kinds.OWNER_CHAIN), problems),
        pods=_list_core(
            api, r.PODS, api.core.list_pod_for_all_namespaces, field_selector=live_pods
        ),
        nodes=_list_core(api, r.NODES, api.core.list_node),
        configmaps=read_device_plugin(api, device_plugin, problems),
        pdbs=_list_core(api, r.PDBS, api.policy.list_pod_disruption_budget_for_all_namespaces),
        priority_classes=_list_core(api, r.PRIORITY_CLASSES, api.scheduling.list_priority_class),
        **list_kueue(api, problems),
        problems=tuple(problems),
        resource_claims=dra[r.RESOURCE_CLAIMS.plural],
        resource_claim_templates=dra[r.RESOURCE_CLAIM_TEMPLATES.plural],
        resource_slices=dra[r.RESOURCE_SLICES.plural],
        device_classes=dra[r.DEVICE_CLASSES.plural],
    )


def read_cluster_sync(
    api: KubeApi,
    now: float,
    device_plugin: r.ConfigMapRef | None = None,
    gpu_classes: GpuClasses | None = None,
) -> ClusterView:
    """List and convert (blocking). Raises `ClusterReadError` on incomplete data.
    `gpu_classes`: which DRA drivers and device classes are GPUs (the policy's `dra`)."""
    ref = device_plugin or r.ConfigMapRef()
    return to_cluster_view(list_objects(api, ref), now, ref, gpu_classes)


async def read_cluster(
    api: KubeApi,
    now: float,
    device_plugin: r.ConfigMapRef | None = None,
    gpu_classes: GpuClasses | None = None,
) -> ClusterView:
    """`read_cluster_sync` in a worker thread, for the controller's event loop."""
    return await asyncio.to_thread(read_cluster_sync, api, now, device_plugin, gpu_classes)
