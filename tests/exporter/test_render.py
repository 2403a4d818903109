"""Rendering: a golden exposition, escaping, value formats, gzip, and promtool on a full node."""

from __future__ import annotations

import gzip
from types import MappingProxyType

import pytest
from exporter_fakes import gpu, mig_instance, proc, promtool_problems
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from exporter.model import NodeSnapshot, PodRef, PodUsage
from exporter.render import escape_label_value, exposition, exposition_text, format_value
from gpu_contract import DEVICE_METRICS

GPU0 = gpu(
    0,
    values={"DCGM_FI_DEV_GPU_UTIL": 87.0, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 123456789.0},
    processes=(proc(7, 0.6),),
)
MIG = mig_instance(1, 3)


def snapshot(**kw: object) -> NodeSnapshot:
    fields: dict[str, object] = {
        "hostname": "node-1",
        "taken_at": 1700000000.5,
        "duration_seconds": 0.0125,
        "devices": (GPU0, MIG),
        "pods": (
            PodUsage(PodRef("team-a", "train-0", "trainer"), GPU0, 0.6, 3 << 30, 1, True),
            PodUsage(PodRef("team-b", "nb", "notebook"), MIG, 0.0, 0, 0, True),
        ),
        "collector_success": MappingProxyType({"podresources": True, "kubernetes": False}),
        "errors_total": MappingProxyType({"kubernetes_list_pods": 3}),
    }
    fields.update(kw)
    return NodeSnapshot(**fields)  # type: ignore[arg-type]


G0 = (
    'gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:10:00.0",'
    'device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",'
    'DCGM_FI_DRIVER_VERSION="550.54.15"'
)
M13 = (
    'gpu="1",UUID="GPU-00000001-0000-0000-0000-000000000000",pci_bus_id="00000000:11:00.0",'
    'device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",'
    'DCGM_FI_DRIVER_VERSION="550.54.15",GPU_I_PROFILE="1g.10gb",GPU_I_ID="3"'
)
P0 = (
    'namespace="team-a",pod="train-0",container="trainer",gpu="0",'
    'UUID="GPU-00000000-0000-0000-0000-000000000000",Hostname="node-1"'
)
P1 = (
    'namespace="team-b",pod="nb",container="notebook",gpu="1",'
    'UUID="GPU-00000001-0000-0000-0000-000000000000",Hostname="node-1",GPU_I_ID="3"'
)
GOLDEN = f"""\
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{{{G0}}} 87
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{{{M13}}} 100
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{G0}}} 123456789
# HELP gpu_pod_utilization_ratio Share of the GPU's time this pod's processes kept it busy over \
the last collect interval.
# TYPE gpu_pod_utilization_ratio gauge
gpu_pod_utilization_ratio{{{P0}}} 0.6
gpu_pod_utilization_ratio{{{P1}}} 0
# HELP gpu_pod_memory_used_bytes GPU memory used by this pod's processes.
# TYPE gpu_pod_memory_used_bytes gauge
gpu_pod_memory_used_bytes{{{P0}}} 3221225472
gpu_pod_memory_used_bytes{{{P1}}} 0
# HELP gpu_pod_allocated 1 for every pod the kubelet allocated this device to.
# TYPE gpu_pod_allocated gauge
gpu_pod_allocated{{{P0}}} 1
gpu_pod_allocated{{{P1}}} 1
# HELP gpu_pod_processes Number of this pod's processes on the device.
# TYPE gpu_pod_processes gauge
gpu_pod_processes{{{P0}}} 1
gpu_pod_processes{{{P1}}} 0
# HELP gpu_exporter_collector_success 1 when the collector's last cycle succeeded on every \
device, 0 otherwise.
# TYPE gpu_exporter_collector_success gauge
gpu_exporter_collector_success{{collector="kubernetes"}} 0
gpu_exporter_collector_success{{collector="podresources"}} 1
# HELP gpu_exporter_collect_duration_seconds Duration of the last collect cycle.
# TYPE gpu_exporter_collect_duration_seconds gauge
gpu_exporter_collect_duration_seconds 0.0125
# HELP gpu_exporter_last_collect_timestamp_seconds Unix time of the last completed collect cycle.
# TYPE gpu_exporter_last_collect_timestamp_seconds gauge
gpu_exporter_last_collect_timestamp_seconds 1700000000.5
# HELP gpu_exporter_errors_total Errors returned by calls to NVML, the kubelet and /proc, by call.
# TYPE gpu_exporter_errors_total counter
gpu_exporter_errors_total{{call="kubernetes_list_pods"}} 3
"""


def test_golden_exposition() -> None:
    assert exposition_text(snapshot()) == GOLDEN


def test_device_series_never_carry_pod_labels() -> None:
    for family in text_string_to_metric_families(exposition_text(snapshot())):
        for sample in family.samples:
            if sample.name.startswith("DCGM_"):
                assert not {"pod", "namespace", "container"} & set(sample.labels)


def test_gzip_is_the_same_bytes() -> None:
    rendered = exposition(snapshot())
    assert gzip.decompress(rendered.gzipped) == rendered.body == GOLDEN.encode()


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(0.0, "0", id="zero"),
        pytest.param(42.0, "42", id="integral-float"),
        pytest.param(7, "7", id="int"),
        pytest.param(0.25, "0.25", id="fraction"),
        pytest.param(1e20, "1e+20", id="huge"),
        pytest.param(float("nan"), "NaN", id="nan"),
        pytest.param(float("inf"), "+Inf", id="inf"),
        pytest.param(float("-inf"), "-Inf", id="minus-inf"),
    ],
)
def test_format_value(value: float, text: str) -> None:
    assert format_value(value) == text


@given(st.text())
def test_any_label_value_round_trips_through_the_parser(value: str) -> None:
    pods = (PodUsage(PodRef("ns", value, "c"), GPU0, 0.5, 1, 1, True),)
    text = exposition_text(snapshot(hostname=value, pods=pods))
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    assert all(s.labels["Hostname"] == value for s in samples if "Hostname" in s.labels)
    assert {s.labels["pod"] for s in samples if "pod" in s.labels} == {value}


def test_escape_label_value() -> None:
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'


@pytest.mark.prometheus
def test_promtool_finds_nothing_but_dcgm_naming_on_a_full_node() -> None:
    every = {m.name: 1.0 for m in DEVICE_METRICS}
    devices = tuple(gpu(i, values=every) for i in range(2)) + tuple(
        mig_instance(2, gi) for gi in range(7)
    )
    pods = tuple(
        PodUsage(PodRef("ns", f"p{i}", "c"), d, 0.1, 1, 1, True) for i, d in enumerate(devices)
    )
    assert promtool_problems(exposition_text(snapshot(devices=devices, pods=pods))) == []
