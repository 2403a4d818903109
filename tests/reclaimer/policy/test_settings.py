"""Policy loading: defaults, the full example, and every error reported at once with its path."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reclaimer.policy.settings import Policy, PolicyError, TimeSlicing, WorkloadClass, load_policy
from reclaimer.units import format_duration, parse_duration, parse_ratio

EXAMPLE = Path(__file__).parent.parent / "policy_example.yaml"


def _leaves(obj: object, prefix: str = "") -> dict[str, object]:
    """Flatten nested dataclasses into {"limits.max_resumes_per_cycle": value}."""
    out: dict[str, object] = {}
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            out.update(_leaves(value, f"{prefix}{f.name}."))
        else:
            out[f"{prefix}{f.name}"] = value
    return out


def test_defaults_are_valid_and_an_empty_document_gives_them() -> None:
    assert load_policy("") == Policy()
    assert load_policy("{}") == Policy()
    assert Policy().threshold == 0.05
    assert Policy().horizon_seconds == 900.0
    assert Policy().min_runtime_seconds == 600.0


def test_full_example_sets_every_field_away_from_its_default() -> None:
    loaded = _leaves(load_policy(EXAMPLE.read_text()))
    defaults = _leaves(Policy())
    assert loaded.keys() == defaults.keys()
    unchanged = [k for k in loaded if loaded[k] == defaults[k]]
    assert unchanged == [], "the example should exercise every setting"


def test_full_example_values() -> None:
    p = load_policy(EXAMPLE.read_text())
    assert p.threshold == pytest.approx(0.03)
    assert p.horizon_seconds == 1200
    assert p.checkpoint_interval_seconds == 1800
    assert dict(p.queue_shares) == {"BE": 0.1, "Burstable": 0.3, "LS": 0.4}
    assert p.time_slicing.workload("notebook") == WorkloadClass("notebook", 0.5, True, 2.0, 0.7)
    assert p.limits.max_pods_per_node == 6
    assert not p.actions.preempt


@pytest.mark.parametrize(
    ("workload", "replicas"),
    [
        pytest.param(WorkloadClass("a", 0.25, True, 1.5), 6, id="quarter-share-overcommit-1.5"),
        pytest.param(WorkloadClass("a", 0.25, False, 1.5), 4, id="no-memory-sharing-no-overcommit"),
        pytest.param(WorkloadClass("a", 1 / 3, True, 1.0), 3, id="third-share-exact"),
        pytest.param(WorkloadClass("a", 1.0, True, 1.2), 1, id="whole-gpu-class"),
    ],
)
def test_workload_class_replica_cap(workload: WorkloadClass, replicas: int) -> None:
    assert workload.max_replicas == replicas


def test_every_error_is_reported_at_once_with_its_yaml_path() -> None:
    text = """
threshold: 0
horizon: soon
minConfidence: 1.5
surprise: 1
checkpointInterval: 0s
queueShares: {BE: 2, LS: 0.5}
limits: {maxPreemptionsPerCycle: -1, maxGpusFreedPerCycle: 2.5, bogus: 1}
timeSlicing:
  maxReplicas: 1
  workloads:
  - {name: a, gpuShare: 0}
  - {name: b, overcommit: x, color: red}
