"""What the planner decides and the actuator answers: typed actions, each with a `Reason` and
its evidence, the skips, and the `Plan` that holds them (built from `reclaimer.model`'s snapshot
and forecasts). Frozen, free of I/O."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from reclaimer.model import Forecast, JobKind
from reclaimer.standing import QueueStanding


class ActionKind(StrEnum):
    PREEMPT = "preempt"
    RESUME = "resume"
    RESHAPE = "reshape"
    WARN = "warn"  # a stop scheduled: the owner is told first (`reclaimer.plan.warning`)
    CANCEL = "cancel"  # a scheduled stop withdrawn: busy again, or its demand gone


class Reason(StrEnum):
    """Why an action was planned, or why a candidate was left alone."""

    # actions
    IDLE_FOR_STARVED_QUEUE = "IdleJobForStarvedQueue"
    BUSY_FOR_LONG_STARVED = "BusyJobForLongStarvedQueue"  # after reclaimBusyAfter, none idle fit
    QUEUE_HAS_ROOM = "QueueHasRoomAgain"
    NODE_UNDERUSED = "NodeUnderused"
    NODE_SATURATED = "NodeSaturated"
    NODE_MEMORY_PRESSURE = "NodeMemoryPressure"
    CONTENTION_RELIEF = "ContentionRelief"  # busy reclaimable job time-sliced with a guaranteed one
    # skips
    STALE_DATA = "StaleData"
    CLOCK_SKEW = "ClockSkew"  # samples dated after the controller's clock: history not trusted
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
    FOREIGN_OWNER = "ControlledByUnmanagedOwner"  # its controller owner would undo the stop
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
    DRA_DEVICES = "DraDevices"  # reshape leaves a node whose GPUs come from DRA alone
    # raise gates (time-slice sharing)
    NO_MEMORY_HEADROOM = "NoMemoryHeadroom"  # the new pods' memory would not leave the headroom
    LOAD_FORECAST_HIGH = "LoadForecastHigh"  # the node's load will rise within the raise horizon
    NO_LOAD_HISTORY = "NoLoadHistory"  # too little load history to forecast the raise horizon
    CONTENTION_WOULD_RETURN = (
        "ContentionWouldReturn"  # resume held: room only beside busy guaranteed
    )
    # pods that do not fit a time-sliced GPU (`reclaimer.plan.harm`), and whole GPUs handed back
    PODS_CRASHED = "SharedPodsCrashed"  # action: containers there crashed (OOMKilled, exit != 0)
    PODS_DO_NOT_FIT = "PodsDoNotFit"  # action: a GPU's pods at their peaks pass its memory
    RAISE_HELD = "RaiseHeldAfterHarm"  # skip: a raise within harmRaiseHold of crashes / lowering
    # guaranteed pods' busy time with a busy neighbour on their GPU (`reclaimer.plan.contend`)
    PODS_CONTEND = "GuaranteedPodsContend"  # action: measured share past maxCobusyShare
    WOULD_CONTEND = "NeighboursWouldContend"  # skip: a raise would pass maxCobusyShare
    WHOLE_GPUS_FOR_PENDING = "WholeGpusForPendingJob"  # action: to 1 replica for multi-GPU pods
    # action: more replicas than the raise gate's memory budget lets fit (`plan.budget`)
    MEMORY_BUDGET_EXCEEDED = "MemoryBudgetExceeded"
    # skip (`costAwareStops`): P(idle) x GPU-seconds freed <= (1 - P) x work and cold start risked
    STOP_NOT_WORTH = "StopCostsMoreThanItFrees"
    # warnings before a stop (`reclaimer.plan.warning`)
    RECLAIM_SCHEDULED = "ReclaimScheduled"  # skip: warned, its stop time not reached yet
    BUSY_AGAIN = "BusyAgainDuringWarning"  # cancel: no longer an idle candidate
    DEMAND_GONE = "DemandGone"  # cancel: the pending job it was warned for no longer needs it
    KEPT_BY_OWNER = "KeptByOwner"  # plan warning: keep-until honoured
    KEEP_CAPPED = "KeepCapped"  # plan warning: keep-until beyond maxKeep, honoured up to it
    NO_LONGER_CANDIDATE = "NoLongerACandidate"  # cancel: a safety rule now keeps it running


@dataclass(frozen=True)
class Evidence:
    """What an action rests on, for operators and for Events."""

    forecast: Forecast | None = None
    for_pending: str | None = None  # PendingDemand.job it makes room for
    for_queue: str | None = None
    gpus_freed: int = 0
    detail: str = ""
    stop_at: float | None = None  # a warning: when the job is stopped, unless cancelled
    warn_seconds: float = 0.0  # a warning: its period, counted from when it is written


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
