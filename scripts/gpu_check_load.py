"""gpu_check's GPU load: a torch matmul loop, so that the process readings have a process.

On a device machine the GPU is otherwise idle: NVML lists no process, process utilization
samples are NotFound and GPU_UTIL stays 0, so those paths would be checked only for not failing.
`start_load` runs bf16 8192x8192 matmuls on GPU 0 in a child process (stopped by the caller's
ExitStack) and returns its PID once it has computed; `load_problems` then requires utilization
on some GPU and a busy process holding memory in the exporter's readings. The PID is reported,
not required: in a container NVML may list host PIDs.
"""

from __future__ import annotations

import importlib.util
import select
import subprocess
import sys
from contextlib import ExitStack

from gpu_check_served import Check, stop_process

from exporter.model import NodeSnapshot
from exporter.nvml_readings import GPU_UTIL

READY_TIMEOUT_S = 60.0  # torch import and CUDA init

LOAD = """
import sys, time, torch
end = time.time() + float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
(a @ a).sum().item()
print("ready", flush=True)
while time.time() < end:
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
"""


def start_load(load: str, lib: str, seconds: float, stack: ExitStack) -> int | None:
    """A torch matmul loop on GPU 0 for the whole check, so the process readings have a
    process; returns its PID once it computes, None when there is no load."""
    auto = lib == "pynvml" and importlib.util.find_spec("torch") is not None
    if load == "none" or (load == "auto" and not auto):
        return None
    cmd = [sys.executable, "-c", LOAD, str(seconds)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    stack.callback(stop_process, proc)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
    return proc.pid if ready and proc.stdout.readline().strip() == "ready" else None


def load_problems(snaps: list[NodeSnapshot]) -> list[str]:
    """Under load, after the first cycle, some GPU must report utilization and some process
    memory and SM activity."""
    gpus = [d for s in snaps[1:] for d in s.devices if d.mig is None]
    procs = [p for d in gpus for p in d.processes]
    problems = [] if any(d.values.get(GPU_UTIL, 0) > 0 for d in gpus) else ["GPU_UTIL stayed 0"]
    if not any((p.memory_bytes or 0) > 0 and p.sm_util > 0 for p in procs):
        problems.append(f"no busy process with memory among {sorted({p.pid for p in procs})}")
    return problems


def check_load(pid: int | None, snaps: list[NodeSnapshot]) -> Check:
    problems = ["the load did not start"] if pid is None else load_problems(snaps)
    seen = sorted({p.pid for s in snaps for d in s.devices for p in d.processes})
    return Check("gpu_load", not problems, f"load pid {pid}, NVML pids {seen}; {problems}")
