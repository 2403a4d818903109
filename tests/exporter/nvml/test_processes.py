"""Per-process utilization through the real NVML source against the emulator answering as real
NVML does, under both readings of nvml.h (`process_rows`: one averaged row per busy process, or
one row per process per busy sample period): staggered timestamps, stale PIDs and junk rows."""

from __future__ import annotations

import math

import pytest

from exporter.nvml.source import NvmlSource
from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimGpu, SimProcess, h100
from exporter.sim.nvml.sampling import ProcessRows, UtilizationRow

T0 = 1_700_000_000.0


INTERVAL = 15.0  # the collect interval of the reproduction


S = 1_000_000  # µs per second


class Node:
    """Emulated GPUs read through the real `NvmlSource` on a clock moved by `sweep`."""

    def __init__(self, gpus: list[SimGpu], driver: str = "550.54.15") -> None:
        self.now = T0
        self.lib = simnvml.SimNvml(gpus, clock=lambda: self.now, driver_version=driver)
        self.source = NvmlSource(self.lib, clock=lambda: self.now)

    def sweep(self, seconds: float = INTERVAL) -> dict[int, float]:
        """{pid: SM activity} of GPU 0 after `seconds`."""
        self.now += seconds
        sweep = self.source.read()
        assert sweep.devices[0].processes is not None
        return {p.pid: p.sm_util for p in sweep.devices[0].processes}


def gpu_with(*procs: SimProcess, rows: ProcessRows = ProcessRows.AVERAGED) -> SimGpu:
    gpu = h100(0)
    gpu.process_rows = rows
    gpu.processes.extend(procs)
    return gpu


def steady(pid: int, sm: float) -> SimProcess:
    return SimProcess(pid, sm=lambda t: sm, memory_bytes=lambda t: 1 << 30)


@pytest.mark.parametrize(
    ("activity", "expected"),
    [
        pytest.param({11: 1.0}, {11: 1.0}, id="one-process-at-100"),
        pytest.param({11: 0.45, 12: 0.45}, {11: 0.45, 12: 0.45}, id="two-time-slicing-at-45"),
        pytest.param({11: 0.7, 12: 0.0}, {11: 0.7, 12: 0.0}, id="busy-beside-idle"),
        pytest.param({11: 0.0}, {11: 0.0}, id="idle-notfound"),
    ],
)
def test_each_process_reads_its_average_over_the_interval(
    activity: dict[int, float], expected: dict[int, float], process_rows: ProcessRows
) -> None:
    node = Node([gpu_with(*(steady(pid, sm) for pid, sm in activity.items()), rows=process_rows)])
    readings = [node.sweep() for _ in range(6)]
    for got in readings:
        assert got == {pid: pytest.approx(v, abs=0.011) for pid, v in expected.items()}
    if 11 in expected and expected[11] == 1.0:
        assert all(r[11] >= 0.85 for r in readings)  # the bar


def test_a_duty_cycle_reads_as_its_time_average(process_rows: ProcessRows) -> None:
    """Busy the first 5 s of every 15 s: one third, whatever the phase of the reads (an interval
    holds 15 sample periods, 5 of them busy; the reads straddle a busy stretch differently)."""
    busy = SimProcess(11, sm=lambda t: 1.0 if (t % 15.0) < 5.0 else 0.0)
    node = Node([gpu_with(busy, rows=process_rows)])
    node.sweep(7.0)
    for _ in range(5):
        assert node.sweep()[11] == pytest.approx(1 / 3, abs=0.011)


def test_a_burst_after_a_long_idle_spell_is_not_diluted(process_rows: ProcessRows) -> None:
    """Idle for 10 minutes, then busy: the first busy interval reads busy, not 15/615."""
    start = T0 + 600.0
    burst = SimProcess(11, sm=lambda t: 1.0 if t >= start else 0.0)
    node = Node([gpu_with(burst, rows=process_rows)])
    for _ in range(40):
        assert node.sweep()[11] == 0.0
    assert node.sweep()[11] >= 0.85


