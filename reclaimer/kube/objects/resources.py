"""Names the reclaimer shares with Kubernetes: API coordinates, label and annotation keys.

Pure constants. Everything the reclaimer writes on objects lives under the `gpu-reclaim.io/`
prefix, so a restarted controller can tell what it did (and resume only what it suspended).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from reclaimer.devices import WHOLE_GPU

GPU_RESOURCE: Final = WHOLE_GPU

# Volcano / Kubernetes links between pods, podgroups, queues
GROUP_NAME_KEY: Final = "scheduling.k8s.io/group-name"
# Pod condition set when a pod is about to be deleted by a disruption (eviction, preemption)
DISRUPTION_TARGET: Final = "DisruptionTarget"
QUEUE_LABELS: Final = ("volcano.sh/queue-name", "scheduling.volcano.sh/queue-name")
DEFAULT_QUEUE: Final = "default"

# Kueue admits a job carrying this label (it suspends and unsuspends it itself); the
# training-operator reconciles a job only while runPolicy.managedBy is unset or its own name
KUEUE_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
TRAINING_OPERATOR: Final = "kubeflow.org/training-operator"

# NVIDIA device plugin / GPU feature discovery node labels
DEVICE_PLUGIN_CONFIG_LABEL: Final = "nvidia.com/device-plugin.config"
GPU_COUNT_LABEL: Final = "nvidia.com/gpu.count"
GPU_REPLICAS_LABEL: Final = "nvidia.com/gpu.replicas"
MIG_STRATEGY_LABEL: Final = "nvidia.com/mig.strategy"  # single: MIG instances are nvidia.com/gpu

# What the reclaimer records on the objects it acts on
PREFIX: Final = "gpu-reclaim.io/"
SUSPENDED_BY: Final = PREFIX + "suspended-by"
SUSPENDED_AT: Final = PREFIX + "suspended-at"
SUSPEND_REASON: Final = PREFIX + "suspend-reason"
RESUMED_AT: Final = PREFIX + "resumed-at"
EVICTED_AT: Final = PREFIX + "evicted-at"
ROOM_FOR: Final = PREFIX + "room-for"  # the pending job a stop made room for (room in flight)
LAST_RESHAPE: Final = PREFIX + "last-reshape"
RESHAPE_FROM: Final = PREFIX + "reshape-from"
RESHAPE_TO: Final = PREFIX + "reshape-to"
RESHAPE_KEY: Final = PREFIX + "reshape-key"  # stage 1 done: the new key, not yet the label
RESHAPE_KEY_AT: Final = PREFIX + "reshape-key-written-at"
RESHAPE_FROM_KEY: Final = PREFIX + "reshape-from-key"  # kept until GFD shows the new replicas
RESHAPE_REASON: Final = PREFIX + "reshape-reason"  # the plan's `Reason` for the last reshape
WORKLOAD_CLASS: Final = PREFIX + "workload-class"
# on a node, "true": the operator lets the reclaimer raise it from 1 replica (`plan.reshape`)
POOL_LABEL: Final = PREFIX + "time-slicing-pool"
# a scheduled stop (the warning before it), and the owner's answer to it
RECLAIM_AFTER: Final = PREFIX + "reclaim-after"  # RFC 3339: the stop, unless cancelled
WARNED_AT: Final = PREFIX + "warned-at"
WARNED_FOR: Final = PREFIX + "warned-for"  # the pending job whose demand chose it
WARN_REASON: Final = PREFIX + "warn-reason"
KEEP_UNTIL: Final = PREFIX + "keep-until"  # set by the owner: RFC 3339, capped by maxKeep
WARNING_RECORD: Final = (RECLAIM_AFTER, WARNED_AT, WARNED_FOR, WARN_REASON)
# annotations whose value is a time of a reclaimer action (cool-downs)
ACTION_TIME_KEYS: Final = (SUSPENDED_AT, RESUMED_AT, EVICTED_AT, LAST_RESHAPE)
CONTROLLER_NAME: Final = "gpu-reclaimer"


@dataclass(frozen=True)
class Resource:
    """One API resource: where it lives and whether it is namespaced."""

    group: str  # "" = core
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


QUEUES: Final = Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", namespaced=False)
PODGROUPS: Final = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
VOLCANO_JOBS: Final = Resource("batch.volcano.sh", "v1alpha1", "jobs", "Job")
VOLCANO_COMMANDS: Final = Resource("bus.volcano.sh", "v1alpha1", "commands", "Command")
PYTORCH_JOBS: Final = Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob")
PODS: Final = Resource("", "v1", "pods", "Pod")
NODES: Final = Resource("", "v1", "nodes", "Node", namespaced=False)
CONFIGMAPS: Final = Resource("", "v1", "configmaps", "ConfigMap")
EVENTS: Final = Resource("", "v1", "events", "Event")
PDBS: Final = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
PRIORITY_CLASSES: Final = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
LEASES: Final = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CLUSTER_POLICIES: Final = Resource(
    "nvidia.com", "v1", "clusterpolicies", "ClusterPolicy", namespaced=False
)

# Dynamic Resource Allocation: GA as resource.k8s.io/v1 in 1.34; 1.32-1.33 serve v1beta1 (and
# v1beta2 from 1.33). Each kind is read at the first version the server has (`DRA_VERSIONS`).
DRA_GROUP: Final = "resource.k8s.io"
DRA_VERSIONS: Final = ("v1", "v1beta2", "v1beta1")
RESOURCE_CLAIMS: Final = Resource(DRA_GROUP, "v1", "resourceclaims", "ResourceClaim")
RESOURCE_CLAIM_TEMPLATES: Final = Resource(
    DRA_GROUP, "v1", "resourceclaimtemplates", "ResourceClaimTemplate"
)
RESOURCE_SLICES: Final = Resource(
    DRA_GROUP, "v1", "resourceslices", "ResourceSlice", namespaced=False
)
DEVICE_CLASSES: Final = Resource(DRA_GROUP, "v1", "deviceclasses", "DeviceClass", namespaced=False)
DRA_RESOURCES: Final = (RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES, RESOURCE_SLICES, DEVICE_CLASSES)


@dataclass(frozen=True)
class ConfigMapRef:
    """Where the NVIDIA device plugin's per-node configs live (one key per config)."""

    namespace: str = "gpu-operator"
    name: str = "time-slicing-config"
