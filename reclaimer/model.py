"""Typed data of the reclaimer core: the cluster snapshot and forecasts (the plan built from
them is in `reclaimer.decisions`).

Everything here is frozen and free of I/O. The controller (and the simulator) build one
`Snapshot` per cycle before planning; `forecast()` turns utilization history into `Forecast`s;
`plan()` turns both into a `Plan` of typed actions, each with a `Reason` and its evidence.
Times are Unix seconds (float); GPU amounts are slots of device resources, a whole GPU, a
time-slice replica or a MIG instance (`reclaimer.devices`; float where shares are summed);
utilization values are ratios 0..1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from reclaimer.devices import NO_MIG

EMPTY: Mapping[str, str] = MappingProxyType({})


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"


class JobKind(StrEnum):
    """A workload the reclaimer stops whole (`reclaimer.kube.objects.kinds` says how)."""

    PYTORCH_JOB = "PyTorchJob"
    TF_JOB = "TFJob"
    MPI_JOB = "MPIJob"
    XGBOOST_JOB = "XGBoostJob"
    PADDLE_JOB = "PaddleJob"
    JAX_JOB = "JAXJob"
    NOTEBOOK = "Notebook"
    BATCH_JOB = "BatchJob"  # batch/v1 Job
    JOBSET = "JobSet"
    RAY_JOB = "RayJob"
    TRAIN_JOB = "TrainJob"  # Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1)
    VOLCANO_JOB = "Job"  # batch.volcano.sh Job
    POD = "Pod"


class PodPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class Queue:
    """A Volcano Queue, reduced to what planning needs (GPU counts, not resource lists)."""

    name: str
    weight: int = 1
    deserved_gpus: float | None = None
    guarantee_gpus: float = 0.0
    capability_gpus: float | None = None
    reclaimable: bool = True  # unset counts as true in Volcano
    state: QueueState = QueueState.OPEN
    priority: int = 0
    # a Kueue ClusterQueue (`kube.objects.kueue`): deserved is its nominal quota, and the
    # policy's `kueue` section says what of it is reclaimable (`plan.cluster_queues`)
    cluster_queue: bool = False
    cohort: str = ""  # the Kueue cohort it borrows within; "" = none


@dataclass(frozen=True)
class KueueWorkload:
    """The Kueue Workload that admits a job: the reclaimer stops and resumes the job through it
    (`spec.active`), never through the job's own `suspend`, which Kueue owns."""

    name: str  # in the job's namespace
    api_version: str  # the served version it was read in ("kueue.x-k8s.io/v1beta2")
    uid: str = ""
    active: bool = True  # spec.active
    admitted: bool = False  # holds quota (a True QuotaReserved condition)
    cluster_queue: str = ""  # the ClusterQueue it is admitted to, else its LocalQueue's


@dataclass(frozen=True)
class StopWarning:
    """A stop the reclaimer scheduled on a job and told its owner of (`gpu-reclaim.io/`
    annotations written with the warning Event): it lives in the cluster, so a restarted or new
    leader keeps the countdown."""

    warned_at: float
    stop_at: float  # gpu-reclaim.io/reclaim-after
    for_pending: str  # the pending job whose demand chose it
    reason: str = ""  # the `Reason` the stop was planned for


@dataclass(frozen=True)
class Job:
    """A gang: a PodGroup (PyTorchJob, Volcano Job) or a single bare pod.

    `key` is "namespace/name" and is what forecasts and actions refer to.
    """

    key: str
    kind: JobKind
    namespace: str
    name: str
    queue: str
    gpus: int
    min_member: int = 1
    priority: int = 0
    start_time: float = 0.0
    pods: tuple[str, ...] = ()  # pod keys "namespace/name"
    labels: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    annotations: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    suspended: bool = False  # currently suspended / aborted
    suspended_by_reclaimer: bool = False  # carries the gpu-reclaim.io/ annotation
    uid: str = ""
    workload_class: str | None = None
    retries_left: int | None = None  # Volcano Job: maxRetry - retryCount; None: not counted
    room_for: str | None = None  # pending job the reclaimer stopped this one for (annotation)
    stopped_at: float | None = None  # when the reclaimer stopped it (suspended or evicted)
    stop_reason: str = ""  # the `Reason` it recorded then (gpu-reclaim.io/suspend-reason)
    disruption_block: str = ""  # a PodDisruptionBudget that forbids stopping it, and why
    # a stop record on a job whose stop never happened (interrupted mid-stop), and why; such a
    # record is not taken as a stop: no room in flight, no cool-down, cleared by the actuator
    unfinished_stop: str = ""
    managed_by: str = ""  # another controller admits it (Kueue): stopping it would be undone
    controlled_by: str = ""  # its controller owner is a kind the reclaimer does not manage
    mig: Mapping[str, int] = field(default_factory=lambda: NO_MIG)  # of gpus: MIG, by resource
    kueue: KueueWorkload | None = None  # Kueue admits it: stopped through this Workload
    warning: StopWarning | None = None  # a scheduled stop (`reclaimer.plan.warning`)
    keep_until: float | None = None  # the owner's gpu-reclaim.io/keep-until


