"""The reclaim policy: one frozen dataclass tree with every default here, and its YAML loader.

Each section of the YAML file is a frozen dataclass below; each setting is a dataclass field whose
metadata names its YAML key (camelCase, Kubernetes style) and the parser that validates it, so the
defaults, the file format and the validation rules live in one place. `load_policy` is pure: it
walks the YAML, collects every problem with its YAML path (`limits.maxPreemptionsPerNode: must be
between 0 and 1000000, got -1`), keys written twice included, and raises one `PolicyError`
listing them all, or returns the `Policy`.
Workload classes accept the seed's `gpu-sharing-config` shape
(`workloads: [{name, gpuShare, shareMemory, overcommit, maxMemory}]`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from reclaimer.policy.fields import (
    CrossCheck,
    as_bool,
    as_count,
    as_dns_names,
    as_duration,
    as_label_key,
    as_optional_duration,
    as_positive_duration,
    as_positive_number,
    as_positive_ratio,
    as_ratio,
    as_replicas,
    as_string,
    build_section,
    setting,
)
from reclaimer.policy.kueue import Kueue
from reclaimer.policy.warning import WarningPolicy
from webconfig.yaml_tree import load_yaml

VOLCANO_PREEMPTABLE = "volcano.sh/preemptable"
"""Volcano's opt-out annotation; always honoured, besides the policy's own."""
VOLCANO_COOLDOWN = "volcano.sh/cooldown-time"
"""Per-job minimum runtime annotation (e.g. "600s"); overrides `min_runtime_seconds`."""


@dataclass(frozen=True)
class Limits:
    """Caps on what one planning cycle may do (descheduler-style)."""

    max_preemptions_per_cycle: int = setting(5, as_count, "maxPreemptionsPerCycle")
    max_preemptions_per_namespace: int = setting(2, as_count, "maxPreemptionsPerNamespace")
    max_pods_per_node: int = setting(4, as_count, "maxPreemptedPodsPerNode")
    max_gpus_freed_per_cycle: int = setting(32, as_count, "maxGpusFreedPerCycle")
    max_resumes_per_cycle: int = setting(5, as_count, "maxResumesPerCycle")
    max_reshapes_per_cycle: int = setting(10, as_count, "maxReshapesPerCycle")


@dataclass(frozen=True)
class WorkloadClass:
    """A class of shared-GPU workload (the seed's `gpu-sharing-config` entry).

    `gpu_share` is the nominal fraction of a GPU one pod of the class gets; `overcommit` how far
    beyond that the class tolerates packing; so the class allows at most
    floor(overcommit / gpu_share) time-slice replicas per GPU (floor(1 / gpu_share) when it may not
    share memory). `max_memory` is the GPU memory fill ratio the class tolerates.
    """

    name: str = setting("", as_string, "name")
    gpu_share: float = setting(1.0, as_positive_ratio, "gpuShare")
    share_memory: bool = setting(True, as_bool, "shareMemory")
    overcommit: float = setting(1.0, as_positive_number, "overcommit")
    max_memory: float = setting(0.9, as_ratio, "maxMemory")

    @property
    def max_replicas(self) -> int:
        factor = self.overcommit if self.share_memory else 1.0
        return int(factor / self.gpu_share + 1e-9)


@dataclass(frozen=True)
class TimeSlicing:
    """How the planner reshapes time-slice replicas on nodes that already share GPUs."""

    max_replicas: int = setting(4, as_replicas, "maxReplicas")
    node_cooldown_seconds: float = setting(3600.0, as_duration, "nodeCooldown")
    # A new config key is labelled onto a node only this long after it was written: a mounted
    # ConfigMap reaches the device plugin's volume with the kubelet's periodic sync (1 minute by
    # default) plus its cache TTL; a label naming a key not projected yet reads as missing.
    projection_delay_seconds: float = setting(90.0, as_duration, "configProjectionDelay")
    class_label: str = setting("gpu-reclaim.io/workload-class", as_label_key, "classLabel")
    underused_below: float = setting(0.4, as_ratio, "underusedBelow")
    saturated_above: float = setting(0.9, as_ratio, "saturatedAbove")
    memory_pressure_above: float = setting(0.9, as_ratio, "memoryPressureAbove")
    # Contention relief: a reclaimable pod this busy on a GPU where a guaranteed pod is this busy
    # too is stopped (time-slicing splits the GPU's time equally between busy processes).
    contention_busy_above: float = setting(0.3, as_positive_ratio, "contentionBusyAbove")
    # A raise must leave this share of each GPU's memory free once the new pods hold theirs
    # (time-slicing isolates no memory: a neighbour's growth OOM-kills a pod).
    memory_headroom: float = setting(0.1, as_ratio, "memoryHeadroom")
    # Each pod a raise lets in, and each pod there now, may come to hold this quantile of the
    # pods' device-memory peaks measured over the last days (`plan.raises.memory_gate`).
    memory_peak_quantile: float = setting(0.99, as_positive_ratio, "memoryPeakQuantile")
    # A raise needs the node's load forecast to stay low this long: the new pods' run time.
    raise_horizon_seconds: float = setting(8 * 3600.0, as_positive_duration, "raiseHorizon")
    workloads: tuple[WorkloadClass, ...] = setting((), None, "workloads", items=WorkloadClass)
    # After containers crashed on a node, or it was lowered because its pods did not fit, no
    # raise for this long: a crashed pod's peak stops where its allocation failed, so the week's
    # peaks the raise gate budgets by understate it until they no longer hold it (7 days).
    harm_raise_hold_seconds: float = setting(7 * 86400.0, as_duration, "harmRaiseHold")
    # A node is lowered when the pods on one of its GPUs, each at its week's peak, add up to more
    # than this share of the GPU's memory: at 1 (all of it) they cannot all fit at once. A raise
    # keeps `memoryHeadroom` free for pods not yet seen; lowering needs evidence that they do not
    # fit, so a node the raise gate merely refuses is not lowered.
    pods_do_not_fit_above: float = setting(1.0, as_positive_ratio, "podsDoNotFitAbove")
    # Guaranteed pods' busy time during which a neighbour on their GPU is busy too (a request
    # then waits for the neighbour's slice): a node above this share is lowered, and a raise
    # that would put it above is refused (`plan.contend`). 1 turns the rule off.
    max_cobusy_share: float = setting(0.05, as_ratio, "maxCobusyShare")

    def workload(self, name: str) -> WorkloadClass | None:
        return next((w for w in self.workloads if w.name == name), None)

    def problems(self) -> list[CrossCheck]:
        out: list[CrossCheck] = []
        if self.underused_below >= self.saturated_above:
            why = f"must be below saturatedAbove ({self.saturated_above:g})"
            out.append((("underusedBelow", "saturatedAbove"), why))
        seen: set[str] = set()
        for i, w in enumerate(self.workloads):
            if not w.name:
                out.append(((f"workloads[{i}].name", "workloads"), "required"))
            elif w.name in seen:
                why = f"duplicate workload class {w.name!r}"
                out.append(((f"workloads[{i}].name", "workloads"), why))
            seen.add(w.name)
        return out


@dataclass(frozen=True)
class Actions:
    """Which kinds of action the planner may propose at all."""

    preempt: bool = setting(True, as_bool, "preempt")
    resume: bool = setting(True, as_bool, "resume")
    reshape: bool = setting(True, as_bool, "reshape")


@dataclass(frozen=True)
class Dra:
    """Which devices allocated through Dynamic Resource Allocation are GPUs: those of these
    drivers, asked for through these device classes (or any DeviceClass whose CEL selector
    names one of the drivers). NVIDIA's by default (kubernetes-sigs/dra-driver-nvidia-gpu)."""

    gpu_drivers: tuple[str, ...] = setting(("gpu.nvidia.com",), as_dns_names, "gpuDrivers")
    gpu_device_classes: tuple[str, ...] = setting(
        ("gpu.nvidia.com", "mig.nvidia.com"), as_dns_names, "gpuDeviceClasses"
    )


@dataclass(frozen=True)
class Policy:
    """Every knob of the reclaimer; `Policy()` is the safe default."""

    threshold: float = setting(0.05, as_positive_ratio, "threshold")
    horizon_seconds: float = setting(900.0, as_positive_duration, "horizon")
    min_confidence: float = setting(0.85, as_ratio, "minConfidence")  # forecaster's default
    # Victim ranking: idle confidences in the same band of this width (counted down from 1)
    # are ties, broken by least work lost; 0 (default) ranks by exact confidence. The default
    # is measured, not assumed: see `reclaimer.plan.victims`.
    confidence_tie_band: float = setting(0.0, as_ratio, "confidenceTieBand")
    max_data_age_seconds: float = setting(300.0, as_duration, "maxDataAge")
    min_runtime_seconds: float = setting(600.0, as_duration, "minRuntime")
    job_cooldown_seconds: float = setting(1800.0, as_duration, "jobCooldown")
    opt_out_annotation: str = setting(
        "gpu-reclaim.io/preemptable", as_label_key, "optOutAnnotation"
    )
    checkpoint_interval_seconds: float | None = setting(
        None, as_optional_duration, "checkpointInterval"
    )
    # A pending job takes victims only once it has waited this long: room that frees itself
    # within minutes costs no one their work (the default is chosen on the backtest).
    reclaim_after_seconds: float = setting(300.0, as_duration, "reclaimAfter")
    # A pending job of a starved queue that has waited this long may also take reclaimable jobs
    # that are not forecast idle (only when idle ones cannot make room). Opt-in: the default,
    # null, takes idle jobs only, which is what an operator enabling an idle reclaimer expects.
    reclaim_busy_after_seconds: float | None = setting(
        None, as_optional_duration, "reclaimBusyAfter"
    )
    # Opt-in cost-aware stops (`reclaimer.plan.stop_cost`): an idle job is stopped for a waiting
    # gang only when P(idle) x the GPU-seconds it frees for it over the horizon exceed
    # (1 - P) x its GPUs x (busy work since its checkpoint + `coldStart`). The rule replaces
    # `minConfidence` as the cut, never below `costAwareFloor`.
    cost_aware_stops: bool = setting(False, as_bool, "costAwareStops")
    cold_start_seconds: float = setting(60.0, as_duration, "coldStart")
    cost_aware_floor: float = setting(0.5, as_ratio, "costAwareFloor")
    # Room made for a pending job is in flight until the stopped job's pods are gone; one still
    # in flight after this long is reported (Event, metric, plan warning), never doubled.
    release_timeout_seconds: float = setting(600.0, as_positive_duration, "releaseTimeout")
    queue_shares: Mapping[str, float] = setting(
        MappingProxyType({}), None, "queueShares", values=as_ratio
    )
    limits: Limits = setting(Limits(), None, "limits", section=Limits)  # noqa: RUF009 (frozen)
    time_slicing: TimeSlicing = setting(TimeSlicing(), None, "timeSlicing", section=TimeSlicing)  # noqa: RUF009
    actions: Actions = setting(Actions(), None, "actions", section=Actions)  # noqa: RUF009
    dra: Dra = setting(Dra(), None, "dra", section=Dra)  # noqa: RUF009
    kueue: Kueue = setting(Kueue(), None, "kueue", section=Kueue)  # noqa: RUF009
    warning: WarningPolicy = setting(WarningPolicy(), None, "warning", section=WarningPolicy)  # noqa: RUF009

    def problems(self) -> list[CrossCheck]:
        total = sum(self.queue_shares.values())
        if total > 1.0 + 1e-9:
            return [(("queueShares",), f"shares add up to {total:.0%}, more than the cluster")]
        return []


class PolicyError(ValueError):
    """An invalid policy; `.errors` lists every problem, each prefixed by its YAML path."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("invalid policy:\n  " + "\n  ".join(errors))
        self.errors = errors


def load_policy(text: str) -> Policy:
    """Parse and validate a YAML policy; an empty document gives `Policy()`. Pure."""
    raw, found = load_yaml(text)  # duplicate keys are errors, not "the last one wins"
    errors = [f"{p.path or '<document>'}: {p.message}" for p in found]
    if raw is None and errors:
        raise PolicyError(errors)
    policy = build_section(Policy, {} if raw is None else raw, "", errors)
    if errors or policy is None:
        raise PolicyError(errors)
    return policy
