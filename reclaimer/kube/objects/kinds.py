"""Every workload kind the reclaimer can stop whole, each with its gentlest stop. Pure constants.

A kind is known by its API group and kind; its `Stop` says how the reclaimer stops and resumes it,
the way its own controller (or Kueue) does:
- `SUSPEND`: merge-patch a boolean field, sent with `fieldValidation=Strict` so an operator whose
  CRD lacks the field answers 400 instead of dropping it: `spec.runPolicy.suspend` for every
  training-operator kind (TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob in kubeflow.org/v1,
  MPIJob in kubeflow.org/v2beta1), `spec.suspend` for `batch/v1` Job (the Job controller
  deletes the pods; resuming resets `status.startTime`), JobSet (`jobset.x-k8s.io/v1alpha2`) and
  RayJob (`ray.io/v1`). These are the fields Kueue admits and preempts with.
- `NOTEBOOK`: Kubeflow's Notebook (`kubeflow.org/v1`) is stopped by the annotation
  `kubeflow-resource-stopped` set to the time (the notebook controller scales its StatefulSet to
  zero, as its own idle culler does) and resumed by removing it.
- `VOLCANO_COMMAND`: a Volcano Job gets an `AbortJob` / `ResumeJob` Command (`kube.volcano`).
- `EVICT`: a bare GPU pod is evicted through the Eviction API (it cannot be resumed).

`OWNER_CHAIN` lists the intermediate controllers between a pod and its workload (a Notebook's
StatefulSet, a JobSet's Jobs, a RayJob's RayCluster); `kube.owners` walks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from reclaimer.kube.objects.resources import VOLCANO_JOBS, Resource
from reclaimer.model import JobKind


class Stop(StrEnum):
    SUSPEND = "suspend"
    NOTEBOOK = "notebook"
    VOLCANO_COMMAND = "volcano-command"
    EVICT = "evict"


@dataclass(frozen=True)
class WorkloadKind:
    job_kind: JobKind
    resource: Resource
    stop: Stop
    suspend_path: tuple[str, ...] = ()  # where the boolean lives, for Stop.SUSPEND
    replica_specs: str = ""  # training-operator kinds: the spec key of their replica specs

    @property
    def key(self) -> tuple[str, str]:
        return self.resource.group, self.resource.kind


RUN_POLICY_SUSPEND: Final = ("spec", "runPolicy", "suspend")
SPEC_SUSPEND: Final = ("spec", "suspend")
NOTEBOOK_STOPPED: Final = "kubeflow-resource-stopped"


def _training(kind: JobKind, plural: str, specs: str, version: str = "v1") -> WorkloadKind:
    res = Resource("kubeflow.org", version, plural, kind.value)
    return WorkloadKind(kind, res, Stop.SUSPEND, RUN_POLICY_SUSPEND, specs)


TRAINING: Final = (
    _training(JobKind.PYTORCH_JOB, "pytorchjobs", "pytorchReplicaSpecs"),
    _training(JobKind.TF_JOB, "tfjobs", "tfReplicaSpecs"),
    _training(JobKind.XGBOOST_JOB, "xgboostjobs", "xgbReplicaSpecs"),
    _training(JobKind.PADDLE_JOB, "paddlejobs", "paddleReplicaSpecs"),
    _training(JobKind.JAX_JOB, "jaxjobs", "jaxReplicaSpecs"),
    _training(JobKind.MPI_JOB, "mpijobs", "mpiReplicaSpecs", version="v2beta1"),
)
NOTEBOOK: Final = WorkloadKind(
    JobKind.NOTEBOOK, Resource("kubeflow.org", "v1", "notebooks", "Notebook"), Stop.NOTEBOOK
)
BATCH_JOB: Final = WorkloadKind(
    JobKind.BATCH_JOB, Resource("batch", "v1", "jobs", "Job"), Stop.SUSPEND, SPEC_SUSPEND
)
JOBSET: Final = WorkloadKind(
    JobKind.JOBSET,
    Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    Stop.SUSPEND,
    SPEC_SUSPEND,
)
RAY_JOB: Final = WorkloadKind(
    JobKind.RAY_JOB, Resource("ray.io", "v1", "rayjobs", "RayJob"), Stop.SUSPEND, SPEC_SUSPEND
)
VOLCANO_JOB: Final = WorkloadKind(JobKind.VOLCANO_JOB, VOLCANO_JOBS, Stop.VOLCANO_COMMAND)
SUSPENDABLE: Final = (*TRAINING, NOTEBOOK, BATCH_JOB, JOBSET, RAY_JOB)
WORKLOADS: Final = (*SUSPENDABLE, VOLCANO_JOB)
BY_KEY: Final = {w.key: w for w in WORKLOADS}
BY_JOB_KIND: Final = {w.job_kind: w for w in WORKLOADS}

# controllers between a pod and its workload: listed so that the owner chain can be walked
STATEFULSETS: Final = Resource("apps", "v1", "statefulsets", "StatefulSet")
RAY_CLUSTERS: Final = Resource("ray.io", "v1", "rayclusters", "RayCluster")
OWNER_CHAIN: Final = (STATEFULSETS, RAY_CLUSTERS)


def of_owner(api_version: str, kind: str) -> WorkloadKind | None:
    """The workload kind an ownerReference (`apiVersion`, `kind`) names, if the reclaimer knows
    it; versions are not compared (one served version per group here)."""
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return BY_KEY.get((group, kind))