def spares_a_retry(retries_left: int) -> bool:
    """Whether a Volcano Job can afford a stop: a resume counts as a retry, and Volcano fails a
    restarting job at maxRetry, so an abort/resume round needs a retry to spare beyond it."""
    return retries_left > 1


@dataclass(frozen=True)
class Pod:
    key: str
    namespace: str
    name: str
    node: str | None
    gpus: int
    phase: PodPhase
    job: str | None = None  # Job.key
    labels: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    annotations: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    start_time: float = 0.0
    uid: str = ""
    releasing: bool = False  # on its way out (deletionTimestamp, eviction): devices not yet free
    mig: Mapping[str, int] = field(default_factory=lambda: NO_MIG)  # of gpus: MIG, by resource


@dataclass(frozen=True)
class GpuStats:
    """Measured per-GPU usage on a node, from the exporter's device metrics."""

    utilization: float  # ratio 0..1, averaged over the stats window
    memory_used_ratio: float  # FB_USED / (FB_USED + FB_FREE)
    uuid: str = ""  # the physical GPU (dcgm's `UUID` label); "" when not known
    memory_used_bytes: float | None = None  # DCGM_FI_DEV_FB_USED in bytes; None: not read
    memory_total_bytes: float | None = None  # FB_USED + FB_FREE in bytes; None: not read


@dataclass(frozen=True)
class PodGpuUsage:
    """One pod's measured use of one physical GPU, from the exporter's per-pod series.

    On a time-sliced GPU the exporter labels a pod's series with the physical GPU's `UUID` (a
    replica `GPU-<uuid>::<n>` counts as its device: `exporter.attribution`), so the pods with the
    same (node, gpu) share one GPU's time and memory.
    """

    pod: str  # Pod.key
    node: str
    gpu: str  # physical GPU UUID
    busy: float | None  # utilization ratio 0..1 over the stats window; None: not readable
    memory_bytes: float | None = None  # device memory the pod holds there; None: not read


@dataclass(frozen=True)
class MemoryPeaks:
    """Each pod's most device memory over the last `window` seconds, from the exporter's per-pod
    series (the raise gate's budget for the pods a raise lets in); `error` says why it is unread."""

    window: float  # seconds looked back
    pods: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))  # key -> bytes
    error: str = ""


@dataclass(frozen=True)
class PodBusy:
    """One pod's time over a window, in seconds: present (sampled), busy (utilization above
    0) and co-busy (busy while another pod on the same GPU was busy too)."""

    present: float
    busy: float
    cobusy: float


CONTENTION_WINDOW = 86400.0  # seconds the contention reading looks back: a day's cycle


@dataclass(frozen=True)
class Contention:
    """Each pod's busy and co-busy time over the last `window` seconds, from the exporter's
    per-pod utilization (the contention rule, `plan.contend`); `error` says why it is unread."""

    window: float  # seconds looked back
    pods: Mapping[str, PodBusy] = field(default_factory=lambda: MappingProxyType({}))  # pod key
    error: str = ""


@dataclass(frozen=True)
class LoadHistory:
    """A node's mean GPU utilization over time, evenly spaced, oldest first (the seasonal
    raise gate's input). `values[i]` covers [start + i*step, start + (i+1)*step); NaN: none."""

    start: float
    step: float
    values: tuple[float, ...]  # ratio 0..1

    @property
    def end(self) -> float:
        return self.start + self.step * len(self.values)