def test_per_period_rows_are_told_apart_once_one_process_shows_two() -> None:
    """One row per answer fits both readings: until a GPU's answers have shown two rows of one
    process a period apart, a lone row is read as the averaged reading's (here an overestimate:
    one busy period of 15 reads 1.0); from then on as one period of the interval (1/15)."""

    def sm(t: float) -> float:
        into = (t - T0) % INTERVAL
        long_burst = T0 + 4 * INTERVAL <= t < T0 + 5 * INTERVAL
        return 1.0 if 3 <= into < 4 or (long_burst and into < 6) else 0.0

    node = Node([gpu_with(SimProcess(11, sm=sm), rows=ProcessRows.PER_PERIOD)])
    node.sweep(INTERVAL)  # the reads come at T0 + k * 15 s
    assert [node.sweep()[11] for _ in range(3)] == [1.0] * 3
    assert node.sweep()[11] == pytest.approx(6 / 15)  # six rows: the reading shows
    assert [node.sweep()[11] for _ in range(3)] == [pytest.approx(1 / 15)] * 3


def test_a_process_that_exited_is_dropped_not_summed(process_rows: ProcessRows) -> None:
    """NVML keeps rows for exited PIDs (nvtop#110); only running processes count."""
    exits = SimProcess(12, sm=lambda t: 1.0, alive=lambda t: t < T0 + 20)
    node = Node([gpu_with(steady(11, 0.5), exits, rows=process_rows)])
    node.sweep()
    assert node.sweep() == {11: pytest.approx(0.5, abs=0.011)}


def test_junk_rows_are_dropped_and_a_future_timestamp_cannot_freeze_the_readings(
    process_rows: ProcessRows,
) -> None:
    gpu = gpu_with(steady(11, 0.6), steady(12, 0.3), steady(13, 0.0), rows=process_rows)
    node = Node([gpu])
    node.sweep()
    future = int((node.now + 86_400) * S)
    node.lib.inject_samples(
        0,
        [
            UtilizationRow(11, future, 50, 10),  # a running PID stamped tomorrow
            UtilizationRow(12, int(node.now * S), 37_100, 50_583),  # impossible percentages
            UtilizationRow(13, int(node.now * S), 2_147_483_632, 0),  # DCGM#83's value
            UtilizationRow(0, 0, 0, 0),  # padding
        ],
    )
    got = node.sweep()
    assert got[11] == pytest.approx(0.6, abs=0.011)  # its good row wins over the junk one
    assert got[12] == pytest.approx(0.3, abs=0.011)
    assert math.isnan(got[13])  # only junk for it: unknown this cycle, not idle
    for _ in range(3):  # lastSeenTimeStamp never took tomorrow's timestamp
        assert node.sweep() == {
            11: pytest.approx(0.6, abs=0.011),
            12: pytest.approx(0.3, abs=0.011),
            13: 0.0,
        }


def test_the_emulators_own_junk_never_shows(process_rows: ProcessRows) -> None:
    gpu = gpu_with(steady(11, 0.8), rows=process_rows)
    gpu.junk_every = 2
    node = Node([gpu])
    assert [round(node.sweep(1.0)[11], 2) for _ in range(12)] == [0.8] * 12


def test_utilization_not_supported_is_unknown_not_zero() -> None:
    gpu = gpu_with(steady(11, 1.0))
    gpu.process_utilization_supported = False
    node = Node([gpu])
    sweep = (node.sweep(), node.source.read())[1]
    (proc,) = sweep.devices[0].processes or ()
    assert math.isnan(proc.sm_util) and proc.memory_bytes == 1 << 30
    assert all(sweep.collector_success.values()) and not sweep.errors


