"""The attribution fixtures a simulated node writes: /proc/<pid>/cgroup, PodResources, pods.

Attribution then runs the same code on a simulated node as on a real one. The cgroup files mix
the layouts found in the field (cgroup v2 with the systemd driver under containerd and CRI-O,
cgroup v2 with the cgroupfs driver, cgroup v1 hierarchies with docker and containerd), chosen per
pod by `style`. The PodResources fixture lists `Allocation`s as the kubelet reports them:
whole GPUs as `GPU-<uuid>`, time-sliced replicas as `GPU-<uuid>::<n>`, MIG instances as
`MIG-<uuid>` under `nvidia.com/mig-<profile>`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from exporter.sources import Allocation, PodIdentity

CGROUP_STYLES = 5
_QOS = ("burstable", "besteffort", "", "besteffort", "burstable")  # "" = guaranteed


@dataclass(frozen=True)
class PodProcess:
    pid: int
    uid: str
    container_id: str
    style: int


def cgroup_text(uid: str, container_id: str, style: int) -> str:
    """The content of /proc/<pid>/cgroup for a container process, in layout `style`."""
    qos = _QOS[style % CGROUP_STYLES]
    under = uid.replace("-", "_")
    slice_ = f"kubepods-{qos}-pod{under}.slice" if qos else f"kubepods-pod{under}.slice"
    qos_slice = f"kubepods-{qos}.slice/" if qos else ""
    systemd = f"/kubepods.slice/{qos_slice}{slice_}"
    cgroupfs = f"/kubepods/{qos + '/' if qos else ''}pod{uid}/{container_id}"
    match style % CGROUP_STYLES:
        case 0:  # cgroup v2, systemd driver, containerd
            return f"0::{systemd}/cri-containerd-{container_id}.scope\n"
        case 1:  # cgroup v2, cgroupfs driver, containerd
            return f"0::{cgroupfs}\n"
        case 2:  # cgroup v1, systemd driver, docker (dockershim / cri-dockerd)
            path = f"{systemd}/docker-{container_id}.scope"
            v1 = ("pids", "memory", "devices", "cpu,cpuacct", "name=systemd")
            lines = [f"{12 - i}:{c}:{path}" for i, c in enumerate(v1)]
            return "\n".join([*lines, "0::/"]) + "\n"
        case 3:  # cgroup v2, systemd driver, CRI-O
            return f"0::{systemd}/crio-{container_id}.scope\n"
        case _:  # cgroup v1, cgroupfs driver, containerd
            hierarchies = ("memory", "devices", "cpu,cpuacct", "pids")
            return "".join(f"{11 - i}:{c}:{cgroupfs}\n" for i, c in enumerate(hierarchies))


def write_fixtures(
    root: Path,
    processes: Iterable[PodProcess],
    allocations: Iterable[Allocation],
    pods: Iterable[PodIdentity],
) -> tuple[Path, Path, Path]:
    """Write <root>/proc/<pid>/cgroup, podresources.json and pods.json; return their roots."""
    proc = root / "proc"
    for p in processes:
        (proc / str(p.pid)).mkdir(parents=True, exist_ok=True)
        (proc / str(p.pid) / "cgroup").write_text(cgroup_text(p.uid, p.container_id, p.style))
    proc.mkdir(parents=True, exist_ok=True)
    podresources = root / "podresources.json"
    rows = [{**asdict(a), "device_ids": list(a.device_ids)} for a in allocations]
    _write_atomic(podresources, json.dumps(rows, indent=1))
    pods_file = root / "pods.json"
    _write_atomic(pods_file, json.dumps([asdict(p) for p in pods], indent=1))
    return proc, podresources, pods_file


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
