"""The pure converter: object dicts -> ClusterView, on the fixture cluster and on edge cases."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from repo_paths import FIXTURES

from reclaimer.kube.dumps import parse_objects
from reclaimer.kube.objects.convert import ClusterObjects, to_cluster_view
from reclaimer.kube.objects.gangs import pending_since, volcano_job
from reclaimer.kube.objects.quantity import QuantityError, parse_quantity
from reclaimer.model import JobKind, PodPhase, QueueState

FIXTURE = FIXTURES / "cluster" / "cluster.yaml"


@pytest.fixture(scope="module")
def view() -> Any:
    return to_cluster_view(parse_objects(FIXTURE.read_text()), taken_at=5.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2", 2.0),
        ("500m", 0.5),
        ("1Gi", 2.0**30),
        ("1.5k", 1500.0),
        ("1e3", 1000.0),
        ("63500m", 63.5),
        (4, 4.0),
    ],
    ids=["int", "milli", "binary", "decimal-si", "exponent", "cpu-milli", "number"],
)
def test_quantities(text: object, expected: float) -> None:
    assert parse_quantity(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "abc", "1Qi", "--1", "²", True], ids=str)
def test_bad_quantities(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_queues(view: Any) -> None:
    queues = {q.name: q for q in view.queues}
    assert queues["research"].deserved_gpus == 4 and queues["research"].capability_gpus == 8
    assert queues["research"].reclaimable  # unset counts as true
    assert not queues["prod"].reclaimable
    assert queues["prod"].guarantee_gpus == 2 and queues["prod"].priority == 10
    assert queues["default"].state is QueueState.CLOSED


@pytest.mark.parametrize(
    ("key", "kind", "queue", "gpus", "min_member", "npods"),
    [
        ("research/bert-train", JobKind.PYTORCH_JOB, "research", 2, 2, 2),
        ("research/sim-sweep", JobKind.VOLCANO_JOB, "research", 2, 2, 2),
        ("team-a/notebook-0", JobKind.POD, "research", 1, 1, 1),
        ("prod/llm-finetune", JobKind.PYTORCH_JOB, "prod", 4, 2, 0),
    ],
    ids=["pytorchjob", "volcano-job", "bare-pod", "pending-pytorchjob"],
)
def test_gangs(
    view: Any, key: str, kind: JobKind, queue: str, gpus: int, min_member: int, npods: int
) -> None:
    job = {j.key: j for j in view.jobs}[key]
    assert (job.kind, job.queue, job.gpus, job.min_member, len(job.pods)) == (
        kind,
        queue,
        gpus,
        min_member,
        npods,
    )


def test_job_details(view: Any) -> None:
    jobs = {j.key: j for j in view.jobs}
    assert jobs["research/sim-sweep"].priority == 1000  # from PriorityClass "high"
    assert jobs["team-a/notebook-0"].priority == 5  # pod spec.priority wins
    assert jobs["research/bert-train"].workload_class == "training"
    old = jobs["research/old-train"]
    assert old.suspended and old.suspended_by_reclaimer
    assert not jobs["research/bert-train"].suspended_by_reclaimer
    assert jobs["research/sim-sweep"].retries_left == 3  # Volcano's default maxRetry, none used
    assert jobs["research/bert-train"].retries_left is None  # PyTorchJobs have no retry count


@pytest.mark.parametrize(
    ("spec", "status", "left"),
    [
        pytest.param({}, {}, 3, id="defaults"),
        pytest.param({"maxRetry": 5}, {"retryCount": 1}, 4, id="set"),
        pytest.param({}, {"retryCount": 2}, 1, id="last-retry"),
    ],
)
def test_volcano_job_retries_left(spec: dict[str, Any], status: dict[str, Any], left: int) -> None:
    obj = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
        "spec": {"queue": "q", "tasks": [], **spec},
        "status": {"state": {"phase": "Running"}, **status},
    }
    job = volcano_job(obj, {})
    assert job is not None and job.retries_left == left


def test_pods_keep_gpu_pods_only_live(view: Any) -> None:
    pods = {p.key: p for p in view.pods}
    assert "team-a/done-job" not in pods  # Succeeded holds no GPU
    assert pods["serving/infer-7d9f-abc"].job is None  # a Deployment's pod joins no gang
    assert pods["team-b/waiting-0"].phase is PodPhase.PENDING
    assert dict(view.unmanaged) == {
        "serving/infer-7d9f-abc": "run by ReplicaSet (apps/v1): not a kind the reclaimer can stop "
        "(its controller would recreate the pod)"
    }
    assert "1 GPU pods in no workload the reclaimer can stop" in view.problems


def test_nodes_and_timeslicing(view: Any) -> None:
    nodes = {n.name: n for n in view.nodes}
    assert set(nodes) == {"gpu-node-1", "gpu-node-2"}  # the CPU node is no GPU node
    assert (nodes["gpu-node-2"].gpus, nodes["gpu-node-2"].replicas) == (2, 4)
    assert (nodes["gpu-node-1"].gpus, nodes["gpu-node-1"].replicas) == (4, 1)
    assert nodes["gpu-node-1"].workload_classes == ("training",)
    assert nodes["gpu-node-2"].last_reshape is not None


def test_pending_demand(view: Any) -> None:
    pending = {d.job: d for d in view.pending}
    assert set(pending) == {"prod/llm-finetune", "team-b/waiting-0"}
    assert (pending["prod/llm-finetune"].gpus, pending["prod/llm-finetune"].queue) == (4, "prod")
    assert pending["team-b/waiting-0"].queue == "prod"


def test_last_actions_and_pdb(view: Any) -> None:
    assert set(view.last_actions) == {"research/old-train", "gpu-node-2"}
    jobs = {j.key: j for j in view.jobs}
    assert jobs["team-a/notebook-0"].disruption_block == (
        "PodDisruptionBudget team-a/notebook-pdb allows 0 disruption(s); "
        "stopping team-a/notebook-0 would disrupt 1 pod(s) it selects"
    )
    assert all(not j.disruption_block for k, j in jobs.items() if k != "team-a/notebook-0")


@pytest.mark.parametrize(
    ("field", "obj", "problem"),
    [
        (
            "pods",
            {
                "metadata": {"name": "p", "namespace": "n"},
                "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "lots"}}}]},
            },
            "Pod n/p",
        ),
        (
            "queues",
            {"metadata": {"name": "q"}, "spec": {"weight": "heavy"}},
            "Queue q",
        ),
        (
            "nodes",
            {
                "metadata": {"name": "n1", "labels": {"nvidia.com/device-plugin.config": "gone"}},
                "status": {"capacity": {"nvidia.com/gpu": "4"}},
            },
            "'gone' not found",
        ),
        (
            "workloads",
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "metadata": {"name": "j", "namespace": "n"},
                "spec": {
                    "pytorchReplicaSpecs": {
                        "Worker": {
                            "replicas": 1,
                            "template": {
                                "spec": {
                                    "containers": [
                                        {"resources": {"limits": {"nvidia.com/gpu": "500m"}}}
                                    ]
                                }
                            },
                        }
                    }
                },
            },
            "whole number",
        ),
    ],
    ids=["bad-gpu-quantity", "bad-weight", "missing-config-key", "fractional-gpu"],
)
def test_bad_objects_become_problems(field: str, obj: dict[str, Any], problem: str) -> None:
    view = to_cluster_view(ClusterObjects(**{field: [obj]}), taken_at=0.0)  # type: ignore[arg-type]
    assert any(problem in p for p in view.problems), view.problems


def test_missing_crd_problems_pass_through() -> None:
    objs = ClusterObjects(problems=("Volcano CRDs not installed",))
    assert to_cluster_view(objs, 0.0).problems == ("Volcano CRDs not installed",)


def test_fixture_is_valid_yaml_documents() -> None:
    docs = [d for d in yaml.safe_load_all(FIXTURE.read_text()) if d]
    assert len(docs) > 20


def _pg(conditions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "pg", "namespace": "ns", "creationTimestamp": "2026-11-29T09:00:00Z"},
        "status": {"phase": "Pending", "conditions": conditions},
    }


CREATED = 1_795_942_800.0  # 2026-11-29T09:00:00Z


@pytest.mark.parametrize(
    ("conditions", "since"),
    [
        pytest.param([], CREATED, id="never-ran-waits-since-creation"),
        pytest.param(
            [{"type": "Scheduled", "status": "True", "lastTransitionTime": "2026-11-29T10:00:00Z"}],
            CREATED + 3600,
            id="ran-then-pending-again-waits-since-the-run",
        ),
        pytest.param(
            [
                {
                    "type": "Scheduled",
                    "status": "True",
                    "lastTransitionTime": "2026-11-29T10:00:00Z",
                },
                {
                    "type": "Scheduled",
                    "status": "True",
                    "lastTransitionTime": "2026-11-29T11:00:00Z",
                },
            ],
            CREATED + 7200,
            id="newest-run-counts",
        ),
        pytest.param(
            [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "lastTransitionTime": "2026-11-29T12:00:00Z",
                },
                {
                    "type": "Scheduled",
                    "status": "False",
                    "lastTransitionTime": "2026-11-29T12:00:00Z",
                },
            ],
            CREATED,
            id="other-conditions-do-not-shorten-the-wait",
        ),
        pytest.param(
            [{"type": "Scheduled", "status": "True", "lastTransitionTime": "2026-11-29T08:00:00Z"}],
            CREATED,
            id="never-before-creation",
        ),
    ],
)
def test_pending_since(conditions: list[dict[str, Any]], since: float) -> None:
    assert pending_since(_pg(conditions)) == since
