"""After each cycle's actions, settle what the snapshot shows of earlier stops (`kube.stops`).

- A stop record whose stop never happened (`Job.unfinished_stop`) is cleared, with a Warning
  Event that says so, unless this cycle's actions just wrote to that job (a new stop, or one
  whose outcome is not known yet: the next snapshot tells).
- A stop that took effect but whose Event is missing (the controller died after the stop) gets
  its Event now, under the name the stop would have used: 409 means it was there all along.
Never raises: a failed write is logged and tried again next cycle. Dry-run clears by a
server-side dry-run, and writes no found Events (a dry-run stops nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from typing import Protocol

from reclaimer.kube import operations as ops
from reclaimer.kube import stops
from reclaimer.kube.client import KubeError
from reclaimer.kube.objects import kinds
from reclaimer.kube.write import KubeWriter, NotLeader
from reclaimer.model import ClusterView, Job

log = logging.getLogger(__name__)

CLEARED_REASON = "GpuReclaimStopCleared"
PREEMPTED_REASON = "GpuReclaimPreempted"


class Recorder(Protocol):
    def record(
        self,
        involved: Mapping[str, str],
        reason: str,
        message: str,
        now: float,
        warning: bool,
        *,
        name: str | None = None,
    ) -> None: ...


class Settler:
    def __init__(
        self,
        writer: KubeWriter,
        events: Recorder,
        clock: Callable[[], float],
        may_write: Callable[[], bool],
    ) -> None:
        self.writer, self.events, self.clock, self.may_write = writer, events, clock, may_write
        self.recorded: set[str] = set()  # stop Events known to be written (by name)

    def settle(self, view: ClusterView, touched: Collection[str]) -> list[str]:
        """Clear unfinished stops and write missing stop Events; what was done, in words."""
        done: list[str] = []
        for job in view.jobs:
            if not self.may_write():
                break
            if job.unfinished_stop and job.key not in touched:
                done += self._clear(job)
            elif not self.writer.dry_run and stops.needs_event(job, self.clock()):
                done += self._event_of(job)
        return done

    def _clear(self, job: Job) -> list[str]:
        try:
            obj = stops.clear_unfinished(self.writer, job)
        except ops.Precondition as exc:
            log.info("stop record of %s kept: %s", job.key, exc)
            return []
        except (KubeError, NotLeader) as exc:
            log.warning("stop record of %s not cleared (next cycle retries): %s", job.key, exc)
            return []
        what = f"{'[dry-run] ' if self.writer.dry_run else ''}stop record of {job.key} cleared"
        why = f"{what}: it is {job.unfinished_stop}; the room it claimed is not counted"
        log.warning("%s", why)
        involved = ops.involved(obj, kinds.resource_of(job.kind))
        try:
            self.events.record(involved, CLEARED_REASON, why, self.clock(), True)
        except (KubeError, NotLeader) as exc:
            log.warning("event for the cleared record of %s not recorded: %s", job.key, exc)
        return [why]

    def _event_of(self, job: Job) -> list[str]:
        assert job.stopped_at is not None  # needs_event
        name = stops.event_name(job.name, job.stopped_at)
        if name in self.recorded:
            return []
        try:
            involved = kinds.involved_object(job)
            self.events.record(
                involved, PREEMPTED_REASON, stops.found_message(job), job.stopped_at,
                False, name=name,
            )  # fmt: skip
        except KubeError as exc:
            if exc.status == 409:  # written when the job was stopped
                self.recorded.add(name)
            else:
                log.warning("event of the stop of %s not recorded: %s", job.key, exc)
            return []
        except NotLeader:
            return []
        self.recorded.add(name)
        why = f"recorded the Event of the stop of {job.key}, found without one"
        log.info("%s", why)
        return [why]
