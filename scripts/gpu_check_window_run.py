"""Run gpu_check's lastSeenTimeStamp experiment (`gpu_check_window`) and make its check.

On a GPU box a torch child keeps CUDA device 0 (PCI bus order) busy in the pattern, and the real
`pynvml` is asked about it; on the emulator (`--lib sim`) an emulated H100 runs a process with the
same pattern on a clock that moves only when the experiment waits, so it takes no time. The check
passes when the answer is a reading the exporter takes (WINDOW or PER_PERIOD), fails when it is
LAST_PERIOD (the exporter's per-pod utilization would then need another reading), and is skipped
when it cannot be settled here (no load, a load not busy enough).
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
from contextlib import ExitStack
from typing import Any

from gpu_check_env import Check
from gpu_check_served import stop_process
from gpu_check_window import (
    BUSY_S,
    EXPORTER_READS,
    IDLE_S,
    LAST_PERIOD,
    Answer,
    busy_at,
    pattern_seconds,
    record,
    run_pattern,
)

SIM_PID = 4242
READY_TIMEOUT_S = 60.0
LEAD_S = 3.0  # the pattern starts this long after the load is ready (a warm-up query first)

PATTERN_LOAD = """
import sys, time, torch
busy, idle, lead = (float(x) for x in sys.argv[1:4])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
(a @ a).sum().item()
start = time.time() + lead
print("ready", start, flush=True)
spans = [(start, start + busy), (start + busy + idle, start + 2 * busy + idle)]
while time.time() < spans[-1][1]:
    if any(s <= time.time() < e for s, e in spans):
        for _ in range(20):
            b = a @ a
        torch.cuda.synchronize()
    else:
        time.sleep(0.01)
"""


def sim_answers(process_rows: str = "averaged") -> list[Answer]:
    """The experiment on the NVML emulator, on a clock of its own, its driver answering with
    `process_rows` (`exporter.sim.nvml.sampling.ProcessRows`)."""
    from exporter.sim.nvml.device import SimProcess, h100  # noqa: PLC0415 (sim only)
    from exporter.sim.nvml.library import SimNvml  # noqa: PLC0415
    from exporter.sim.nvml.sampling import ProcessRows  # noqa: PLC0415

    clock = [1_700_000_000.0]
    start = clock[0] + LEAD_S
    gpu = h100(0)
    gpu.process_rows = ProcessRows(process_rows)
    gpu.processes.append(
        SimProcess(SIM_PID, sm=lambda t: 0.9 if busy_at(t - start) else 0.0, memory_bytes=_gib)
    )
    lib = SimNvml([gpu], clock=lambda: clock[0])
    lib.nvmlInit()

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    handle = lib.nvmlDeviceGetHandleByIndex(0)
    return run_pattern(lib, handle, SIM_PID, start, now=lambda: clock[0], sleep=sleep)


def _gib(_t: float) -> int:
    return 1 << 30


def torch_answers(stack: ExitStack) -> tuple[list[Answer], str]:
    """The experiment on CUDA device 0 with the real pynvml; ([], why) when the load fails."""
    from exporter.nvml.library import load_pynvml  # noqa: PLC0415 (the exporter's only door)

    env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    cmd = [sys.executable, "-c", PATTERN_LOAD, str(BUSY_S), str(IDLE_S), str(LEAD_S)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    stack.callback(stop_process, proc)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
    words = proc.stdout.readline().split() if ready else []
    if len(words) != 2 or words[0] != "ready":
        return [], "the pattern load did not start (torch on CUDA device 0)"
    lib = load_pynvml()
    lib.nvmlInit()
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    return run_pattern(lib, handle, proc.pid, float(words[1])), ""


def window_check(args: argparse.Namespace, report: dict[str, Any], loaded: bool) -> Check:
    """Run the experiment where it can run, record it under `process_utilization_window`."""
    name = "process_utilization_window"
    if args.lib == "sim":
        answers, where = sim_answers(), "NVML emulator"
    elif not loaded:
        return Check(name, None, "no load (torch) to run the lastSeenTimeStamp experiment with")
    else:
        with ExitStack() as stack:
            answers, failed = torch_answers(stack)
        if not answers:
            return Check(name, False, failed)
        where = "CUDA device 0 (real NVML)"
    report[name] = entry = record(answers, where)
    report[name]["took_s"] = pattern_seconds()
    settled = entry["verdict"] in (*EXPORTER_READS, LAST_PERIOD)
    ok = entry["verdict"] in EXPORTER_READS if settled else None
    return Check(name, ok, f"{entry['verdict']} on {where}: {entry['why']}")