def test_no_rows_reported_as_success_is_idle_not_a_failure(process_rows: ProcessRows) -> None:
    """pynvml raises NVMLError(NVML_SUCCESS) if the driver's sizing call finds nothing."""
    node = Node([gpu_with(steady(11, 0.9), rows=process_rows)])
    node.sweep()
    node.lib.inject("nvmlDeviceGetProcessUtilization", simnvml.NVML_SUCCESS, times=1)
    node.now += INTERVAL
    sweep = node.source.read()
    assert [p.sm_util for p in sweep.devices[0].processes or ()] == [0.0]
    assert not sweep.errors and all(sweep.collector_success.values())


def test_mps_clients_are_listed_with_their_own_activity(process_rows: ProcessRows) -> None:
    gpu = gpu_with(
        SimProcess(21, sm=lambda t: 0.3, memory_bytes=lambda t: 2 << 30, mps=True),
        SimProcess(22, sm=lambda t: 0.5, memory_bytes=lambda t: 3 << 30, mps=True),
        rows=process_rows,
    )
    gpu.mps_server_pid = 20
    node = Node([gpu])
    node.sweep()
    node.now += INTERVAL
    (dev,) = node.source.read().devices
    by_pid = {p.pid: p for p in dev.processes or ()}
    assert set(by_pid) == {20, 21, 22}  # the server and both clients
    assert by_pid[21].sm_util == pytest.approx(0.3, abs=0.011)
    assert by_pid[22].sm_util == pytest.approx(0.5, abs=0.011)
    assert (by_pid[21].memory_bytes, by_pid[22].memory_bytes) == (2 << 30, 3 << 30)
    assert by_pid[20].sm_util == 0.0


@pytest.mark.parametrize("driver", ["470.256.02", "535.183.01", "570.86.15"])
def test_drivers_before_r510_fall_back_to_v2_listings(driver: str) -> None:
    node = Node([gpu_with(steady(11, 0.5))], driver=driver)
    node.sweep()
    node.now += INTERVAL
    sweep = node.source.read()
    (proc,) = sweep.devices[0].processes or ()
    assert (proc.pid, proc.memory_bytes) == (11, 1 << 30)
    assert proc.sm_util == pytest.approx(0.5, abs=0.011)
    assert not sweep.errors and all(sweep.collector_success.values())
    v2 = node.lib.calls.get("nvmlDeviceGetComputeRunningProcesses_v2", 0)
    assert (v2 > 0) == driver.startswith("470")


def test_a_mig_instances_activity_is_divided_evenly_between_its_processes() -> None:
    """NVML has no per-process utilization under MIG: each of an instance's processes gets an
    equal share of its GPM activity, and the shares add up to the instance."""
    gpu = h100(0, mig=True)
    gi = gpu.mig[0].gpu_instance_id  # type: ignore[index,union-attr]
    gpu.processes.extend(SimProcess(pid, sm=lambda t: 0.3, gpu_instance_id=gi) for pid in (5, 6))
    node = Node([gpu])
    node.sweep()  # GPM differences two samples
    node.now += INTERVAL
    sweep = node.source.read()
    (instance,) = [d for d in sweep.devices if d.mig and d.mig.gpu_instance_id == gi]
    assert instance.values["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == pytest.approx(0.6)
    assert instance.processes is not None
    assert {p.pid: p.sm_util for p in instance.processes} == {
        5: pytest.approx(0.3),
        6: pytest.approx(0.3),
    }


def test_a_driver_without_the_mps_call_still_lists_its_processes() -> None:
    """Before R470 NVML has no MPS listing: no MPS clients to list, and nothing unknown."""
    node = Node([gpu_with(steady(11, 0.5))], driver="460.106.00")
    node.sweep()
    node.now += INTERVAL
    sweep = node.source.read()
    (proc,) = sweep.devices[0].processes or ()
    assert proc.pid == 11 and proc.sm_util == pytest.approx(0.5, abs=0.011)
    assert not sweep.errors and all(sweep.collector_success.values())
