"""Whole nodes of the managed pool: which nodes reshape looks at, and which whole ones it may
not raise. Pure.

A node the operator labels `gpu-reclaim.io/time-slicing-pool: "true"` (`Node.pool`) is managed at
1 replica too, so a pool installed whole is shared only once the raise gates say its pods fit
(`plan.reshape`). A node handed back whole for a waiting multi-GPU job (`plan.handback`) is not:
growing the pool again is left to the operator. Nor is a raise planned while a pod holds several
of the node's GPUs whole: the device plugin would advertise replicas of those GPUs too, and the
pods it put there would share GPUs with a pod that was given them whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from reclaimer.decisions import Reason, Skip
from reclaimer.devices import count
from reclaimer.model import Node, Pod


def managed(node: Node, time_sliced: int) -> bool:
    """Does reshape manage the node? Time-sliced nodes, and the pool's whole ones (module doc)."""
    if node.gpus <= 0:
        return False
    if node.replicas >= time_sliced:
        return True
    return node.pool and node.reshape_reason != Reason.WHOLE_GPUS_FOR_PENDING.value


def wide_pods(pods: Sequence[Pod]) -> dict[str, Pod]:
    """Per node, a running pod holding more than one of its GPUs whole."""
    out: dict[str, Pod] = {}
    for pod in pods:
        if pod.node is not None and pod.gpus - sum(pod.mig.values()) > 1:
            out.setdefault(pod.node, pod)
    return out


def wide_skip(node: Node, pod: Pod) -> Skip:
    why = (
        f"whole pool node: {pod.key} holds {count(pod.gpus, 'GPUs')} here, and replicas would "
        "put other pods on them; raised once it is gone"
    )
    return Skip(node.name, Reason.NO_CHANGE, why)
