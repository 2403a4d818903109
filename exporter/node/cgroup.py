"""Which pod (and container) a host PID belongs to, from `/proc/<pid>/cgroup`.

NVML reports host PIDs. The kubelet puts every container in a cgroup whose path names the pod's
UID and the container's runtime id, with a spelling that depends on the cgroup version (v1 lists
one line per hierarchy, v2 a single `0::` line), the cgroup driver (cgroupfs: `/kubepods/burstable/
pod<uid>/<id>`; systemd: `kubepods-burstable-pod<uid_with_underscores>.slice/cri-containerd-<id>
.scope`) and the runtime (containerd `cri-containerd-`, Docker `docker-`, CRI-O `crio-`). Parsing
(`parse_cgroup`, pure, table-tested on literal file contents) is separate from reading
(`read_cgroup`, the only I/O here).
"""

from __future__ import annotations

import re
from pathlib import Path

from exporter.sources import CgroupRef

# A pod segment: "pod" + a UID spelled with "-" (cgroupfs) or "_" (systemd), or the 32 hex digits
# of a static pod's hash UID. It must start a path segment or follow "-" (systemd slice names).
_POD_RE = re.compile(
    r"(?:^|[/-])pod("
    r"[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}"
    r"|[0-9a-f]{32}"
    r")(?:\.slice)?(?=/|$)"
)
_CONTAINER_PREFIXES = ("cri-containerd-", "docker-", "crio-", "containerd-")
_CONTAINER_ID_RE = re.compile(r"^[0-9a-f]{12,64}$")


def _container_id(segment: str) -> str | None:
    name = segment.removesuffix(".scope")
    if name.startswith("crio-conmon-"):
        return None  # CRI-O's monitor process, not the container itself
    for prefix in _CONTAINER_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name if _CONTAINER_ID_RE.match(name) else None


def parse_cgroup_path(path: str) -> CgroupRef | None:
    """Pure: the pod and container named by one cgroup path, or None outside Kubernetes."""
    matches = list(_POD_RE.finditer(path))
    if not matches:
        return None
    last = matches[-1]  # nested setups (kind, docker-in-docker) put the kubelet's path last
    rest = path[last.end() :].strip("/")
    container = _container_id(rest.split("/")[0]) if rest else None
    return CgroupRef(pod_uid=last.group(1).replace("_", "-"), container_id=container)


def parse_cgroup(text: str) -> CgroupRef | None:
    """Pure: the pod of a process from the contents of its `/proc/<pid>/cgroup`.

    Lines are `hierarchy-id:controllers:path`. The v2 line (`0::`) is preferred; otherwise the
    first v1 hierarchy that names a pod, preferring one that also names the container.
    """
    best: CgroupRef | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        ref = parse_cgroup_path(parts[2])
        if ref is None:
            continue
        if parts[0] == "0" and parts[1] == "":
            return ref
        if best is None or (best.container_id is None and ref.container_id is not None):
            best = ref
    return best


def read_cgroup(proc_root: Path, pid: int) -> str | None:
    """The raw `<proc_root>/<pid>/cgroup` text, or None when the process is gone or hidden."""
    try:
        return (proc_root / str(pid) / "cgroup").read_text(errors="replace")
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None
