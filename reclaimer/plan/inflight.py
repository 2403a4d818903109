"""Room in flight: what the reclaimer already stopped for a pending job, and is still being freed.

When the reclaimer stops a job for a pending one, it writes the pending job's key and the time on
the stopped job (`gpu-reclaim.io/room-for`, `gpu-reclaim.io/suspended-at` or `evicted-at`), so the
record lives in the cluster and survives a restart or a new leader. The stopped job's pods keep
their devices until they are gone (its operator deletes them, then they terminate with their
grace period). While any of them is still bound, that room is *in flight*:

- the pending job it was made for takes no other victim (it is skipped with `RoomInFlight`), and
  the releasing slots, plus what is free, are reserved for it first, before any other pending
  job is served;
- a release still in flight after the policy's `releaseTimeout` becomes a `ReleaseOverdue`
  warning in the plan (the controller turns it into a Warning Event and a metric); the room is
  still not freed twice.

Pure: it reads the snapshot's jobs and the cycle's ledger; consumed by `reclaimer.plan.planner`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reclaimer.devices import resource_key
from reclaimer.model import Job, PendingDemand, Reason, Skip
from reclaimer.plan.capacity import Releasing, pod_shape
from reclaimer.plan.ledger import Ledger, grant
from reclaimer.units import format_duration


@dataclass(frozen=True)
class Room:
    """One stopped job whose slots are still being released for `pending`."""

    job: Job
    pending: str
    slots_by_node: Mapping[str, int]
    since: float | None

    @property
    def slots(self) -> int:
        return sum(self.slots_by_node.values())


def rooms_in_flight(jobs: Sequence[Job], released: Releasing) -> list[Room]:
    """Jobs the reclaimer stopped for a pending job whose pods still hold slots."""
    out = []
    for job in jobs:
        held = released.by_job.get(job.key)
        if job.room_for and held:
            out.append(Room(job, job.room_for, held, job.stopped_at))
    return sorted(out, key=lambda r: (r.pending, r.job.key))


def hold_rooms(
    demands: Sequence[PendingDemand],
    rooms: Sequence[Room],
    ledger: Ledger,
    *,
    now: float,
    timeout: float,
) -> tuple[list[PendingDemand], list[Skip], list[Skip]]:
    """Serve pending jobs whose room is in flight first, from the ledger's (future) free slots.

    Returns the other demands (for the preemption planner), the skips of the held ones, and a
    `ReleaseOverdue` warning per room released for longer than `timeout`.
    """
    by_pending: dict[str, list[Room]] = {}
    for room in rooms:
        by_pending.setdefault(room.pending, []).append(room)
    rest: list[PendingDemand] = []
    skips: list[Skip] = []
    for d in demands:
        mine = by_pending.get(d.job)
        if not mine:
            rest.append(d)
            continue
        pod_gpus, pods = pod_shape(d.gpus, d.min_member)
        fits = ledger.fits(resource_key(d.gpus, d.mig), pod_gpus, pods)
        if fits:
            grant(d, pod_gpus, pods, ledger)
        else:
            ledger.unserved.append(d)  # still waiting: resumes must not take its room
        skips.append(Skip(d.job, Reason.ROOM_IN_FLIGHT, _held_note(mine, fits, now)))
    warnings = [
        Skip(r.job.key, Reason.RELEASE_OVERDUE, _overdue_note(r, now, timeout))
        for r in rooms
        if r.since is not None and now - r.since > timeout
    ]
    return rest, skips, warnings


def _held_note(rooms: Sequence[Room], fits: bool, now: float) -> str:
    parts = []
    for r in rooms:
        ago = f" {format_duration(max(0.0, now - r.since))} ago" if r.since is not None else ""
        parts.append(f"{r.job.key} (stopped{ago}, {r.slots} slots still releasing)")
    tail = "reserved for it" if fits else "no other victim is taken while it is in flight"
    return f"room in flight from {', '.join(parts)}; {tail}"


def _overdue_note(r: Room, now: float, timeout: float) -> str:
    on = ", ".join(f"{n}:{g}" for n, g in sorted(r.slots_by_node.items()))
    assert r.since is not None
    return (
        f"stopped for {r.pending} {format_duration(max(0.0, now - r.since))} ago, its pods still "
        f"hold {r.slots} slots ({on}) after releaseTimeout {format_duration(timeout)}; "
        "not freed twice: check why its pods do not terminate"
    )
