"""The replay backend on the real GenTD26 trace: pods replay their own series through NVML."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest
from exporter_fakes import Clock

from exporter.sim.replay import TraceSeries, build_replay_backend, choose_pods, load_trace

T0 = 1_800_000_000.0


@pytest.fixture(scope="module")
def duty_cycle(shared_data: Path) -> Path:
    return shared_data / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz"


@pytest.mark.parametrize(
    ("tau", "expected"),
    [
        (99.0, None),
        (100.0, 5.0),
        (156.9, 5.0),
        (157.0, 7.0),
        (157.0 + 114.0, 7.0),
        (157.0 + 114.1, None),
    ],
    ids=["before-first", "first", "held", "second", "held-to-gap-limit", "past-last"],
)
def test_series_holds_values_between_samples(tau: float, expected: float | None) -> None:
    assert TraceSeries((100.0, 157.0), (5.0, 7.0)).at(tau) == expected


def test_replayed_pods_follow_their_trace(duty_cycle: Path, tmp_path: Path) -> None:
    clock = Clock(T0)
    parts, node = build_replay_backend(
        file=duty_cycle,
        speed=57.0,
        seed=2,
        fixture_dir=tmp_path,
        node_name="n",
        clock=clock,
        pods=4,
    )
    frame = pd.read_csv(duty_cycle)
    start = float(frame["timestamp_anon"].min())
    pid_to_pod = {p.pid: node.pods[p.pod].spec for p in node.placed}
    checked = 0
    # speed 57: one trace sample per wall second; read every 5 s = 5 trace samples.
    for step in range(1, 6):
        before = clock.now
        clock.now += 5
        sweep = parts.devices.read()
        truth = node.expected_utilization(before, clock.now)
        for dev in sweep.devices:
            for proc in dev.processes:
                spec = pid_to_pod[proc.pid]
                assert proc.sm_util == pytest.approx(truth[(spec.namespace, spec.pod)], abs=0.011)
        # And the truth is the trace itself: mean of the percent values in that trace window.
        for (ns, pod), ip in node.trace_ids.items():
            rows = frame[frame["container_ip"] == ip].set_index("timestamp_anon")["value"]
            window = [rows.get(start + 57.0 * k) for k in range((step - 1) * 5, step * 5)]
            if all(v is not None for v in window):
                assert truth[(ns, pod)] == pytest.approx(
                    sum(window) / len(window) / 100.0, abs=1e-9
                )
                checked += 1
    assert checked >= 5
    assert len(node.trace_ids) == 4
    assert all(ip in set(frame["container_ip"]) for ip in node.trace_ids.values())


def test_pod_choice_is_seeded(duty_cycle: Path) -> None:
    trace = load_trace(duty_cycle)
    assert choose_pods(trace, 5, 1) == choose_pods(trace, 5, 1)
    assert choose_pods(trace, 5, 1) != choose_pods(trace, 5, 2)
    assert trace.memory, "the memory sibling file is read"


def test_plain_csv_and_missing_columns(tmp_path: Path) -> None:
    good = tmp_path / "trace.csv.gz"
    rows = "\n".join(f"{(k % 4) * 25.0},{1000.0 + 57 * k},abc123" for k in range(200))
    good.write_bytes(gzip.compress(f"value,timestamp_anon,container_ip\n{rows}\n".encode()))
    trace = load_trace(good)
    assert list(trace.utilization) == ["abc123"] and not trace.memory
    bad = tmp_path / "bad.csv"
    bad.write_text("value,time\n1,2\n")
    with pytest.raises(ValueError, match="missing columns"):
        load_trace(bad)
