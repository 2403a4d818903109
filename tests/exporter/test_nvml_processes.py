"""Per-process utilization is a time average over the collect interval, not a point sample."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter import simnvml
from exporter.nvml import NvmlSource
from exporter.process_activity import Average, Sample, average_by_pid, estimate_period_us
from exporter.simnvml_device import SimProcess, h100


@pytest.mark.parametrize(
    ("stamps", "previous", "expected"),
    [
        ([], 1_000_000, 1_000_000),
        ([5_000_000], 1_000_000, 1_000_000),
        ([1_000_000, 1_000_000, 3_000_000], 1_000_000, 1_000_000),
        ([1_000_000, 1_500_000, 3_000_000], 1_000_000, 500_000),
        ([10_000_000, 4_000_000], 9_000_000, 6_000_000),
    ],
    ids=["none", "one", "duplicates", "half-second", "shrinks-only"],
)
def test_estimate_period(stamps: list[int], previous: int, expected: int) -> None:
    assert estimate_period_us(stamps, previous) == expected


@pytest.mark.parametrize(
    ("samples", "interval", "period", "expected"),
    [
        ([], 10.0, 1.0, {}),
        ([Sample(1, 1, 100, 50)] * 3, 10.0, 1.0, {1: Average(0.3, 0.15)}),
        (
            [Sample(1, 1, 100, 0), Sample(2, 1, 40, 0)],
            2.0,
            1.0,
            {1: Average(0.5, 0.0), 2: Average(0.2, 0.0)},
        ),
        ([Sample(1, 1, 100, 100)] * 30, 10.0, 1.0, {1: Average(1.0, 1.0)}),
    ],
    ids=["no-samples", "duty-30", "two-pids", "clamped"],
)
def test_average_by_pid(
    samples: list[Sample], interval: float, period: float, expected: dict[int, Average]
) -> None:
    got = average_by_pid(samples, interval, period)
    assert got.keys() == expected.keys()
    for pid, avg in expected.items():
        assert got[pid].sm == pytest.approx(avg.sm) and got[pid].mem == pytest.approx(avg.mem)


@settings(max_examples=40, deadline=None)
@given(
    cycle_periods=st.sampled_from([4, 10, 20]),
    on_periods=st.integers(min_value=2, max_value=20),
    period=st.sampled_from([0.5, 1.0]),
    cycles_per_read=st.integers(min_value=1, max_value=3),
    default_period=st.sampled_from([1.0, 2.0]),
)
def test_duty_cycle_time_average(
    cycle_periods: int, on_periods: int, period: float, cycles_per_read: int, default_period: float
) -> None:
    """A process busy for `on` of every `cycle` sample periods reads as on/cycle, every time.

    `on` >= 2: two adjacent samples reveal the driver's period to the source (see below)."""
    on = min(on_periods, cycle_periods)
    cycle = cycle_periods * period
    gpu = h100(0)
    gpu.sample_period_s = period
    gpu.processes.append(SimProcess(42, sm=lambda t: 1.0 if (t % cycle) < on * period else 0.0))
    now = [1_000_000.0]
    lib = simnvml.SimNvml([gpu], clock=lambda: now[0])
    source = NvmlSource(lib, clock=lambda: now[0], default_period_s=default_period)
    readings = []
    for _ in range(4):
        now[0] += cycle * cycles_per_read
        (dev,) = source.read().devices
        readings.append(dev.processes[0].sm_util if dev.processes else 0.0)
    # The first interval may over-estimate until two adjacent samples reveal the period.
    assert readings[1:] == [pytest.approx(on / cycle_periods, abs=1e-9)] * 3


def test_a_process_that_exits_mid_interval_keeps_its_share() -> None:
    gpu = h100(0)
    gpu.processes.append(SimProcess(1, sm=lambda t: 1.0, alive=lambda t: t < 1_000_005))
    now = [1_000_000.0]
    lib = simnvml.SimNvml([gpu], clock=lambda: now[0])
    source = NvmlSource(lib, clock=lambda: now[0])
    now[0] += 10
    (dev,) = source.read().devices
    (proc,) = dev.processes
    assert proc.sm_util == pytest.approx(0.5) and proc.memory_bytes is None


def test_process_utilization_not_supported_reports_unknown_not_zero() -> None:
    gpu = h100(0)
    gpu.process_utilization_supported = False
    gpu.processes.append(SimProcess(1, sm=lambda t: 1.0, memory_bytes=lambda t: 5))
    now = [1_000_000.0]
    source = NvmlSource(simnvml.SimNvml([gpu], clock=lambda: now[0]), clock=lambda: now[0])
    now[0] += 10
    sweep = source.read()
    (proc,) = sweep.devices[0].processes
    assert proc.sm_util != proc.sm_util  # NaN: the driver cannot say
    assert proc.memory_bytes == 5 and all(sweep.collector_success.values())


@pytest.mark.parametrize(
    ("default_period", "expected"),
    [(0.5, 0.25), (1.0, 0.5)],
    ids=["default-matches-driver", "default-too-long-overestimates"],
)
def test_isolated_samples_need_the_right_default_period(
    default_period: float, expected: float
) -> None:
    """Known limit: samples never adjacent (busy 1 period in 4) cannot reveal the period."""
    gpu = h100(0)
    gpu.sample_period_s = 0.5
    gpu.processes.append(SimProcess(42, sm=lambda t: 1.0 if (t % 2.0) < 0.5 else 0.0))
    now = [1_000_000.0]
    source = NvmlSource(
        simnvml.SimNvml([gpu], clock=lambda: now[0]),
        clock=lambda: now[0],
        default_period_s=default_period,
    )
    now[0] += 20
    (dev,) = source.read().devices
    assert dev.processes[0].sm_util == pytest.approx(expected)
