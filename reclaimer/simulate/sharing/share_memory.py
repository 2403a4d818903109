"""What an openb GPU-sharing pod's request says about its GPU memory, and the cap it gives.

An openb pod with `gpu_milli` < 1000 asked for that share of one GPU. The share is one of GPU
memory as well as of time:
- the trace's first author, answering what "0.6 GPU" means in the trace (alibaba/clusterdata
  issue #193, 2023-08-22): "0.6 GPU refers to 60% of the GPU's memory capacity and at least 60%
  of its computation time";
- the trace's own simulator reads it so: hkust-adsl/kubernetes-scheduler-simulator,
  `pkg/simulator/export.go` (`ExportPodSnapshotInCSV`), writes a pod's `gpu_mem_ratio` as
  `gpu_milli / 10` percent and its `gpu_mem_mib` as `gpu_milli` x the MiB of the device it was
  placed on / 1000 (`MapGpuTypeMemoryMiB`, `pkg/type/open-gpu-share/utils/const.go`);
- Alibaba's open GPU sharing (AliyunContainerService/gpushare-scheduler-extender,
  `docs/designs/designs.md`) asks for a share in GPU memory (`aliyun.com/gpu-mem`) and assumes
  compute in proportion; its device plugin hands the container its share
  (`ALIYUN_COM_GPU_MEM_CONTAINER`, `docs/userguide.md`) for the application to keep to. It
  isolates nothing at run time ("Non Goals: Isolation"), while Alibaba Cloud's cGPU isolates a
  container's GPU memory in its kernel driver (Alibaba Cloud docs, "What is cGPU?"). Which of
  the two ran the trace's cluster is not said in what we read; either way a pod was sized for,
  and scheduled by, its share.

So a sharing pod's memory peak is taken to be at most `gpu_milli / 1000` of the memory of the GPU
it runs on in the replay (FGD's reading: the share of whatever device holds it;
`Usage.memory_bound`, applied wherever the replay reads a job's memory). Its replayed
memory (a GenTD26 series, scaled by `--memory-peak-gib`, `sim_sharing.memory`) is *capped* there,
sample by sample, not rescaled: samples within the bound are the data, and only what the bound rules
out is removed, which keeps the most memory the bound allows (the side against sharing). A job
that replays its own measured series (an `export-history` trace, whose `gpu_milli` is a
time-slicing replica's share, which bounds no memory) and a whole-GPU pod are never capped, and
nothing is on a node list that gives device memory (an export's: its `gpu_milli` are replica
shares too, and its bytes are replayed as measured, `sim_sharing.memory`).
`SimSettings.share_memory_cap` (`simulate --no-share-memory-cap`) turns the cap off to measure
what it changes. Pure.
"""

from __future__ import annotations

import numpy as np

from reclaimer.simulate.trace import MILLI, FloatArray, Jobs, Profiles


def memory_shares(jobs: Jobs, profiles: Profiles) -> FloatArray:
    """Per job, the share of its GPU's memory it may hold: `gpu_milli / 1000` for a sharing pod
    that replays a drawn series, infinite (no cap) for the rest."""
    own = set(profiles.names)
    drawn = np.array([name not in own for name in jobs.names], dtype=bool)
    sharing = (jobs.milli < MILLI) & drawn
    result: FloatArray = np.where(sharing, jobs.milli / MILLI, np.inf)
    return result