actions: {preempt: "yes"}
"""
    with pytest.raises(PolicyError) as caught:
        load_policy(text)
    paths = sorted(e.split(":")[0] for e in caught.value.errors)
    assert paths == sorted(
        [
            "threshold",
            "horizon",
            "minConfidence",
            "surprise",
            "checkpointInterval",
            "queueShares.BE",
            "limits.maxPreemptionsPerCycle",
            "limits.maxGpusFreedPerCycle",
            "limits.bogus",
            "timeSlicing.maxReplicas",
            "timeSlicing.workloads[0].gpuShare",
            "timeSlicing.workloads[1].overcommit",
            "timeSlicing.workloads[1].color",
            "actions.preempt",
        ]
    )
    assert all(str(e) for e in caught.value.errors)
    assert "limits.maxPreemptionsPerCycle" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        pytest.param(
            "timeSlicing: {underusedBelow: 0.9, saturatedAbove: 0.5}",
            "timeSlicing.underusedBelow",
            id="band-inverted",
        ),
        pytest.param(
            "timeSlicing: {workloads: [{name: a}, {name: a}]}",
            "timeSlicing.workloads[1].name",
            id="duplicate-class",
        ),
        pytest.param(
            "timeSlicing: {workloads: [{gpuShare: 0.5}]}",
            "timeSlicing.workloads[0].name",
            id="class-without-name",
        ),
        pytest.param("limits: 3", "limits", id="section-not-a-mapping"),
        pytest.param(
            "timeSlicing: {workloads: {name: a}}",
            "timeSlicing.workloads",
            id="workloads-not-a-list",
        ),
        pytest.param("- 1\n- 2", "<document>", id="document-not-a-mapping"),
        pytest.param("threshold: [1", "<document>", id="not-yaml"),
        pytest.param(
            "optOutAnnotation: 'has spaces/x y'", "optOutAnnotation", id="bad-annotation-key"
        ),
        pytest.param("minRuntime: -5", "minRuntime", id="negative-duration"),
        pytest.param("maxDataAge: true", "maxDataAge", id="bool-is-not-a-duration"),
        pytest.param(
            "limits: {maxResumesPerCycle: true}",
            "limits.maxResumesPerCycle",
            id="bool-is-not-a-count",
        ),
        pytest.param("horizon: 1e308", "horizon", id="duration-beyond-a-week"),
        pytest.param("jobCooldown: 8d", "jobCooldown", id="cooldown-beyond-a-week"),
        pytest.param(
            "limits: {maxPreemptionsPerCycle: 10000001}",
            "limits.maxPreemptionsPerCycle",
            id="count-out-of-range",
        ),
        pytest.param(
            "timeSlicing: {maxReplicas: 1000}",
            "timeSlicing.maxReplicas",
            id="replicas-out-of-range",
        ),
        pytest.param(
            "timeSlicing: {workloads: [{name: a, overcommit: .inf}]}",
            "timeSlicing.workloads[0].overcommit",
            id="infinite-overcommit",
        ),
        pytest.param("queueShares: {LS: 0.7, BE: 0.5}", "queueShares", id="shares-above-one"),
        pytest.param("releaseTimeout: 0s", "releaseTimeout", id="zero-release-timeout"),
        pytest.param("threshold: 5%\nthreshold: 100%", "threshold", id="duplicate-key"),
        pytest.param(
            "limits:\n  maxPreemptionsPerCycle: 2\n  maxPreemptionsPerCycle: 9",
            "limits.maxPreemptionsPerCycle",
            id="duplicate-nested-key",
        ),
        pytest.param(
            "timeSlicing:\n  workloads:\n  - name: a\n    gpuShare: 0.5\n    gpuShare: 1",
            "timeSlicing.workloads[0].gpuShare",
            id="duplicate-key-in-list-item",
        ),
    ],
)
def test_single_problem_is_reported_at_its_path(text: str, path: str) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(text)
    assert [e.split(": ")[0] for e in caught.value.errors] == [path]


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("600s", 600),
        ("15m", 900),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("250ms", 0.25),
        ("2d", 172800),
        (42, 42),
        (0.5, 0.5),
        ("90", 90),
    ],
)
def test_durations(raw: object, seconds: float) -> None:
    assert parse_duration(raw) == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["15 minutes", "m", "-1s", "", None, True, [], "1h-5m"])
def test_bad_durations(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(raw)


@pytest.mark.parametrize(("raw", "ratio"), [("5%", 0.05), (0.05, 0.05), (1, 1.0), ("100%", 1.0)])
def test_ratios(raw: object, ratio: float) -> None:
    assert parse_ratio(raw) == pytest.approx(ratio)


@pytest.mark.parametrize("raw", ["5", "120%", -0.1, 1.01, True, None])
def test_bad_ratios(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_ratio(raw)


@pytest.mark.parametrize(
    ("seconds", "text"), [(900, "15m"), (5400, "1h30m"), (42.5, "42.5s"), (3, "3s"), (86400, "1d")]
)
def test_format_duration_round_trips(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("seconds", "text"), [(89971.6, "1d59m32s"), (90000.4, "1d1h"), (59.5, "59.5s"), (60.4, "1m")]
)
def test_format_duration_rounds_long_spans_to_whole_seconds(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_duplicate_key_is_an_error_not_the_last_value() -> None:
    """A loader keeps the last of two keys: 100% would make every busy job "idle"."""
    with pytest.raises(PolicyError) as caught:
        load_policy("threshold: 5%\nhorizon: 15m\nthreshold: 100%\n")
    (error,) = caught.value.errors
    assert error.startswith("threshold: duplicate key (line 3 repeats line 1")


def test_cross_field_errors_are_listed_with_field_errors() -> None:
    text = """
horizon: forever
queueShares: {LS: 0.8, BE: 0.4}
timeSlicing: {underusedBelow: 0.9, saturatedAbove: 0.5, maxReplicas: 0}
"""
    with pytest.raises(PolicyError) as caught:
        load_policy(text)
    paths = sorted(e.split(": ")[0] for e in caught.value.errors)
    assert paths == [
        "horizon",
        "queueShares",
        "timeSlicing.maxReplicas",
        "timeSlicing.underusedBelow",
    ]


def test_cross_field_check_waits_for_its_own_fields() -> None:
    """An invalid field is reported once, not again through a rule comparing it to another."""
    with pytest.raises(PolicyError) as caught:
        load_policy("timeSlicing: {underusedBelow: lots, saturatedAbove: 0.1}")
    assert [e.split(": ")[0] for e in caught.value.errors] == ["timeSlicing.underusedBelow"]
    assert "expected a ratio" in caught.value.errors[0]


def test_busy_jobs_are_opt_in_by_default() -> None:
    assert Policy().reclaim_busy_after_seconds is None
    assert Policy().release_timeout_seconds == 600.0


def test_policy_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Policy().threshold = 0.5  # type: ignore[misc]
    assert TimeSlicing().workload("nope") is None


def test_dra_gpu_drivers_and_classes_are_lists_of_dns_names() -> None:
    p = load_policy("dra: {gpuDrivers: [gpu.example.com]}")
    assert p.dra.gpu_drivers == ("gpu.example.com",)
    assert p.dra.gpu_device_classes == ("gpu.nvidia.com", "mig.nvidia.com")  # the default kept
    with pytest.raises(PolicyError) as caught:
        load_policy("dra: {gpuDrivers: [], gpuDeviceClasses: [Bad_Name]}")
    assert caught.value.errors == [
        "dra.gpuDrivers: expected a non-empty list of names, got an empty list",
        "dra.gpuDeviceClasses: not a DNS subdomain: 'Bad_Name'",
    ]
