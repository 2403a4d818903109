"""Workload shapes of a Kubeflow GPU node, as pure functions of time.

A shape says, for a pod at time t (Unix s), how much GPU it wants (a ratio of one GPU), whether
it has a CUDA process at all and how much GPU memory that process holds. Shapes follow Kubeflow
pipeline steps: data loading that holds a GPU but runs nothing on it, preprocessing at a third of
a GPU, training near saturation with checkpoint dips, evaluation bursts, hyper-parameter-search
trials, idle notebooks with the odd interactive burst, and whole pipeline runs cycling through
those phases. Randomness is a hash of (seed, time bucket), so `state(t)` costs O(1) at any t:
the simulator, the ground truth and the history backfill all read the same function.

Workloads come either from `default_workloads` (deterministic names such as
`team-a/train-resnet-0`) or from a YAML list (`load_workloads`) of
`{namespace, pod, container, shape, gpus, shared, mig, demand, start, end}`: `shape: constant`
wants `demand` (default 1.0) all the time, and `start` / `end` (Unix seconds) bound when any pod
has a process at all, so that a check can script "one pod at 100%, then two at 45%".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import yaml

GIB = 1 << 30


class Shape(StrEnum):
    PIPELINE = "pipeline"
    TRAINING = "training"
    PREPROCESSING = "preprocessing"
    EVALUATION = "evaluation"
    HPSEARCH = "hpsearch"
    NOTEBOOK = "notebook"
    DATALOADING = "dataloading"
    CONSTANT = "constant"


@dataclass(frozen=True)
class PodState:
    demand: float  # ratio of one GPU the pod would use alone
    has_process: bool
    memory_bytes: int


IDLE_NO_PROCESS = PodState(0.0, False, 0)


def unit(seed: int, bucket: int) -> float:
    """A uniform number in [0, 1) that depends only on (seed, bucket)."""
    x = (seed * 0x9E3779B97F4A7C15 + bucket * 0xD1B54A32D192ED03 + 1) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return ((x ^ (x >> 31)) >> 11) / float(1 << 53)


def _cycle(t: float, seed: int, length: float) -> tuple[int, float]:
    """(cycle number, seconds into the cycle), with a per-seed phase offset."""
    shifted = t + unit(seed, -1) * length
    k = math.floor(shifted / length)
    return k, shifted - k * length


def _training(t: float, seed: int) -> PodState:
    _, into = _cycle(t, seed, 1800.0)
    if into < 60.0:  # checkpoint: the GPU waits on storage
        return PodState(0.05, True, 62 * GIB)
    return PodState(0.9 + 0.08 * unit(seed, math.floor(t / 60.0)), True, 62 * GIB)


def _preprocessing(t: float, seed: int) -> PodState:
    return PodState(0.25 + 0.15 * unit(seed, math.floor(t / 30.0)), True, 8 * GIB)


def _evaluation(t: float, seed: int) -> PodState:
    k, into = _cycle(t, seed, 900.0)
    if into < 300.0:
        return PodState(0.45 + 0.1 * unit(seed, k), True, 12 * GIB)
    return PodState(0.0, True, 12 * GIB)


def _hpsearch(t: float, seed: int) -> PodState:
    k, into = _cycle(t, seed, 600.0)
    if into < 120.0 + 300.0 * unit(seed, k):  # a trial runs, then the next one is scheduled
        return PodState(0.95, True, 30 * GIB)
    return IDLE_NO_PROCESS


def _notebook(t: float, seed: int) -> PodState:
    k, into = _cycle(t, seed, 3 * 3600.0)
    start = unit(seed, k) * 2 * 3600.0
    if start <= into < start + 300.0 + 300.0 * unit(seed, k + 7):
        return PodState(0.3, True, 6 * GIB)
    return IDLE_NO_PROCESS


def _dataloading(_t: float, _seed: int) -> PodState:
    return IDLE_NO_PROCESS  # the GPU is allocated; only the CPU reads data


def _constant(_t: float, _seed: int) -> PodState:
    return PodState(1.0, True, 8 * GIB)  # a spec's `demand` replaces the 1.0


_PIPELINE = (  # (seconds, phase)
    (600.0, _dataloading),
    (900.0, _preprocessing),
    (3600.0, _training),
    (600.0, _evaluation),
    (1500.0, _dataloading),  # waiting for the next run: allocated, nothing running
)
_PIPELINE_LENGTH = sum(d for d, _ in _PIPELINE)


def _pipeline(t: float, seed: int) -> PodState:
    _, into = _cycle(t, seed, _PIPELINE_LENGTH)
    for duration, phase in _PIPELINE:
        if into < duration:
            return phase(t, seed)
        into -= duration
    return IDLE_NO_PROCESS


_SHAPES = {
    Shape.PIPELINE: _pipeline,
    Shape.TRAINING: _training,
    Shape.PREPROCESSING: _preprocessing,
    Shape.EVALUATION: _evaluation,
    Shape.HPSEARCH: _hpsearch,
    Shape.NOTEBOOK: _notebook,
    Shape.DATALOADING: _dataloading,
    Shape.CONSTANT: _constant,
}


def shape_state(shape: Shape, t: float, seed: int) -> PodState:
    """Pure: what a pod of `shape` (seeded by `seed`) does at time t."""
    return _SHAPES[shape](t, seed)


@dataclass(frozen=True)
class WorkloadSpec:
    namespace: str
    pod: str
    container: str
    shape: Shape
    gpus: int = 1
    shared: bool = False  # on a time-sliced GPU (nvidia.com/gpu with replicas)
    mig: bool = False  # on a MIG instance (nvidia.com/mig-1g.10gb)
    demand: float | None = None  # shape constant: the ratio of a GPU it wants
    start: float | None = None  # Unix seconds: no process before
    end: float | None = None  # Unix seconds: no process from then on


def spec_state(spec: WorkloadSpec, t: float, seed: int) -> PodState:
    """Pure: what the pod of `spec` does at t (its shape, its demand, its time window)."""
    if (spec.start is not None and t < spec.start) or (spec.end is not None and t >= spec.end):
        return IDLE_NO_PROCESS
    state = shape_state(spec.shape, t, seed)
    if spec.demand is not None and state.has_process:
        return PodState(spec.demand, True, state.memory_bytes)
    return state


class WorkloadError(ValueError):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


_FIELDS = {
    "namespace",
    "pod",
    "container",
    "shape",
    "gpus",
    "shared",
    "mig",
    "demand",
    "start",
    "end",
}


def _number(row: dict[str, Any], key: str, i: int, errors: list[str]) -> float | None:
    value = row.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        errors.append(f"[{i}].{key}: must be a number")
        return None
    return float(value)


def _timing(row: dict[str, Any], i: int, errors: list[str]) -> tuple[float | None, ...]:
    demand, start, end = (_number(row, k, i, errors) for k in ("demand", "start", "end"))
    if demand is not None and not 0.0 <= demand <= 1.0:
        errors.append(f"[{i}].demand: must be between 0 and 1")
    if demand is not None and row.get("shape") != Shape.CONSTANT.value:
        errors.append(f"[{i}].demand: only for shape constant")
    if start is not None and end is not None and start >= end:
        errors.append(f"[{i}]: start must be before end")
    return demand, start, end


def _spec(i: int, row: Any, errors: list[str]) -> WorkloadSpec | None:
    if not isinstance(row, dict):
        errors.append(f"[{i}]: expected a mapping")
        return None
    before = len(errors)
    errors.extend(f"[{i}].{k}: unknown field" for k in sorted(set(row) - _FIELDS))
    for key in ("namespace", "pod", "shape"):
        if not isinstance(row.get(key), str) or not row.get(key):
            errors.append(f"[{i}].{key}: required string")
    shape = row.get("shape")
    if isinstance(shape, str) and shape not in {s.value for s in Shape}:
        errors.append(f"[{i}].shape: {shape!r} is not one of {', '.join(s.value for s in Shape)}")
    gpus = row.get("gpus", 1)
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        errors.append(f"[{i}].gpus: must be an integer >= 1")
    for key in ("shared", "mig"):
        if not isinstance(row.get(key, False), bool):
            errors.append(f"[{i}].{key}: must be true or false")
    if row.get("mig") and row.get("shared"):
        errors.append(f"[{i}]: a pod is either shared or on MIG, not both")
    demand, start, end = _timing(row, i, errors)
    if len(errors) > before:
        return None
    return WorkloadSpec(
        namespace=row["namespace"],
        pod=row["pod"],
        container=str(row.get("container") or "main"),
        shape=Shape(row["shape"]),
        gpus=gpus,
        shared=bool(row.get("shared", False)),
        mig=bool(row.get("mig", False)),
        demand=demand,
        start=start,
        end=end,
    )


def load_workloads(text: str) -> tuple[WorkloadSpec, ...]:
    """Pure: parse a workloads YAML list, reporting every problem at once (WorkloadError)."""
    try:
        rows = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WorkloadError([f"not YAML: {exc}"]) from exc
    if not isinstance(rows, list) or not rows:
        raise WorkloadError(["expected a non-empty list of workloads"])
    errors: list[str] = []
    specs = [_spec(i, row, errors) for i, row in enumerate(rows)]
    names = [(s.namespace, s.pod) for s in specs if s is not None]
    errors.extend(
        f"duplicate pod {ns}/{p}" for ns, p in sorted({n for n in names if names.count(n) > 1})
    )
    if errors:
        raise WorkloadError(errors)
    return tuple(s for s in specs if s is not None)


_DEFAULT_ORDER = (  # (shape, pod name stem, namespace)
    (Shape.TRAINING, "train-resnet", "team-a"),
    (Shape.NOTEBOOK, "notebook", "team-b"),
    (Shape.PIPELINE, "pipeline-run", "team-a"),
    (Shape.EVALUATION, "eval-bert", "team-c"),
    (Shape.HPSEARCH, "hpo-trial", "team-c"),
    (Shape.DATALOADING, "dataload", "team-b"),
    (Shape.PREPROCESSING, "preprocess", "team-a"),
    (Shape.NOTEBOOK, "notebook", "team-c"),
)
_EXCLUSIVE = {Shape.TRAINING, Shape.PIPELINE, Shape.HPSEARCH}


def default_workloads(pods: int, full_gpus: int, mig_slots: int) -> tuple[WorkloadSpec, ...]:
    """Deterministic pods that fit the node: big shapes get whole GPUs while they last, small
    ones alternate between MIG instances and time-sliced GPUs (4 replicas each)."""
    specs: list[WorkloadSpec] = []
    mig_left = mig_slots
    for i in range(pods):
        shape, stem, ns = _DEFAULT_ORDER[i % len(_DEFAULT_ORDER)]
        mig = shape not in _EXCLUSIVE and mig_left > 0 and (i % 2 == 1 or not full_gpus)
        mig_left -= int(mig)
        shared = shape not in _EXCLUSIVE and not mig
        specs.append(WorkloadSpec(ns, f"{stem}-{i}", "main", shape, 1, shared, mig))
    while _gpus_needed(specs) > full_gpus:  # demote whole-GPU pods to time-sliced ones
        last = max((i for i, s in enumerate(specs) if not s.shared and not s.mig), default=None)
        if last is None:
            break
        s = specs[last]
        specs[last] = WorkloadSpec(s.namespace, s.pod, s.container, s.shape, 1, True, False)
    return tuple(specs)


def _gpus_needed(specs: list[WorkloadSpec]) -> int:
    exclusive = sum(s.gpus for s in specs if not s.shared and not s.mig)
    return exclusive + math.ceil(sum(s.gpus for s in specs if s.shared) / 4)
