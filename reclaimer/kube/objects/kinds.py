"""Every workload kind the reclaimer can stop whole, each with its gentlest stop. Pure constants.

A kind is known by its API group and kind; its `Stop` says how the reclaimer stops and resumes it,
the way its own controller (or Kueue) does:
- `SUSPEND`: merge-patch a boolean field, sent with `fieldValidation=Strict` so an operator whose
  CRD lacks the field answers 400 instead of dropping it: `spec.runPolicy.suspend` for every
  training-operator kind (TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob in kubeflow.org/v1,
  MPIJob in kubeflow.org/v2beta1), `spec.suspend` for `batch/v1` Job (the Job controller
  deletes the pods; resuming resets `status.startTime`), JobSet (`jobset.x-k8s.io/v1alpha2`),
  RayJob (`ray.io/v1`) and Kubeflow Trainer v2's TrainJob (`trainer.kubeflow.org/v1alpha1`, whose
  controller carries `spec.suspend` down to the JobSet it owns). These are the fields Kueue
  admits and preempts with.
- `NOTEBOOK`: Kubeflow's Notebook (`kubeflow.org/v1`) is stopped by the annotation
  `kubeflow-resource-stopped` set to the time (the notebook controller scales its StatefulSet to
  zero, as its own idle culler does) and resumed by removing it.
- `VOLCANO_COMMAND`: a Volcano Job gets an `AbortJob` / `ResumeJob` Command (`kube.volcano`).
- `EVICT`: a bare GPU pod is evicted through the Eviction API (it cannot be resumed).

`OWNER_CHAIN` lists the intermediate controllers between a pod and its workload (a Notebook's
StatefulSet, a JobSet's Jobs, a RayJob's RayCluster); `kube.owners` walks them.

`managed_by` is where a kind names the controller that reconciles it, and `controller` the value
its own controller answers to (unset means it); any other value hands the object to another
controller (MultiKueue, a custom one), which the reclaimer leaves alone (`kube.management`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from reclaimer.kube.objects.resources import PODS, TRAINING_OPERATOR, VOLCANO_JOBS, Resource
from reclaimer.model import Job, JobKind


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
    managed_by: tuple[str, ...] = ()  # the spec field naming the controller that reconciles it
    controller: str = ""  # the value of `managed_by` its own controller reconciles

    @property
    def key(self) -> tuple[str, str]:
        return self.resource.group, self.resource.kind


RUN_POLICY_SUSPEND: Final = ("spec", "runPolicy", "suspend")
SPEC_SUSPEND: Final = ("spec", "suspend")
NOTEBOOK_STOPPED: Final = "kubeflow-resource-stopped"
RUN_POLICY_MANAGED_BY: Final = ("spec", "runPolicy", "managedBy")
SPEC_MANAGED_BY: Final = ("spec", "managedBy")
# the reserved `managedBy` values of each kind's own controller: training-operator
# pkg/apis/kubeflow.org/v1/common_types.go `KubeflowJobsController` (v1.9), mpi-operator
# pkg/apis/kubeflow/v2beta1 types.go `KubeflowJobController`, Kubernetes batch/v1
# `JobControllerName` (JobManagedBy, 1.30+), JobSet api/jobset/v1alpha2 `JobSetControllerName`
# (v0.6+), KubeRay ray-operator/apis/ray/v1 `KubeRayController` (v1.3+), Kubeflow Trainer
# pkg/apis/trainer/v1alpha1/trainjob_types.go `spec.managedBy` default (v2.0.0 through v2.3.0)
MPI_OPERATOR: Final = "kubeflow.org/mpi-operator"
JOB_CONTROLLER: Final = "kubernetes.io/job-controller"
JOBSET_CONTROLLER: Final = "jobset.sigs.k8s.io/jobset-controller"
KUBERAY_OPERATOR: Final = "ray.io/kuberay-operator"
TRAINJOB_CONTROLLER: Final = "trainer.kubeflow.org/trainjob-controller"


def _training(
    kind: JobKind,
    plural: str,
    specs: str,
    version: str = "v1",
    controller: str = TRAINING_OPERATOR,
) -> WorkloadKind:
    res = Resource("kubeflow.org", version, plural, kind.value)
    return WorkloadKind(
        kind, res, Stop.SUSPEND, RUN_POLICY_SUSPEND, specs, RUN_POLICY_MANAGED_BY, controller
    )


TRAINING: Final = (
    _training(JobKind.PYTORCH_JOB, "pytorchjobs", "pytorchReplicaSpecs"),
    _training(JobKind.TF_JOB, "tfjobs", "tfReplicaSpecs"),
    _training(JobKind.XGBOOST_JOB, "xgboostjobs", "xgbReplicaSpecs"),
    _training(JobKind.PADDLE_JOB, "paddlejobs", "paddleReplicaSpecs"),
    _training(JobKind.JAX_JOB, "jaxjobs", "jaxReplicaSpecs"),
    _training(JobKind.MPI_JOB, "mpijobs", "mpiReplicaSpecs", "v2beta1", MPI_OPERATOR),
)
NOTEBOOK: Final = WorkloadKind(
    JobKind.NOTEBOOK, Resource("kubeflow.org", "v1", "notebooks", "Notebook"), Stop.NOTEBOOK
)


def _spec_suspend(kind: JobKind, res: Resource, controller: str) -> WorkloadKind:
    return WorkloadKind(
        kind, res, Stop.SUSPEND, SPEC_SUSPEND, managed_by=SPEC_MANAGED_BY, controller=controller
    )


BATCH_JOB: Final = _spec_suspend(
    JobKind.BATCH_JOB, Resource("batch", "v1", "jobs", "Job"), JOB_CONTROLLER
)
JOBSET: Final = _spec_suspend(
    JobKind.JOBSET,
    Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    JOBSET_CONTROLLER,
)
RAY_JOB: Final = _spec_suspend(
    JobKind.RAY_JOB, Resource("ray.io", "v1", "rayjobs", "RayJob"), KUBERAY_OPERATOR
)
# Kubeflow Trainer v2: TrainJob -> JobSet (same name) -> Jobs -> pods, all controller owners
TRAIN_JOB: Final = _spec_suspend(
    JobKind.TRAIN_JOB,
    Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob"),
    TRAINJOB_CONTROLLER,
)
VOLCANO_JOB: Final = WorkloadKind(JobKind.VOLCANO_JOB, VOLCANO_JOBS, Stop.VOLCANO_COMMAND)
SUSPENDABLE: Final = (*TRAINING, NOTEBOOK, BATCH_JOB, JOBSET, RAY_JOB, TRAIN_JOB)
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


def resource_of(kind: JobKind) -> Resource:
    """The API resource a job of `kind` is stored as (a bare pod's, or any kind the reclaimer
    stops no other way: pods)."""
    wk = BY_JOB_KIND.get(kind)
    return wk.resource if wk is not None else PODS


def involved_object(job: Job) -> dict[str, str]:
    """The involved object of an Event about `job`, from the snapshot (no read)."""
    res = resource_of(job.kind)
    return {
        "apiVersion": res.api_version,
        "kind": res.kind,
        "name": job.name,
        "namespace": job.namespace,
        "uid": job.uid,
    }
