"""The collect cycle end to end on fixtures: attribution through files and /proc, degradation."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import pytest
from exporter_fakes import ScriptedDevices, alloc, gpu, proc, uid, write_proc
from prometheus_client.parser import text_string_to_metric_families

from exporter.cycle import AttributionSources, CollectLoop
from exporter.model import DeviceReading
from exporter.node.apiserver import ApiEndpoint
from exporter.node.podresources import AllocationsFile, PodResourcesClient
from exporter.node.pods import KubernetesPods, PodsFile
from exporter.sources import Allocation, DeviceSweep


def write_fixtures(
    tmp: Path, allocations: list[Allocation], pods: dict[str, tuple[str, str]]
) -> None:
    rows = [
        {
            "namespace": a.namespace,
            "pod": a.pod,
            "container": a.container,
            "resource_name": a.resource_name,
            "device_ids": list(a.device_ids),
        }
        for a in allocations
    ]
    (tmp / "podresources.json").write_text(json.dumps(rows))
    (tmp / "pods.json").write_text(
        json.dumps([{"uid": u, "namespace": ns, "name": n} for u, (ns, n) in pods.items()])
    )


def samples(loop: CollectLoop, family: str) -> dict[tuple[str, ...], float]:
    assert loop.published is not None
    text = loop.published.exposition.body.decode()
    out: dict[tuple[str, ...], float] = {}
    for f in text_string_to_metric_families(text):
        for s in f.samples:
            if s.name == family:
                out[
                    tuple(
                        f"{k}={v}"
                        for k, v in sorted(s.labels.items())
                        if k in ("pod", "gpu", "collector", "call")
                    )
                ] = s.value
    return out


@pytest.fixture
def node(tmp_path: Path) -> tuple[Path, list[list[DeviceReading]]]:
    (tmp_path / "proc").mkdir()
    write_proc(tmp_path / "proc", 101, uid(1))
    write_proc(tmp_path / "proc", 102, uid(2))
    return tmp_path, [
        [gpu(0, processes=(proc(101, 0.5), proc(102, 0.25)), values={"DCGM_FI_DEV_GPU_UTIL": 75})]
    ]


def make_loop(tmp: Path, devices: ScriptedDevices) -> CollectLoop:
    sources = AttributionSources(
        AllocationsFile(tmp / "podresources.json"), PodsFile(tmp / "pods.json"), tmp / "proc"
    )
    return CollectLoop(devices, sources, hostname="node-1", clock=lambda: 1000.0)


def test_a_cycle_attributes_time_sliced_pods_and_idle_holders(
    node: tuple[Path, list[list[DeviceReading]]],
) -> None:
    tmp, script = node
    g = script[0][0]
    write_fixtures(
        tmp,
        [
            alloc("a", "one", f"{g.uuid}::0"),
            alloc("b", "two", f"{g.uuid}::1"),
            alloc("c", "idle", f"{g.uuid}::2"),
        ],
        {uid(1): ("a", "one"), uid(2): ("b", "two")},
    )
    loop = make_loop(tmp, ScriptedDevices(lambda: DeviceSweep(tuple(script[-1]))))
    loop.collect_once()
    assert samples(loop, "gpu_pod_utilization_ratio") == {
        ("gpu=0", "pod=one"): 0.5,
        ("gpu=0", "pod=two"): 0.25,
        ("gpu=0", "pod=idle"): 0.0,
    }
    assert samples(loop, "gpu_pod_allocated") == dict.fromkeys(
        [("gpu=0", "pod=one"), ("gpu=0", "pod=two"), ("gpu=0", "pod=idle")], 1.0
    )
    assert samples(loop, "gpu_exporter_collector_success") == {
        ("collector=cycle",): 1.0,
        ("collector=kubernetes",): 1.0,
        ("collector=podresources",): 1.0,
        ("collector=proc",): 1.0,
    }


def test_a_gone_pod_loses_its_series_in_the_next_cycle(
    node: tuple[Path, list[list[DeviceReading]]],
) -> None:
    tmp, script = node
    g = script[0][0]
    write_fixtures(tmp, [alloc("a", "one", g.uuid)], {uid(1): ("a", "one")})
    loop = make_loop(tmp, ScriptedDevices(lambda: DeviceSweep(tuple(script[-1]))))
    loop.collect_once()
    assert set(samples(loop, "gpu_pod_processes")) == {("gpu=0", "pod=one")}
    write_fixtures(tmp, [], {})
    script.append([gpu(0, values={"DCGM_FI_DEV_GPU_UTIL": 0})])
    loop.collect_once()
    assert samples(loop, "gpu_pod_processes") == {}
    assert set(samples(loop, "DCGM_FI_DEV_GPU_UTIL")) == {("gpu=0",)}


def test_a_pid_is_read_once_while_listed_and_afresh_once_it_was_gone(
    node: tuple[Path, list[list[DeviceReading]]],
) -> None:
    """The owner cache: while NVML lists a PID its cgroup is not read again; a PID absent for a
    cycle is forgotten, so when the kernel reuses it for another pod's process it is read anew."""
    tmp, script = node
    g = script[0][0]
    write_fixtures(
        tmp,
        [alloc("a", "one", f"{g.uuid}::0"), alloc("b", "two", f"{g.uuid}::1")],
        {uid(1): ("a", "one"), uid(2): ("b", "two")},
    )
    script[0] = [gpu(0, processes=(proc(101, 0.5),))]
    loop = make_loop(tmp, ScriptedDevices(lambda: DeviceSweep(tuple(script[-1]))))
    loop.collect_once()
    write_proc(tmp / "proc", 101, uid(2))  # the same PID now in pod two's cgroup
    loop.collect_once()  # still listed: the cached owner stands
    assert samples(loop, "gpu_pod_processes")[("gpu=0", "pod=one")] == 1.0
    script.append([gpu(0)])  # the process is gone for a cycle
    loop.collect_once()
    script.append([gpu(0, processes=(proc(101, 0.5),))])  # and the PID comes back, reused
    loop.collect_once()
    assert samples(loop, "gpu_pod_processes") == {
        ("gpu=0", "pod=one"): 0.0,
        ("gpu=0", "pod=two"): 1.0,
    }


