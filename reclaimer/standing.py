"""Where each Volcano queue stands as a cycle begins: GPUs deserved, allocated and waiting.

The planner fills one `QueueStanding` per queue into its `Plan` (from the cycle's ledger, before
any action), so that whoever reads the plan (the status page, `/plan`) sees the shares the
decisions were made against. Frozen and free of I/O, like the rest of the model.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QueueStanding:
    queue: str
    deserved_gpus: float  # the share the planner computed (weights, policy overrides, capability)
    allocated_gpus: float  # held by the queue's running jobs
    pending_gpus: int  # asked for by the queue's waiting jobs
    pending_jobs: int
    guarantee_gpus: float = 0.0
    capability_gpus: float | None = None
    reclaimable: bool = True
    known: bool = True  # False: jobs name this queue but no Queue object exists

    @property
    def starved(self) -> bool:
        """Below its share with jobs waiting: what preemption serves."""
        return self.pending_jobs > 0 and self.allocated_gpus < self.deserved_gpus
