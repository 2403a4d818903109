"""PID -> pod parsing on literal `/proc/<pid>/cgroup` texts: v1/v2, systemd/cgroupfs, runtimes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.node.cgroup import parse_cgroup, read_cgroup
from exporter.sources import CgroupRef

UID = "2f1b7c2e-5d4a-4b8e-9c3f-0a1b2c3d4e5f"
UID_ = UID.replace("-", "_")
CID = "8d3e5a1f0b2c4d6e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e"

CASES = [
    pytest.param(
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice/"
        f"cri-containerd-{CID}.scope\n",
        CgroupRef(UID, CID),
        id="v2-systemd-containerd-burstable",
    ),
    pytest.param(
        f"0::/kubepods.slice/kubepods-pod{UID_}.slice/cri-containerd-{CID}.scope\n",
        CgroupRef(UID, CID),
        id="v2-systemd-containerd-guaranteed",
    ),
    pytest.param(
        f"0::/kubepods/besteffort/pod{UID}/{CID}\n",
        CgroupRef(UID, CID),
        id="v2-cgroupfs-containerd",
    ),
    pytest.param(
        f"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_}.slice/"
        f"crio-{CID}.scope\n",
        CgroupRef(UID, CID),
        id="v2-systemd-crio",
    ),
    pytest.param(
        f"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_}.slice/"
        f"crio-conmon-{CID}.scope\n",
        CgroupRef(UID, None),
        id="v2-systemd-crio-conmon-has-no-container",
    ),
    pytest.param(
        f"0::/kubepods/pod{UID}/crio-{CID}\n",
        CgroupRef(UID, CID),
        id="v2-cgroupfs-crio",
    ),
    pytest.param(
        "12:pids:/user.slice\n"
        f"11:memory:/kubepods/burstable/pod{UID}/{CID}\n"
        f"1:name=systemd:/kubepods/burstable/pod{UID}/{CID}\n",
        CgroupRef(UID, CID),
        id="v1-cgroupfs-docker",
    ),
    pytest.param(
        f"11:cpu,cpuacct:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}"
        f".slice/docker-{CID}.scope\n"
        f"4:devices:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice\n",
        CgroupRef(UID, CID),
        id="v1-systemd-docker",
    ),
    pytest.param(
        f"5:devices:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice\n"
        f"3:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice/"
        f"cri-containerd-{CID}.scope\n",
        CgroupRef(UID, CID),
        id="v1-prefers-a-line-naming-the-container",
    ),
    pytest.param(
        f"12:memory:/kubepods/burstable/pod{UID}/{CID}\n0::/kubepods/burstable/pod{UID}/{CID}\n",
        CgroupRef(UID, CID),
        id="hybrid-v1-v2",
    ),
    pytest.param(
        "0::/docker/0123456789ab/kubelet.slice/kubelet-kubepods.slice/"
        f"kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod{UID_}.slice/"
        f"cri-containerd-{CID}.scope\n",
        CgroupRef(UID, CID),
        id="kind-nested",
    ),
    pytest.param(
        "0::/kubepods/burstable/pod0123456789abcdef0123456789abcdef/" + CID + "\n",
        CgroupRef("0123456789abcdef0123456789abcdef", CID),
        id="static-pod-hash-uid",
    ),
    pytest.param(
        f"11:memory:/kubepods/burstable/pod{UID}/{'0' * 64}\n"
        f"0::/kubepods/burstable/pod{UID}/{CID}\n",
        CgroupRef(UID, CID),
        id="hybrid-the-v2-line-wins-over-v1",
    ),
    pytest.param("0::/user.slice/user-1000.slice/session-3.scope\n", None, id="host-process"),
    pytest.param("0::/system.slice/podman.service\n", None, id="pod-word-not-a-uid"),
    pytest.param("", None, id="empty"),
    pytest.param("garbage without colons\n", None, id="garbage"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parse_cgroup(text: str, expected: CgroupRef | None) -> None:
    assert parse_cgroup(text) == expected


def test_read_cgroup_reads_and_tolerates_a_vanished_process(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "cgroup").write_text(f"0::/kubepods/pod{UID}/{CID}\n")
    assert read_cgroup(tmp_path, 42) == f"0::/kubepods/pod{UID}/{CID}\n"
    assert read_cgroup(tmp_path, 43) is None


@given(
    pod_uid=st.uuids().map(str),
    container=st.text("0123456789abcdef", min_size=64, max_size=64),
    qos=st.sampled_from(["", "burstable", "besteffort"]),
    runtime=st.sampled_from(["cri-containerd-", "docker-", "crio-"]),
    systemd=st.booleans(),
)
def test_any_kubelet_cgroup_path_gives_back_its_pod_and_container(
    pod_uid: str, container: str, qos: str, runtime: str, systemd: bool
) -> None:
    if systemd:
        under = pod_uid.replace("-", "_")
        pod_slice = f"kubepods-{qos}-pod{under}.slice" if qos else f"kubepods-pod{under}.slice"
        qos_slice = f"kubepods-{qos}.slice/" if qos else ""
        path = f"/kubepods.slice/{qos_slice}{pod_slice}/{runtime}{container}.scope"
    else:
        path = f"/kubepods/{qos + '/' if qos else ''}pod{pod_uid}/{container}"
    assert parse_cgroup(f"0::{path}\n") == CgroupRef(pod_uid, container)
