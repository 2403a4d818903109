"""The per-cycle preemption budget: what the policy's limits still allow this cycle.

One object enforces every limit (total preemptions, GPUs freed, per namespace, preempted pods per
node), the way descheduler's evictor does; the planner asks it before choosing each victim, so
no plan can exceed a limit, and `blocker` names the limit that held a candidate back.
"""

from __future__ import annotations

from reclaimer.policy import Limits
from reclaimer.victims import Victim


class Budget:
    """What is left of the cycle's limits; `blocker` names the limit a victim would break."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.preemptions = 0
        self.gpus = 0
        self.per_namespace: dict[str, int] = {}
        self.per_node: dict[str, int] = {}

    def blocker(self, v: Victim) -> str | None:
        lim = self.limits
        if self.preemptions + 1 > lim.max_preemptions_per_cycle:
            return f"maxPreemptionsPerCycle={lim.max_preemptions_per_cycle}"
        if self.gpus + v.gpus > lim.max_gpus_freed_per_cycle:
            return f"maxGpusFreedPerCycle={lim.max_gpus_freed_per_cycle}"
        ns = v.job.namespace
        if self.per_namespace.get(ns, 0) + 1 > lim.max_preemptions_per_namespace:
            return f"maxPreemptionsPerNamespace={lim.max_preemptions_per_namespace} in {ns}"
        for node, pods in v.placement.pods_by_node.items():
            if self.per_node.get(node, 0) + pods > lim.max_pods_per_node:
                return f"maxPreemptedPodsPerNode={lim.max_pods_per_node} on {node}"
        return None

    def exhausted(self) -> bool:
        lim = self.limits
        return (
            self.preemptions >= lim.max_preemptions_per_cycle
            or self.gpus >= lim.max_gpus_freed_per_cycle
        )

    def take(self, v: Victim) -> None:
        self.preemptions += 1
        self.gpus += v.gpus
        ns = v.job.namespace
        self.per_namespace[ns] = self.per_namespace.get(ns, 0) + 1
        for node, pods in v.placement.pods_by_node.items():
            self.per_node[node] = self.per_node.get(node, 0) + pods

    def copy(self) -> Budget:
        out = Budget(self.limits)
        out.preemptions, out.gpus = self.preemptions, self.gpus
        out.per_namespace, out.per_node = dict(self.per_namespace), dict(self.per_node)
        return out