def test_no_kubelet_socket_means_device_metrics_a_warning_and_a_self_metric(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sources = AttributionSources(PodResourcesClient(tmp_path / "kubelet.sock"), None, tmp_path)
    devices = ScriptedDevices(lambda: DeviceSweep((gpu(0, processes=(proc(5, 0.5),)),)))
    loop = CollectLoop(devices, sources, hostname="n")
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            loop.collect_once()
    assert samples(loop, "gpu_exporter_collector_success") == {
        ("collector=cycle",): 1.0,
        ("collector=podresources",): 0.0,
    }
    assert samples(loop, "gpu_exporter_errors_total") == {("call=podresources_list",): 3.0}
    assert samples(loop, "gpu_pod_utilization_ratio") == {}
    assert set(samples(loop, "DCGM_FI_DEV_GPU_UTIL")) == {("gpu=0",)}
    assert sum("device metrics only" in r.getMessage() for r in caplog.records) == 1


def test_sweep_errors_and_collector_failures_accumulate() -> None:
    sweep = DeviceSweep(
        (gpu(0),), collector_success={"temperature": False}, errors={"nvmlDeviceGetTemperature": 1}
    )
    loop = CollectLoop(ScriptedDevices(lambda: sweep), None, hostname="n")
    loop.collect_once()
    loop.collect_once()
    assert samples(loop, "gpu_exporter_errors_total") == {("call=nvmlDeviceGetTemperature",): 2.0}
    assert samples(loop, "gpu_exporter_collector_success") == {
        ("collector=cycle",): 1.0,
        ("collector=temperature",): 0.0,
    }


async def test_the_loop_survives_failing_cycles_and_stops_when_asked() -> None:
    calls = {"n": 0}

    def sweep() -> DeviceSweep:
        calls["n"] += 1
        if calls["n"] % 2:
            raise RuntimeError("driver hiccup")
        return DeviceSweep((gpu(0),))

    loop = CollectLoop(ScriptedDevices(sweep), None, hostname="n", interval=0.001)
    stop = asyncio.Event()
    task = asyncio.create_task(loop.run(stop))
    give_up = time.monotonic() + 60  # only a loop that hangs takes this long
    while calls["n"] < 6:
        assert time.monotonic() < give_up, f"{calls['n']} cycles only"
        await asyncio.sleep(0.005)
    stop.set()
    await asyncio.wait_for(task, timeout=60)
    assert calls["n"] >= 6  # the loop went on after each failure
    assert samples(loop, "gpu_exporter_errors_total")[("call=device_read",)] >= 3


def test_without_the_api_exclusive_gpus_are_still_attributed(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    write_proc(tmp_path / "proc", 101, uid(1))
    write_proc(tmp_path / "proc", 102, uid(2))
    g0 = gpu(0, processes=(proc(101, 0.5),))
    g1 = gpu(1, processes=(proc(102, 0.25),))
    write_fixtures(
        tmp_path,
        [
            alloc("a", "one", g0.uuid),
            alloc("b", "two", f"{g1.uuid}::0"),
            alloc("c", "x", f"{g1.uuid}::1"),
        ],
        {},
    )
    api = KubernetesPods(
        "node-1", ApiEndpoint("http://127.0.0.1:1"), start=False, request_timeout=2
    )
    api.refresh()  # fails: connection refused
    sources = AttributionSources(
        AllocationsFile(tmp_path / "podresources.json"), api, tmp_path / "proc"
    )
    loop = CollectLoop(ScriptedDevices(lambda: DeviceSweep((g0, g1))), sources, hostname="n")
    loop.collect_once()
    api.close()
    assert samples(loop, "gpu_pod_utilization_ratio") == {
        ("gpu=0", "pod=one"): 0.5,  # sole holder: attributed without the API
    }  # shared: cannot tell whose busy process it is, so neither holder reads (never 0.0)
    assert set(samples(loop, "gpu_pod_allocated")) == {
        ("gpu=0", "pod=one"),
        ("gpu=1", "pod=two"),
        ("gpu=1", "pod=x"),
    }
    assert samples(loop, "gpu_exporter_collector_success")[("collector=kubernetes",)] == 0.0
    assert samples(loop, "gpu_exporter_errors_total") == {("call=kubernetes_list_pods",): 1.0}
