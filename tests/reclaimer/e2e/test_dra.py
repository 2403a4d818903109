"""GPUs allocated through DRA, end to end: each cycle its own `gpu-reclaimer run --once`
process, the real client against the fake API server (serving `resource.k8s.io/v1` and running
the resourceclaim controller when the test says so), a real Prometheus holding the history.

The DRA world (`dra_world`): research's idle and busy PyTorchJobs each hold 2 of gpu-node-1's 4
GPUs through claims made from a template; prod's job waits with a pending pod whose template asks
for 2. The idle job is suspended for it; its GPUs are room in flight while its pod terminates and
still once the pod is gone and its claim, reserved for no one, waits for the controller to
deallocate it: no second job (the busy one is fair game by then) is taken meanwhile. Once the
claim is gone the room is free, prod's pod is bound to it, and when prod's job is done the
suspended job is resumed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from dra_world import dra_objects
from fakeapi import FakeCluster
from fakeapi import resourceclaims as rc
from promserver import PromServer
from safety_world import BUSY, IDLE, PENDING, POLICY, history, ts

from e2e.test_safety import cycle, preempted, skips

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
world_history = history
world_objects = dra_objects
PYT = ("kubeflow.org", "v1", "pytorchjobs")
PODS = ("", "v1", "pods")


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


def _cycle(prom: PromServer, kubeconfig: Path, policy: Path) -> dict[str, Any]:
    code, report, err = cycle(prom.url, kubeconfig, "--apply", "--policy-file", str(policy))
    assert code == 0, err
    return report


def _suspended(cluster: FakeCluster, name: str) -> bool:
    job = cluster.get(*PYT, name, "research")
    assert job is not None
    return bool(job["spec"]["runPolicy"].get("suspend"))


def test_an_idle_dra_job_is_stopped_held_in_flight_until_its_claim_is_freed_and_resumed(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, policy: Path, now: float
) -> None:
    assert rc.reconcile(cluster)[0].startswith("created claim prod/llm-master-0-gpus-")
    first = _cycle(prom, kubeconfig, policy)
    assert preempted(first) == [IDLE]
    detail = first["plan"]["actions"][0]["evidence"]["detail"]
    assert "frees 2 GPUs through DRA (gpu.nvidia.com)" in detail, detail
    assert skips(first)[BUSY] == "NotForecastIdle"
    assert (first["fleet"]["allocated_gpu_slots"], first["fleet"]["allocated_gpus"]) == (4, 4.0)
    assert _suspended(cluster, "notebook") and not _suspended(cluster, "train")

    cluster.delete(PODS, "research", "notebook-master-0", dry=False)  # its operator's part
    second = _cycle(prom, kubeconfig, policy)
    assert preempted(second) == [] and skips(second)[PENDING] == "RoomInFlight"

    assert cluster.finish_termination("research", "notebook-master-0") == 1
    left = cluster.get(*rc.CLAIMS, "notebook-master-0-gpus-x", "research")
    assert left is not None and left["status"]["allocation"]  # not yet deallocated
    third = _cycle(prom, kubeconfig, policy)
    assert preempted(third) == [], "the claim's GPUs are coming: no second victim"
    assert skips(third)[PENDING] == "RoomInFlight"
    why = next(s["detail"] for s in third["plan"]["skipped"] if s["target"] == PENDING)
    assert "2 GPUs through DRA (gpu.nvidia.com) being released" in why, why
    assert not _suspended(cluster, "train")

    steps = rc.reconcile(cluster)
    assert "deleted claim research/notebook-master-0-gpus-x" in steps
    fourth = _cycle(prom, kubeconfig, policy)
    assert preempted(fourth) == [] and skips(fourth)[PENDING] == "FitsInFreeCapacity"

    rc.bind(cluster, "prod", "llm-master-0", "gpu-node-1", ["gpu-0", "gpu-1"])
    cluster.delete(("scheduling.volcano.sh", "v1beta1", "podgroups"), "prod", "llm", dry=False)
    cluster.delete(PODS, "prod", "llm-master-0", dry=False)  # prod's job is done
    cluster.finish_termination("prod", "llm-master-0")
    rc.reconcile(cluster)
    job = cluster.get(*PYT, "notebook", "research")
    assert job is not None
    job["metadata"]["annotations"]["gpu-reclaim.io/suspended-at"] = ts(now - 3600)
    fifth = _cycle(prom, kubeconfig, policy)
    assert [(a["kind"], a["target"]) for a in fifth["plan"]["actions"]] == [("resume", IDLE)]
    assert [o["outcome"] for o in fifth["outcomes"]] == ["applied"], fifth["outcomes"]
    assert not _suspended(cluster, "notebook")


def test_a_dump_with_dra_objects_plans_as_the_live_cluster(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, tmp_path: Path, now: float
) -> None:
    """`kubectl get ... -o yaml` of the same objects, read with `--cluster-file`."""
    rc.reconcile(cluster)
    dump = tmp_path / "dump.yaml"
    items = [o for objs in cluster.objects.values() for o in objs.values()]
    dump.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    code, live, err = cycle(prom.url, kubeconfig)
    assert code == 0, err
    code, offline, err = cycle(prom.url, kubeconfig, "--cluster-file", str(dump))
    assert code == 0, err
    assert preempted(live) == [IDLE]
    assert [(a["kind"], a["target"], a["reason"]) for a in offline["plan"]["actions"]] == [
        (a["kind"], a["target"], a["reason"]) for a in live["plan"]["actions"]
    ]
    assert skips(offline) == skips(live)
    # what is allocated; how busy it was moves with each process's own `now` over noisy samples
    held = ("allocated_gpu_slots", "allocated_gpus", "allocated_mig_instances")
    assert [offline["fleet"][k] for k in held] == [live["fleet"][k] for k in held] == [4, 4.0, 0]
