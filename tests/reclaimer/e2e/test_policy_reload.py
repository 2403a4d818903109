"""A running controller follows its policy ConfigMap: valid edits take effect, invalid ones are
refused loudly and never stop it.

The policy lives in a directory laid out as the kubelet lays out a ConfigMap volume, and each
update is made as its AtomicWriter makes it (kubernetes/kubernetes,
pkg/volume/util/atomic_writer.go): the files go to a new timestamped directory, a `..data_tmp`
symlink to it is renamed over `..data`, the old directory is removed; `policy.yaml` is a symlink
through `..data`. The controller is a `gpu-reclaimer run` process against a real Prometheus
holding the history and the fake API server, in dry-run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from controller_process import Controller, controller
from e2e_world import IDLE_JOB, cluster_objects, history, wall_now
from fakeapi import FakeCluster
from promserver import PromServer

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
# the world the conftest's fixtures build (prom: history(now); cluster: cluster_objects(now))
world_history = history
world_objects = cluster_objects

REJECTED = "gpu_reclaimer_policy_rejected"
POD = {"POD_NAME": "gpu-reclaimer-7d9f-abcde", "POD_NAMESPACE": "gpu-reclaim", "POD_UID": "u-1"}


class ConfigMapVolume:
    """A directory updated the way the kubelet updates a ConfigMap volume (see the docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        self._versions = 0

    def write(self, files: dict[str, str]) -> None:
        self._versions += 1
        version = self.root / f"..2026_12_01_15_00_00.{self._versions:09d}"
        version.mkdir()
        for key, text in files.items():
            (version / key).write_text(text)
        data = self.root / "..data"
        old = os.readlink(data) if data.is_symlink() else None
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(version.name)
        os.replace(tmp, data)  # rename(2): the swap is atomic
        for key in files:
            visible = self.root / key
            if not visible.is_symlink():
                visible.symlink_to(f"..data/{key}")
        if old is not None:
            shutil.rmtree(self.root / old)

    @property
    def policy(self) -> Path:
        return self.root / "policy.yaml"


@pytest.fixture(scope="module")
def now() -> float:
    return wall_now()


def preempts(c: Controller) -> list[str] | None:
    """The last cycle's planned preemptions; None before a cycle planned."""
    status, body = c.get("/plan")
    plan = json.loads(body).get("plan") if status == 200 else None
    if plan is None:
        return None
    return [a["target"] for a in plan["actions"] if a["kind"] == "preempt"]


def cycles(c: Controller) -> float:
    return sum(
        c.metric(f'gpu_reclaimer_cycles_total{{result="{r}"}}') or 0.0
        for r in ("success", "skipped", "error")
    )


def rejections(cluster: FakeCluster) -> list[dict]:
    with cluster.lock:  # the controller writes through the server meanwhile
        events = cluster.all("", "v1", "events")
    return [e for e in events if e["reason"] == "GpuReclaimPolicyRejected"]


def test_policy_edits_take_effect_and_invalid_ones_keep_the_last_good_policy(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    volume = ConfigMapVolume(tmp_path / "gpu-sharing-config")
    volume.write({"policy.yaml": "threshold: 0.05\n"})
    args = ["--prometheus-url", prom.url, "--kubeconfig", str(kubeconfig), "--interval", "1s"]
    args += ["--policy-file", str(volume.policy)]
    with controller(args, tmp_path / "controller.log", env=POD) as c:
        c.wait_for(lambda: preempts(c) == [IDLE_JOB], "a plan that stops the idle job")
        assert c.metric(REJECTED) == 0.0

        # an edit to invalid YAML: refused, said in the log, an Event and the metric
        volume.write({"policy.yaml": "threshold: [0.05\nhorizon: 15m\n"})
        c.wait_for(lambda: c.metric(REJECTED) == 1.0, "the invalid version to be refused")
        assert f"invalid policy {volume.policy}" in c.log()
        assert "keeping the policy in force until the file changes" in c.log()
        (event,) = rejections(cluster)
        assert event["type"] == "Warning"
        assert event["involvedObject"] == {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": POD["POD_NAME"],
            "namespace": POD["POD_NAMESPACE"],
            "uid": POD["POD_UID"],
        }
        assert f"invalid policy {volume.policy}" in event["message"]
        # the loop goes on planning with the last good policy, and says it once per version
        seen = cycles(c)
        c.wait_for(lambda: cycles(c) >= seen + 2, "two more cycles")
        assert preempts(c) == [IDLE_JOB]
        assert len(rejections(cluster)) == 1
        assert c.log().count(f"invalid policy {volume.policy}") == 1

        # a later valid edit takes effect
        volume.write({"policy.yaml": "actions:\n  preempt: false\n"})
        c.wait_for(lambda: c.metric(REJECTED) == 0.0, "the valid version to be taken")
        c.wait_for(lambda: preempts(c) == [], "a plan under the new policy")
        assert "policy reloaded; changed: actions" in c.log()
        assert c.proc.poll() is None
