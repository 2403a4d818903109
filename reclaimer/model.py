"""Typed data of the reclaimer core: the cluster snapshot, forecasts and the plan.

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
from reclaimer.standing import QueueStanding

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
    disruption_block: str = ""  # a PodDisruptionBudget that forbids stopping it, and why
    managed_by: str = ""  # another controller admits it (Kueue): stopping it would be undone
    mig: Mapping[str, int] = field(default_factory=lambda: NO_MIG)  # of gpus: MIG, by resource


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


@dataclass(frozen=True)
class Node:
    name: str
    gpus: int  # physical GPUs
    replicas: int = 1  # time-slice replicas per GPU (1 = no sharing)
    config_key: str | None = None  # value of nvidia.com/device-plugin.config
    gpu_stats: tuple[GpuStats, ...] = ()
    workload_classes: tuple[str, ...] = ()  # classes of the pods running there
    last_reshape: float | None = None  # from the gpu-reclaim.io/ annotation
    reshape_key_at: float | None = None  # a reshape's new config key written, node not relabelled
    mig: Mapping[str, int] = field(default_factory=lambda: NO_MIG)  # MIG instances advertised


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


@dataclass(frozen=True, kw_only=True)
class Snapshot(ClusterView):
    """One cycle's planning input: the cluster view (`last_actions`: job or node key -> time the
    reclaimer last acted on it, for cool-downs), with the measurements joined to it."""

    quality: DataQuality
    unknown_usage: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Job key -> why its recent utilization cannot be known (missing samples): never idle."""


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


class ActionKind(StrEnum):
    PREEMPT = "preempt"
    RESUME = "resume"
    RESHAPE = "reshape"


class Reason(StrEnum):
    """Why an action was planned, or why a candidate was left alone."""

    # actions
    IDLE_FOR_STARVED_QUEUE = "IdleJobForStarvedQueue"
    BUSY_FOR_LONG_STARVED = "BusyJobForLongStarvedQueue"  # after reclaimBusyAfter, none idle fit
    QUEUE_HAS_ROOM = "QueueHasRoomAgain"
    NODE_UNDERUSED = "NodeUnderused"
    NODE_SATURATED = "NodeSaturated"
    NODE_MEMORY_PRESSURE = "NodeMemoryPressure"
    # skips
    STALE_DATA = "StaleData"
    INCOMPLETE_DATA = "IncompleteData"
    NOT_RECLAIMABLE = "QueueNotReclaimable"
    OPTED_OUT = "OptedOut"
    TOO_YOUNG = "BelowMinimumRuntime"
    COOLING_DOWN = "CoolingDown"
    NOT_IDLE = "NotForecastIdle"
    NO_FORECAST = "NoForecast"
    NO_FIT = "FreedCapacityDoesNotFit"
    LIMIT_REACHED = "LimitReached"
    NO_DEMAND = "NoStarvedDemand"
    LAST_RETRY = "NoRetryToSpare"  # a Volcano Job's resume would reach maxRetry and fail it
    UNKNOWN_USAGE = "UsageUnknown"  # samples missing in the last horizon: unknown is not idle
    DISRUPTION_BUDGET = "DisruptionBudget"  # a PDB allows fewer disruptions than stopping causes
    MANAGED_ELSEWHERE = "ManagedByAnotherController"  # Kueue would unsuspend it at once
    UNSUPPORTED_KIND = "OwnerKindNotSupported"  # a GPU pod in no workload the reclaimer can stop
    ROOM_IN_FLIGHT = "RoomInFlight"  # pending job: room is already being freed for it
    RELEASE_OVERDUE = "ReleaseOverdue"  # warning: a stopped job's pods outlive releaseTimeout
    # added with the planner
    CLASS_LIMIT = "WorkloadClassLimit"  # action: replicas above what the node's classes allow
    QUEUE_AT_SHARE = "QueueAtDeservedShare"  # pending job's queue is not below its share
    WAITED_BRIEFLY = "WaitedLessThanReclaimAfter"  # room usually frees itself sooner
    QUEUE_AT_CAPABILITY = "QueueAtCapability"  # pending job would push its queue over capability
    FITS_FREE = "FitsInFreeCapacity"  # pending job needs no preemption: free slots hold it
    BELOW_GUARANTEE = "QueueAtGuarantee"  # preempting would take the queue below its guarantee
    DEMAND_WAITING = "StarvedDemandWaiting"  # resume held back: a starved queue still waits
    NO_METRICS = "NoMetrics"  # node has no GPU stats to reshape on
    NO_CHANGE = "NoChangeNeeded"  # node's replicas already fit its load
    DISABLED = "ActionDisabled"  # the policy turned this kind of action off
    CONFIG_PROJECTING = "WaitingForConfigProjection"  # new key written; relabel after projection
    MIG_ENABLED = "MigEnabled"  # reshape leaves a node with MIG instances alone


@dataclass(frozen=True)
class Evidence:
    """What an action rests on, for operators and for Events."""

    forecast: Forecast | None = None
    for_pending: str | None = None  # PendingDemand.job it makes room for
    for_queue: str | None = None
    gpus_freed: int = 0
    detail: str = ""


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    target: str  # Job.key for preempt/resume, Node.name for reshape
    reason: Reason
    evidence: Evidence
    job_kind: JobKind | None = None
    from_replicas: int | None = None  # reshape only
    to_replicas: int | None = None  # reshape only


@dataclass(frozen=True)
class Skip:
    """A candidate the planner considered and left alone, with why."""

    target: str
    reason: Reason
    detail: str = ""


class Outcome(StrEnum):
    """What the actuator did with an action: `applied` and `dry_run` count as done."""

    APPLIED = "applied"
    DRY_RUN = "dry_run"
    SKIPPED = "skipped"  # refused (limits, cool-down, PDB, precondition) or vanished
    FAILED = "failed"

    @property
    def done(self) -> bool:
        return self in (Outcome.APPLIED, Outcome.DRY_RUN)


@dataclass(frozen=True)
class ActionResult:
    action: Action
    outcome: Outcome
    detail: str = ""
    skip_reason: Reason | None = None  # set for skips refused by limits, cool-downs, opt-outs
    http_status: int | None = None  # the API's answer when one decided the outcome
    writes: int = 0  # API writes sent for this action (dry-run ones included)


@dataclass(frozen=True)
class Plan:
    created_at: float
    actions: tuple[Action, ...]
    skipped: tuple[Skip, ...] = ()
    warnings: tuple[Skip, ...] = ()  # what an operator must look at (e.g. ReleaseOverdue)
    queues: tuple[QueueStanding, ...] = ()  # each queue as the cycle found it (by name)
