"""The per-cycle preemption budget: what the policy's limits still allow this cycle.

One object enforces every limit (total preemptions, GPUs freed, per namespace, preempted pods per
node), the way descheduler's evictor does, and it is the only code that counts them: the planner
asks it before choosing each victim, so no plan can exceed a limit, and the actuator asks it
again before each stop (`reclaimer.plan.refusals`), so both count alike. `blocker` names the
limit that held a stop back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from reclaimer.policy.settings import Limits


class Stop(Protocol):
    """What a preemption takes: a job's namespace, its bound GPU slots and pods per node."""

    @property
    def namespace(self) -> str: ...

    @property
    def gpus(self) -> int: ...

    @property
    def pods_by_node(self) -> Mapping[str, int]: ...


@dataclass(frozen=True)
class Taken:
    namespace: str
    gpus: int
    pods_by_node: Mapping[str, int]


class Budget:
    """What is left of the cycle's limits; `blocker` names the limit a victim would break."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.preemptions = 0
        self.gpus = 0
        self.per_namespace: dict[str, int] = {}
        self.per_node: dict[str, int] = {}

    def blocker(self, v: Stop) -> str | None:
        lim = self.limits
        if self.preemptions + 1 > lim.max_preemptions_per_cycle:
            return f"maxPreemptionsPerCycle={lim.max_preemptions_per_cycle}"
        if self.gpus + v.gpus > lim.max_gpus_freed_per_cycle:
            return f"maxGpusFreedPerCycle={lim.max_gpus_freed_per_cycle}"
        ns = v.namespace
        if self.per_namespace.get(ns, 0) + 1 > lim.max_preemptions_per_namespace:
            return f"maxPreemptionsPerNamespace={lim.max_preemptions_per_namespace} in {ns}"
        for node, pods in v.pods_by_node.items():
            if self.per_node.get(node, 0) + pods > lim.max_pods_per_node:
                return f"maxPreemptedPodsPerNode={lim.max_pods_per_node} on {node}"
        return None

    def exhausted(self) -> bool:
        lim = self.limits
        return (
            self.preemptions >= lim.max_preemptions_per_cycle
            or self.gpus >= lim.max_gpus_freed_per_cycle
        )

    def take(self, v: Stop) -> None:
        self.preemptions += 1
        self.gpus += v.gpus
        ns = v.namespace
        self.per_namespace[ns] = self.per_namespace.get(ns, 0) + 1
        for node, pods in v.pods_by_node.items():
            self.per_node[node] = self.per_node.get(node, 0) + pods

    def copy(self) -> Budget:
        out = Budget(self.limits)
        out.preemptions, out.gpus = self.preemptions, self.gpus
        out.per_namespace, out.per_node = dict(self.per_namespace), dict(self.per_node)
        return out
