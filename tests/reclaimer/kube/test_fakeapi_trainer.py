"""The fake API server's TrainJob behaves as Kubeflow Trainer's controller makes it behave
(`fakeapi.trainer`), through the real client: `suspend` flows from a TrainJob to its JobSet, a
JobSet suspended or resumed behind its TrainJob's back is set back (unless the TrainJob leaves
`suspend` unset), and a TrainJob managed elsewhere, or a field its release's CRD lacks, is
treated as the release's controller and CRD treat it."""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import FakeCluster

from kube.workload_objects import NS, world
from reclaimer.kube.client import KubeApi, KubeError, call
from reclaimer.kube.objects import kinds

TJ, JS = kinds.TRAIN_JOB.resource, kinds.JOBSET.resource


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.add(*world("TrainJob"))
    return c


def _patch(api: KubeApi, res: Any, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
    c = api.custom
    return call(
        api,
        c.patch_namespaced_custom_object,
        res.group,
        res.version,
        NS,
        res.plural,
        "finetune",
        body,
        **kw,
    )


def _suspended(cluster: FakeCluster, res: Any) -> bool:
    obj = cluster.get(res.group, res.version, res.plural, "finetune", NS)
    assert obj is not None
    return bool(obj["spec"].get("suspend"))


def test_suspend_flows_from_the_trainjob_to_its_jobset_and_back(
    api: KubeApi, cluster: FakeCluster
) -> None:
    _patch(api, TJ, {"spec": {"suspend": True}})
    assert _suspended(cluster, TJ) and _suspended(cluster, JS)
    _patch(api, TJ, {"spec": {"suspend": False}})
    assert not _suspended(cluster, TJ) and not _suspended(cluster, JS)


@pytest.mark.parametrize("trainjob_suspended", [False, True], ids=["running", "suspended"])
def test_a_jobset_patched_behind_its_trainjobs_back_is_set_back(
    api: KubeApi, cluster: FakeCluster, trainjob_suspended: bool
) -> None:
    _patch(api, TJ, {"spec": {"suspend": trainjob_suspended}})
    answer = _patch(api, JS, {"spec": {"suspend": not trainjob_suspended}})
    assert answer["spec"]["suspend"] is (not trainjob_suspended)  # the write was accepted...
    assert _suspended(cluster, JS) is trainjob_suspended  # ...and undone by the controller


def test_a_dry_run_on_a_trainjob_reaches_no_controller(api: KubeApi, cluster: FakeCluster) -> None:
    _patch(api, TJ, {"spec": {"suspend": True}}, dry_run="All")
    assert not _suspended(cluster, TJ) and not _suspended(cluster, JS)


@pytest.mark.parametrize(
    ("release", "reconciled"),
    [("v2.0", True), ("v2.2", True), ("v2.3", False)],
    ids=["v2.0-has-no-managedBy-check", "v2.2-has-no-managedBy-check", "v2.3-honours-it"],
)
def test_a_trainjob_managed_by_multikueue_is_reconciled_before_v2_3(
    api: KubeApi, cluster: FakeCluster, release: str, reconciled: bool
) -> None:
    """`IsManagedByExternalController` arrived in v2.3.0: before it the trainer's controller
    reconciles a TrainJob whatever its `managedBy`, and carries its suspend to the JobSet."""
    cluster.trainer_release = release
    cluster.get(TJ.group, TJ.version, TJ.plural, "finetune", NS)["spec"]["managedBy"] = (
        "kueue.x-k8s.io/multikueue"
    )
    _patch(api, TJ, {"spec": {"suspend": True}})
    assert _suspended(cluster, TJ) and _suspended(cluster, JS) is reconciled


def test_a_trainjob_without_suspend_leaves_its_jobsets_suspend_alone(
    api: KubeApi, cluster: FakeCluster
) -> None:
    """A TrainJob that leaves `suspend` unset applies its JobSet without one, so a suspend
    written to the JobSet stays; once the TrainJob sets it, the JobSet follows."""
    assert "suspend" not in cluster.get(TJ.group, TJ.version, TJ.plural, "finetune", NS)["spec"]
    _patch(api, JS, {"spec": {"suspend": True}})
    assert _suspended(cluster, JS)
    _patch(api, TJ, {"spec": {"suspend": False}})
    assert not _suspended(cluster, JS)


def test_a_field_the_releases_crd_lacks_answers_400_under_strict(
    api: KubeApi, cluster: FakeCluster
) -> None:
    cluster.trainer_release = "v2.0"
    with pytest.raises(KubeError) as err:
        _patch(
            api,
            TJ,
            {"spec": {"suspend": True, "runtimePatches": []}},
            field_validation="Strict",
        )
    assert err.value.status == 400 and 'unknown field "spec.runtimePatches"' in err.value.message
    assert not _suspended(cluster, TJ)
