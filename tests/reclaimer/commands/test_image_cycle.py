"""The image's `gpu-reclaimer run --once` plans a real cycle: a real Prometheus holding 24 h of
history, the fake API server, and the command from the wheel the Dockerfile builds (the `image`
fixture), run from a folder outside the checkout. It must name the idle job, as the checkout's
code does in test_run_e2e, so the image holds everything a cycle needs.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_world import IDLE_JOB, PENDING_JOB, cluster_objects, history, wall_now
from fakeapi import FakeCluster, served_kubeconfig
from imagebuild import clean_env
from promserver import PromServer, start_prometheus

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[PromServer, Path]]:
    now = wall_now()
    cluster = FakeCluster()
    cluster.add(*cluster_objects(now))
    (tmp_path / "prom").mkdir()
    with (
        start_prometheus(tmp_path / "prom", history=history(now)) as prom,
        served_kubeconfig(cluster, tmp_path / "kubeconfig") as kubeconfig,
    ):
        yield prom, kubeconfig


def test_the_image_plans_the_idle_job(
    image: Path, world: tuple[PromServer, Path], tmp_path: Path
) -> None:
    prom, kubeconfig = world
    argv = [str(image / "gpu-reclaimer"), "run", "--once", "--json",
            "--prometheus-url", prom.url, "--kubeconfig", str(kubeconfig)]  # fmt: skip
    done = subprocess.run(
        argv, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=180,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (action,) = report["plan"]["actions"]
    assert (action["kind"], action["target"]) == ("preempt", IDLE_JOB)
    assert action["evidence"]["for_pending"] == PENDING_JOB