@dataclass(frozen=True)
class Node:
    name: str
    gpus: int  # physical GPUs (MIG devices under the single MIG strategy: kube.objects.nodes)
    replicas: int = 1  # time-slice replicas per GPU (1 = no sharing)
    config_key: str | None = None  # value of nvidia.com/device-plugin.config
    gpu_stats: tuple[GpuStats, ...] = ()
    workload_classes: tuple[str, ...] = ()  # classes of the pods running there
    last_reshape: float | None = None  # from the gpu-reclaim.io/ annotation
    reshape_key_at: float | None = None  # a reshape's new config key written, node not relabelled
    load: LoadHistory | None = None  # mean GPU utilization history (days); None: not read
    mig: Mapping[str, int] = field(default_factory=lambda: NO_MIG)  # MIG instances advertised
    reshape_reason: str = ""  # the `Reason` of its last reshape (the gpu-reclaim.io/ annotation)
    pool: bool = False  # opted into the managed pool (label gpu-reclaim.io/time-slicing-pool)
    # GPUs from DRA ResourceSlices (`kube.objects.dra`): no per-node replicas to reshape
    dra: bool = False
    # DRA slots by resource that no one pod's stop frees: claims several pods share (held), and
    # claims no pod reserves any more, which the control plane is deallocating (releasing)
    claims_held: Mapping[str, int] = field(default_factory=lambda: NO_MIG)
    claims_releasing: Mapping[str, int] = field(default_factory=lambda: NO_MIG)


@dataclass(frozen=True)
class ContainerCrash:
    """A container of a GPU pod that ended in failure: `OOMKilled` (the kernel's OOM killer), or
    any other end with a non-zero exit code, as a CUDA out-of-memory error ends a process
    (k8s-device-plugin #323: on a time-sliced GPU the pod whose allocation fails crashes and
    restarts). From the pod's `status.containerStatuses[]`: its `state.terminated` or
    `lastState.terminated` (the one before its last restart), and its `restartCount`
    (k8s.io/api core/v1 `ContainerStatus`, `ContainerStateTerminated`)."""

    pod: str  # Pod.key
    node: str
    container: str
    at: float  # when it ended (`finishedAt`)
    reason: str  # the runtime's word for it: "OOMKilled", "Error", ...
    exit_code: int
    restarts: int = 0  # the container's restartCount


@dataclass(frozen=True)
class PendingDemand:
    """A job waiting for GPUs in a queue."""

    queue: str
    job: str  # Job.key
    gpus: int
    min_member: int = 1
    since: float = 0.0
    priority: int = 0
    mig: Mapping[str, int] = field(default_factory=lambda: NO_MIG)  # of gpus: MIG, by resource


CLOCK_SKEW_TOLERANCE_S = 60.0
"""A newest sample dated more than this after the controller's clock means the two clocks
disagree: the history read up to the controller's `now` misses the latest minutes."""


@dataclass(frozen=True)
class DataQuality:
    """How trustworthy this cycle's measurements are; the planner acts on none that are not."""

    metrics_at: float | None  # newest sample time, None = no data
    complete: bool = True  # False when any query failed or returned partial data
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterView:
    """What the Kubernetes API (or a `kubectl get -o yaml` dump) says, before metrics join it."""

    taken_at: float
    queues: tuple[Queue, ...]
    jobs: tuple[Job, ...]
    pods: tuple[Pod, ...]
    nodes: tuple[Node, ...]
    pending: tuple[PendingDemand, ...]
    last_actions: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    problems: tuple[str, ...] = ()  # e.g. "Volcano CRDs not installed: preemption disabled"
    unmanaged: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Bound GPU pod key -> why it belongs to no workload the reclaimer can stop."""
    crashes: tuple[ContainerCrash, ...] = ()
    """Failed ends of GPU pods' containers, on their nodes (time-sliced pods that do not fit)."""


@dataclass(frozen=True, kw_only=True)
class Snapshot(ClusterView):
    """One cycle's planning input: the cluster view (`last_actions`: job or node key -> time the
    reclaimer last acted on it, for cool-downs), with the measurements joined to it."""

    quality: DataQuality
    unknown_usage: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Job key -> why its recent utilization cannot be known (missing samples): never idle."""
    pod_gpus: tuple[PodGpuUsage, ...] = ()
    """Per (pod, physical GPU) busy fraction and memory, this cycle (contention relief)."""
    memory_peaks: MemoryPeaks | None = None
    """Pods' device-memory peaks over days (the raise gate); None: not read."""
    contention: Contention | None = None
    """Pods' busy and co-busy time over a day (the contention rule); None: not read."""


@dataclass(frozen=True)
class Forecast:
    """Will this job stay idle for the next horizon?"""

    job: str
    idle: bool  # the forecaster's decision at its operating point
    confidence: float  # probability (0..1) that the whole horizon stays below threshold
    predicted_idle_seconds: float  # expected length of the idle window from now
    horizon_seconds: float
    threshold: float  # ratio 0..1
    method: str
    samples: int  # history samples the decision used
    last_sample_at: float | None = None
    # The evidence in plain counts: the job's complete back-to-back past windows of one horizon
    # on the history read, and how many of them stayed below the threshold.
    past_windows: int = 0
    past_idle_windows: int = 0
