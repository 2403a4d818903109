"""Backfilled history: valid OpenMetrics that promtool turns into blocks, with live labels."""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from promserver import PROMTOOL, require_prometheus

from exporter.model import NodeSnapshot, PodRef, PodUsage
from exporter.nvml.source import NvmlSource
from exporter.render import exposition_text
from exporter.sim.backend import SimNode, make_pods, sim_gpus, sim_specs
from exporter.sim.backfill import main, write_openmetrics

END = 1_700_000_000.0
FAMILIES = {
    "gpu_pod_utilization_ratio",
    "gpu_pod_allocated",
    "gpu_pod_memory_used_bytes",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
}
_SAMPLE = re.compile(r"^(\w+)\{(.*)\} \S+( \S+)?$")


def _node(start: float) -> SimNode:
    specs = sim_specs(3, 1, 9, None)
    return SimNode(
        sim_gpus(3, 1, 4), make_pods(specs, 4), seed=4, clock=lambda: start, node_name="node-a"
    )


def _series(text: str) -> set[tuple[str, str]]:
    out = set()
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m[1] in FAMILIES:
            out.add((m[1], m[2]))
    return out


def _live_exposition(node: SimNode) -> str:
    """What the live exporter renders for this node, pods attributed from the ground truth."""
    devices = NvmlSource(node.lib, clock=node.clock).read().devices
    pods = []
    for p in node.placed:
        spec = node.pods[p.pod].spec
        mig_uuid = p.device_id if p.mig_slot is not None else None
        dev = next(d for d in devices if (d.index, d.mig_uuid) == (p.gpu, mig_uuid))
        pods.append(
            PodUsage(PodRef(spec.namespace, spec.pod, spec.container), dev, 0.0, 0, 0, True)
        )
    snapshot = NodeSnapshot("node-a", END, 0.0, devices, tuple(pods), {}, {})
    return exposition_text(snapshot)


def test_history_has_the_live_series_and_parses() -> None:
    start = END - 3600
    out = io.StringIO()
    n = write_openmetrics(out, _node(start), start, END, 60.0)
    text = out.getvalue()
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(families) == FAMILIES
    assert n == sum(len(f.samples) for f in families.values())
    assert all(s.timestamp is not None for f in families.values() for s in f.samples)
    assert _series(text) == _series(_live_exposition(_node(start)))
    ratios = [s.value for s in families["gpu_pod_utilization_ratio"].samples]
    assert all(0.0 <= r <= 1.0 for r in ratios) and max(ratios) > 0.5


@pytest.mark.prometheus
def test_promtool_creates_blocks(tmp_path: Path) -> None:
    require_prometheus()
    out = tmp_path / "history.om"
    argv = [
        "--sim.gpus",
        "2",
        "--sim.pods",
        "5",
        "--sim.seed",
        "1",
        "--days",
        "0.1",
        "--step",
        "60",
    ]
    assert main([*argv, "--end", str(END), "--node-name", "node-a", "--out", str(out)]) == 0
    result = subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(out), str(tmp_path / "tsdb")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    blocks = [p for p in (tmp_path / "tsdb").iterdir() if (p / "meta.json").exists()]
    assert blocks
