"""Which kinds the fake API server serves, at which versions, and when it answers 404 instead.

`KNOWN` maps each (group, version, plural) the store can hold to its kind and whether it is
namespaced; `resource.k8s.io` and Kueue's group are listed at every version a server may serve.
`kind_served` gates a request on what this server was set up to serve, as a real one answers
404 for a resource it does not serve: a custom resource group whose CRDs are not installed (one
of `CRD_GROUPS` missing from the server's `crd_groups`), a `resource.k8s.io` version other than
those its Kubernetes release serves (`dra_versions`), or a Kueue API version not served
(`kueue_versions`).
"""

from __future__ import annotations

from collections.abc import Collection

from fakeapi import kueue
from fakeapi.errors import ApiError

# (group, version, plural) -> (kind, namespaced)
KNOWN: dict[tuple[str, str, str], tuple[str, bool]] = {
    ("", "v1", "pods"): ("Pod", True),
    ("", "v1", "nodes"): ("Node", False),
    ("", "v1", "configmaps"): ("ConfigMap", True),
    ("", "v1", "events"): ("Event", True),
    ("", "v1", "namespaces"): ("Namespace", False),
    ("events.k8s.io", "v1", "events"): ("Event", True),
    ("policy", "v1", "poddisruptionbudgets"): ("PodDisruptionBudget", True),
    ("coordination.k8s.io", "v1", "leases"): ("Lease", True),
    ("scheduling.k8s.io", "v1", "priorityclasses"): ("PriorityClass", False),
    ("scheduling.volcano.sh", "v1beta1", "queues"): ("Queue", False),
    ("scheduling.volcano.sh", "v1beta1", "podgroups"): ("PodGroup", True),
    ("batch.volcano.sh", "v1alpha1", "jobs"): ("Job", True),
    ("bus.volcano.sh", "v1alpha1", "commands"): ("Command", True),
    ("kubeflow.org", "v1", "pytorchjobs"): ("PyTorchJob", True),
    ("kubeflow.org", "v1", "tfjobs"): ("TFJob", True),
    ("kubeflow.org", "v1", "xgboostjobs"): ("XGBoostJob", True),
    ("kubeflow.org", "v1", "paddlejobs"): ("PaddleJob", True),
    ("kubeflow.org", "v1", "jaxjobs"): ("JAXJob", True),
    ("kubeflow.org", "v2beta1", "mpijobs"): ("MPIJob", True),
    ("kubeflow.org", "v1", "notebooks"): ("Notebook", True),
    ("batch", "v1", "jobs"): ("Job", True),
    ("apps", "v1", "statefulsets"): ("StatefulSet", True),
    ("apps", "v1", "replicasets"): ("ReplicaSet", True),
    ("apps", "v1", "deployments"): ("Deployment", True),
    ("", "v1", "replicationcontrollers"): ("ReplicationController", True),
    ("jobset.x-k8s.io", "v1alpha2", "jobsets"): ("JobSet", True),
    ("ray.io", "v1", "rayjobs"): ("RayJob", True),
    ("ray.io", "v1", "rayclusters"): ("RayCluster", True),
    ("trainer.kubeflow.org", "v1alpha1", "trainjobs"): ("TrainJob", True),
    ("nvidia.com", "v1", "clusterpolicies"): ("ClusterPolicy", False),
    # Dynamic Resource Allocation, at each version a server may serve (`FakeCluster.dra_versions`)
    **{
        ("resource.k8s.io", version, plural): kind
        for version in ("v1", "v1beta2", "v1beta1")
        for plural, kind in (
            ("resourceclaims", ("ResourceClaim", True)),
            ("resourceclaimtemplates", ("ResourceClaimTemplate", True)),
            ("resourceslices", ("ResourceSlice", False)),
            ("deviceclasses", ("DeviceClass", False)),
        )
    },
    **{
        (kueue.GROUP, version, plural): (kind, namespaced)
        for version in ("v1beta2", "v1beta1")
        for plural, kind, namespaced in (
            ("workloads", "Workload", True),
            ("localqueues", "LocalQueue", True),
            ("clusterqueues", "ClusterQueue", False),
        )
    },
}
PDBS = ("policy", "v1", "poddisruptionbudgets")
CRD_GROUPS = frozenset(
    {
        "scheduling.volcano.sh",
        "batch.volcano.sh",
        "bus.volcano.sh",
        "kubeflow.org",
        "nvidia.com",
        "jobset.x-k8s.io",
        "ray.io",
        "trainer.kubeflow.org",
        kueue.GROUP,
    }
)


def kind_served(
    res: tuple[str, str, str],
    *,
    crd_groups: Collection[str],
    dra_versions: Collection[str],
    kueue_versions: Collection[str],
) -> tuple[str, bool]:
    """The (kind, namespaced) of a resource this server serves; else the real server's 404."""
    group, version, _ = res
    known = KNOWN.get(res)
    unserved = (group == "resource.k8s.io" and version not in dra_versions) or (
        group == kueue.GROUP and version not in kueue_versions
    )
    if known is None or unserved or (group in CRD_GROUPS and group not in crd_groups):
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return known
