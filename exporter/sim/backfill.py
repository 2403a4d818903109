"""History for a simulated node, as OpenMetrics text for `promtool tsdb create-blocks-from`.

`python -m exporter.sim.backfill --sim.gpus 4 --sim.pods 12 --days 3 --step 60 --out FILE` writes
what the live `sim` exporter would have exposed over the last `--days` days, one sample per
`--step` seconds: the per-pod families (`gpu_pod_utilization_ratio`, `gpu_pod_allocated`,
`gpu_pod_memory_used_bytes`) and `DCGM_FI_DEV_GPU_UTIL` / `_FB_USED` / `_FB_FREE`. The node is the
same `SimNode` (same seed, same placement, same identities) and the values come from the same
pure shape functions, averaged over each step on the driver's sample grid (up to 6 points), so
backfilled history joins the live series without a seam. Label values come from one real sweep of
the emulated devices through `NvmlSource` and the renderer's label code, so they are identical.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

from exporter.model import DeviceReading, PodRef
from exporter.nvml.readings import FB_FREE, FB_USED, GPU_UTIL
from exporter.nvml.source import NvmlSource
from exporter.render import escape_help, format_value, series_labels
from exporter.sim.backend import SimNode, make_pods, sim_gpus, sim_specs
from gpu_contract import (
    BY_NAME,
    POD_ALLOCATED,
    POD_MEMORY,
    POD_UTILIZATION,
)

MIB = 1 << 20
SUBSAMPLES = 6


def _device_readings(node: SimNode) -> list[DeviceReading]:
    source = NvmlSource(node.lib, clock=node.clock)
    try:
        return list(source.read().devices)
    finally:
        source.close()


class History:
    """Every step's per-process activity and memory, computed once."""

    def __init__(self, node: SimNode, start: float, end: float, step: float) -> None:
        self.node = node
        self.times = [start + k * step for k in range(int((end - start) // step) + 1)]
        n = max(1, min(SUBSAMPLES, int(step / node.period_s)))
        self.util: list[list[float]] = []
        self.memory: list[list[int]] = []
        for t in self.times:
            points = [t - step + (j + 0.5) * step / n for j in range(n)]
            acts = [node.activity_at(p) for p in points]
            self.util.append([sum(a[i].sm for a in acts) / n for i in range(len(node.placed))])
            self.memory.append([a.memory_bytes for a in node.activity_at(t)])


def _device_series(
    history: History, readings: list[DeviceReading], hostname: str
) -> Iterator[tuple[str, str, list[float]]]:
    """(family, labels, values) of the device families, for GPUs and MIG instances."""
    node = history.node
    for dev in readings:
        gpu = node.gpus[dev.index]
        if dev.mig is None and gpu.mig_enabled:
            continue  # its memory is its instances' (gpu_contract.dcgm.MigScope)
        if dev.mig is not None:
            slot, inst = next(
                (s, m)
                for s, m in enumerate(gpu.mig or ())
                if m is not None and m.uuid == dev.mig_uuid
            )
            members = [i for i, p in enumerate(node.placed) if p.group == (dev.index, slot)]
            total, reserved = inst.memory_total, 0
        else:
            members = [i for i, p in enumerate(node.placed) if p.gpu == dev.index]
            total, reserved = gpu.memory_total, gpu.memory_reserved
        labels = series_labels(BY_NAME[FB_USED], dev, hostname)
        used = [min(sum(m[i] for i in members), total - reserved) // MIB for m in history.memory]
        yield FB_USED, labels, [float(u) for u in used]
        yield FB_FREE, labels, [float((total - reserved) // MIB - u) for u in used]
        if dev.mig is None:
            busy = [min(1.0, sum(u[i] for i in members)) for u in history.util]
            yield GPU_UTIL, labels, [float(round(b * 100)) for b in busy]


def _pod_series(
    history: History, readings: list[DeviceReading], hostname: str
) -> Iterator[tuple[str, str, list[float]]]:
    node = history.node
    for i, p in enumerate(node.placed):
        spec = node.pods[p.pod].spec
        mig_uuid = p.device_id if p.mig_slot is not None else None
        dev = next(d for d in readings if (d.index, d.mig_uuid) == (p.gpu, mig_uuid))
        ref = PodRef(spec.namespace, spec.pod, spec.container)
        labels = series_labels(BY_NAME[POD_UTILIZATION], dev, hostname, ref)
        yield POD_UTILIZATION, labels, [u[i] for u in history.util]
        yield POD_ALLOCATED, labels, [1.0] * len(history.times)
        yield POD_MEMORY, labels, [float(m[i]) for m in history.memory]


def write_openmetrics(out: TextIO, node: SimNode, start: float, end: float, step: float) -> int:
    """Write the history as OpenMetrics text ending in `# EOF`; return the number of samples."""
    readings = _device_readings(node)
    history = History(node, start, end, step)
    series = list(_device_series(history, readings, node.node_name))
    series += list(_pod_series(history, readings, node.node_name))
    stamps = [format_value(float(int(t))) for t in history.times]
    written = 0
    for family in (GPU_UTIL, FB_USED, FB_FREE, POD_UTILIZATION, POD_ALLOCATED, POD_MEMORY):
        spec = BY_NAME[family]
        out.write(f"# HELP {family} {escape_help(spec.help)}\n# TYPE {family} {spec.kind}\n")
        for name, labels, values in series:
            if name != family:
                continue
            for stamp, value in zip(stamps, values, strict=True):
                out.write(f"{family}{{{labels}}} {format_value(value)} {stamp}\n")
            written += len(values)
    out.write("# EOF\n")
    return written


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m exporter.sim.backfill", description=__doc__)
    p.add_argument("--sim.gpus", dest="gpus", type=int, default=4)
    p.add_argument("--sim.mig", dest="mig", type=int, default=0)
    p.add_argument("--sim.pods", dest="pods", type=int, default=12)
    p.add_argument("--sim.seed", dest="seed", type=int, default=0)
    p.add_argument("--sim.workloads", dest="workloads", type=Path, default=None)
    p.add_argument("--node-name", default=os.environ.get("NODE_NAME") or socket.gethostname())
    p.add_argument("--days", type=float, default=3.0)
    p.add_argument("--step", type=float, default=60.0)
    p.add_argument("--end", type=float, default=None, help="Unix seconds (default: now)")
    p.add_argument("--out", type=Path, required=True)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    end = float(args.end if args.end is not None else time.time())
    end -= end % args.step
    start = end - args.days * 86400.0
    specs = sim_specs(args.gpus, args.mig, args.pods, args.workloads)
    node = SimNode(
        sim_gpus(args.gpus, args.mig, args.seed),
        make_pods(specs, args.seed),
        seed=args.seed,
        clock=lambda: start,
        node_name=args.node_name,
    )
    with args.out.open("w") as out:
        n = write_openmetrics(out, node, start, end, args.step)
    print(f"wrote {n} samples from {start:.0f} to {end:.0f} to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
