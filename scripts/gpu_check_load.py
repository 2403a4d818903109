"""gpu_check's load: one busy process on a GPU, then a second one beside it, time-slicing it.

On a GPU box (`--load torch`, or `auto` when pynvml and torch are importable) `TorchLoad` runs a
bf16 8192x8192 matmul loop per process on CUDA device 0 (in PCI bus order, NVML's order), each in
a child process stopped by the caller's ExitStack; `enter(phase)` starts that phase's process and
returns once it computes, with the GPU's UUID when torch can say it. Without a GPU,
`sim_workloads` writes the same two phases as pods of the emulated node (`shape: constant`,
demand 1.0, each from its phase's start; the simulator time-slices them as a GPU does) on a GPU
of their own, beside ordinary pods, so that the in-process collector, the served exporter and a
fake nvidia-smi built from the same flags all see the same node. Like the torch processes, the
emulated load runs on until the check is over: nvidia-smi and the served exporter, run after
the last cycle however late, still find the GPU under it.
"""

from __future__ import annotations

import importlib.util
import os
import select
import subprocess
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from gpu_check_served import stop_process

READY_TIMEOUT_S = 60.0  # torch import and CUDA init
NAMESPACE = "gpu-check"

LOAD = """
import sys, time, torch
end = time.time() + float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
(a @ a).sum().item()
uuid = getattr(torch.cuda.get_device_properties(0), "uuid", "")
print("ready", f"GPU-{uuid}" if uuid else "", flush=True)
while time.time() < end:
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
"""


@dataclass(frozen=True)
class Phase:
    name: str  # "one" (one busy process), "two" (two), or "idle" (no load)
    start: float  # Unix seconds
    end: float


def wants_load(load: str, lib: str) -> bool:
    """auto: the scripted pods on the emulator; torch on a GPU box when it is installed."""
    if load == "auto":
        return lib == "sim" or importlib.util.find_spec("torch") is not None
    return load != "none"


def phases(start: float, seconds: float, loaded: bool) -> list[Phase]:
    if not loaded:
        return [Phase("idle", start, start + seconds)]
    half = seconds / 2
    return [Phase("one", start, start + half), Phase("two", start + half, start + seconds)]


class TorchLoad:
    """Real GPU load, one more process per phase."""

    def __init__(self, seconds: float, stack: ExitStack) -> None:
        self._seconds = seconds
        self._stack = stack
        self.pids: list[int] = []
        self.uuid: str | None = None
        self.failed = ""

    def enter(self, phase: Phase) -> bool:
        """Start this phase's process; False (and `failed` says why) if it does not compute."""
        if phase.name == "idle":
            return True
        env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
        cmd = [sys.executable, "-c", LOAD, str(self._seconds)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
        self._stack.callback(stop_process, proc)
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
        words = proc.stdout.readline().split() if ready else []
        if not words or words[0] != "ready":
            self.failed = f"the {phase.name} load did not start (torch on CUDA device 0)"
            return False
        self.uuid = self.uuid or (words[1] if len(words) > 1 else None)
        self.pids.append(proc.pid)
        return True


def sim_workloads(path: Path, mig: int, plan: list[Phase]) -> int:
    """Write the emulated node's pods (the load phases on a time-sliced GPU of their own, after
    one exclusive GPU, beside ordinary pods); return how many GPUs the node needs."""
    one = next((p for p in plan if p.name == "one"), None)
    two = next((p for p in plan if p.name == "two"), None)
    rows = [f"- {{namespace: {NAMESPACE}, pod: train-0, shape: training}}"]
    rows += [
        f"- {{namespace: {NAMESPACE}, pod: mig-eval-{i}, shape: evaluation, mig: true}}"
        for i in range(mig)
    ]
    if one is not None and two is not None:
        load = "shape: constant, shared: true"
        rows.append(f"- {{namespace: {NAMESPACE}, pod: load-one, {load}, start: {one.start}}}")
        rows.append(f"- {{namespace: {NAMESPACE}, pod: load-two, {load}, start: {two.start}}}")
    holders = 4 - sum(1 for r in rows if "pod: load-" in r)
    rows += [
        f"- {{namespace: {NAMESPACE}, pod: holder-{i}, shape: dataloading, shared: true}}"
        for i in range(holders)
    ]
    rows.append(f"- {{namespace: {NAMESPACE}, pod: notebook-0, shape: notebook, shared: true}}")
    rows.append(f"- {{namespace: {NAMESPACE}, pod: eval-0, shape: evaluation, shared: true}}")
    path.write_text("\n".join(rows) + "\n")
    return mig + 3
