"""The attribution fixtures a simulated node writes: every PID's cgroup names its pod, in every
layout the field uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exporter_fakes import sim_node

from exporter.node.cgroup import parse_cgroup
from exporter.sim.fixtures import CGROUP_STYLES, cgroup_text


def test_fixtures_attribute_every_pid_to_its_pod(tmp_path: Path) -> None:
    parts, node, _ = sim_node(tmp_path, pods=16)
    assert parts.pods_file is not None
    uid_to_pod = {
        r["uid"]: (r["namespace"], r["name"]) for r in json.loads(parts.pods_file.read_text())
    }
    for p in node.placed:
        ref = parse_cgroup((parts.proc_root / str(p.pid) / "cgroup").read_text())
        pod = node.pods[p.pod]
        assert ref is not None and ref.pod_uid == pod.uid and ref.container_id == pod.container_id
        assert uid_to_pod[ref.pod_uid] == (pod.spec.namespace, pod.spec.pod)


@pytest.mark.parametrize("style", range(CGROUP_STYLES))
def test_every_cgroup_style_parses(style: int) -> None:
    uid, cid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "ab" * 32
    ref = parse_cgroup(cgroup_text(uid, cid, style))
    assert ref is not None and (ref.pod_uid, ref.container_id) == (uid, cid)
