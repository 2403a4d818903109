"""deploy/examples and the Dockerfile: valid objects, corrected queues, whole GPUs, a real policy.

The example cluster is also checked end to end: joined with sim/cluster-state.yaml (as the demo
joins them) it loads through the reclaimer's own cluster-file reader with an idle-able job in a
reclaimable queue and starved demand in a guaranteed one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from manifests import DEPLOY, REPO, Obj, load_yaml, name_of, render, schema_errors, walk

from reclaimer.kube.dumps import load_cluster_view
from reclaimer.kube.objects import kinds
from reclaimer.policy.settings import load_policy

EXAMPLES = DEPLOY / "examples"
QUEUE_SPEC = {"weight", "capability", "deserved", "guarantee", "reclaimable", "priority", "parent"}
PYTORCHJOB_SPEC = {"runPolicy", "pytorchReplicaSpecs", "elasticPolicy", "nprocPerNode"}
RUN_POLICY = {
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
    "suspend",
    "managedBy",
}


def examples() -> list[Obj]:
    return render(EXAMPLES)


def of_kind(kind: str) -> list[Obj]:
    return [o for o in examples() if o["kind"] == kind]


def test_examples_render_and_builtin_kinds_validate() -> None:
    errors = {name_of(o): schema_errors(o) for o in examples()}
    assert not {k: v for k, v in errors.items() if v}, errors
    crds = {o["kind"] for o in examples() if schema_errors(o) is None}
    assert crds == {"Queue", "PyTorchJob"}


def test_queues_are_volcano_queues_without_overcommit_ratio() -> None:
    queues = of_kind("Queue")
    assert {q["metadata"]["name"] for q in queues} == {"research", "production", "interactive"}
    for q in queues:
        assert q["apiVersion"] == "scheduling.volcano.sh/v1beta1"
        assert "namespace" not in q["metadata"], "Queue is cluster-scoped"
        assert set(q["spec"]) <= QUEUE_SPEC, set(q["spec"]) - QUEUE_SPEC
        assert 1 <= q["spec"]["weight"] <= 65535
    reclaimable = {q["metadata"]["name"]: q["spec"].get("reclaimable", True) for q in queues}
    assert reclaimable == {"research": True, "production": False, "interactive": False}


@pytest.mark.parametrize("job", of_kind("PyTorchJob"), ids=lambda o: o["metadata"]["name"])
def test_pytorchjobs_request_whole_gpus_in_a_queue(job: Obj) -> None:
    queues = {q["metadata"]["name"] for q in of_kind("Queue")}
    assert job["apiVersion"] == "kubeflow.org/v1"
    assert set(job["spec"]) <= PYTORCHJOB_SPEC
    assert set(job["spec"]["runPolicy"]) <= RUN_POLICY
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["queue"] in queues
    for role, replica in job["spec"]["pytorchReplicaSpecs"].items():
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": role.lower()}}
        pod["spec"] = replica["template"]["spec"]
        assert schema_errors(pod) == "", f"{role}: {schema_errors(pod)}"
        for c in pod["spec"]["containers"]:
            res = c["resources"]
            assert res["requests"]["nvidia.com/gpu"] == res["limits"]["nvidia.com/gpu"]
            assert isinstance(res["limits"]["nvidia.com/gpu"], int)


def test_no_fractional_gpu_anywhere_in_examples() -> None:
    objs = examples() + load_yaml(EXAMPLES / "sim" / "cluster-state.yaml")
    found = [(name_of(o), p, v) for o in objs for p, k, v in walk(o) if k == "nvidia.com/gpu"]
    assert found
    assert all(re.fullmatch(r"\d+", str(v)) for _, _, v in found), found
    assert not [p for o in objs for p, k, _ in walk(o) if k == "overcommitRatio"]


def test_time_slicing_config_has_the_device_plugin_shape() -> None:
    (cm,) = [o for o in of_kind("ConfigMap") if o["metadata"]["name"] == "time-slicing-config"]
    replicas = {}
    for key, text in cm["data"].items():
        cfg = yaml.safe_load(text)
        assert cfg["version"] == "v1"
        resources = cfg.get("sharing", {}).get("timeSlicing", {}).get("resources", [])
        for r in resources:
            assert r["name"] == "nvidia.com/gpu"
            assert isinstance(r["replicas"], int) and r["replicas"] >= 2
        replicas[key] = resources[0]["replicas"] if resources else 1
    assert replicas == {"whole": 1, "ts-2": 2, "ts-4": 4}


def test_gpu_sharing_config_is_a_valid_policy() -> None:
    (cm,) = render(EXAMPLES / "gpu-sharing-config")
    assert cm["kind"] == "ConfigMap" and cm["metadata"]["name"] == "gpu-sharing-config"
    policy = load_policy(cm["data"]["policy.yaml"])
    classes = {w.name: w.max_replicas for w in policy.time_slicing.workloads}
    assert classes == {"inference": 6, "notebook": 3, "training": 1}
    assert policy.actions.preempt


def demo_cluster_text() -> str:
    """The example objects, overridden by the runtime state, as scripts/demo.py joins them."""
    state = load_yaml(EXAMPLES / "sim" / "cluster-state.yaml")
    keys = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in state}
    kept = [
        o
        for o in examples()
        if (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) not in keys
    ]
    return yaml.safe_dump_all(kept + state)


def test_example_cluster_has_an_idle_candidate_and_starved_demand() -> None:
    view = load_cluster_view(demo_cluster_text(), taken_at=1.8e9)
    jobs = {j.key: j for j in view.jobs}
    queues = {q.name: q for q in view.queues}
    bert = jobs["research/bert-finetune"]
    assert bert.gpus == 2 and len(bert.pods) == 2 and queues[bert.queue].reclaimable
    assert [(d.job, d.queue, d.gpus) for d in view.pending] == [
        ("production/llm-pretrain", "production", 2)
    ]
    assert not queues["production"].reclaimable


def test_sim_workloads_name_the_example_pods() -> None:
    state_pods = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["spec"]["nodeName"]
        for o in load_yaml(EXAMPLES / "sim" / "cluster-state.yaml")
        if o["kind"] == "Pod"
    }
    sim_pods = {}
    for path in (EXAMPLES / "sim").glob("*.workloads.yaml"):
        for w in yaml.safe_load(path.read_text("utf-8")):
            sim_pods[f"{w['namespace']}/{w['pod']}"] = path.name.removesuffix(".workloads.yaml")
    assert sim_pods == state_pods


def _dockerfile() -> list[tuple[str, str]]:
    text = (REPO / "Dockerfile").read_text("utf-8").replace("\\\n", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1]) for ln in lines]


def test_dockerfile_runs_as_non_root_from_python_slim() -> None:
    steps = _dockerfile()
    froms = [arg for op, arg in steps if op == "FROM"]
    assert froms and all(re.match(r"python:3\.1[1-9]-slim", f) for f in froms)
    final = steps[max(i for i, (op, _) in enumerate(steps) if op == "FROM") :]
    users = [arg for op, arg in final if op == "USER"]
    assert users, "the final stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid not in ("0", "root")
    (deployment, *_) = load_yaml(DEPLOY / "base" / "reclaimer-deployment.yaml")
    pod_sc: dict[str, Any] = deployment["spec"]["template"]["spec"]["securityContext"]
    assert str(pod_sc["runAsUser"]) == uid


def test_examples_directory_is_listed_in_its_kustomization() -> None:
    listed = set(yaml.safe_load((EXAMPLES / "kustomization.yaml").read_text("utf-8"))["resources"])
    on_disk = {p.name for p in EXAMPLES.glob("*.yaml") if p.name != "kustomization.yaml"}
    assert listed == on_disk
    assert Path(EXAMPLES / "gpu-sharing-config" / "policy.yaml").exists()


WORKLOADS = EXAMPLES / "workloads"


def test_every_suspendable_kind_has_an_example_the_reclaimer_reads() -> None:
    """One file per kind; each renders, is stoppable with the RBAC shipped, and becomes one gang."""
    objs = render(WORKLOADS)
    found = {o["kind"] if o["apiVersion"] != "batch/v1" else "BatchJob" for o in objs}
    wanted = {w.job_kind.value for w in kinds.SUSPENDABLE} - {"PyTorchJob"}  # ../pytorchjob-*
    assert found == wanted
    assert not [e for o in objs if (e := schema_errors(o))], "built-in kinds must validate"
    for obj in objs:
        view = load_cluster_view(yaml.safe_dump(obj), taken_at=1.8e9)
        (job,) = view.jobs
        assert job.kind.value in found and job.gpus >= 1 and job.queue == "research"
        for c in (p for _, k, p in walk(obj) if k == "nvidia.com/gpu"):
            assert isinstance(c, int)
