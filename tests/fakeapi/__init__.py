"""A stateful fake Kubernetes API server for tests: the real `kubernetes` client talks HTTP to it.

`FakeCluster` holds the objects and answers requests the way the API server would for the kinds
the reclaimer uses (list/get/create/replace/patch/delete, resourceVersion conflicts, dry-run,
the pods/eviction subresource against PodDisruptionBudgets, the scale subresource of the
training-operator kinds whose CRDs declare one, Kubeflow Trainer's TrainJob carrying `suspend` to
its JobSet); `FakeApiServer` serves it over aiohttp on 127.0.0.1 from a thread with its own event
loop. `volcano.reconcile` plays Volcano's job controller taking up AbortJob Commands, when a test
says so; `resourceclaims.reconcile` kube-controller-manager's resourceclaim controller and
`resourceclaims.bind` the scheduler's DRA allocation. `resource.k8s.io` objects are kept at v1 and
served at the versions `FakeCluster.dra_versions` names (`draversions`).
"""

from fakeapi import volcano
from fakeapi.kubeconfig import served_kubeconfig, write_kubeconfig
from fakeapi.server import FakeApiServer
from fakeapi.store import KNOWN, NEVER_S, FakeCluster, Fault, Recorded

__all__ = [
    "KNOWN",
    "NEVER_S",
    "FakeApiServer",
    "FakeCluster",
    "Fault",
    "Recorded",
    "served_kubeconfig",
    "volcano",
    "write_kubeconfig",
]
