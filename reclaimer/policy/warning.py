"""How long an owner is warned before the reclaimer stops their job, and how long they may keep it.

The `warning:` section of the policy. A job the planner picks to stop is first *warned*: the
stop is scheduled `warnBefore` later (a Warning Event, the `gpu-reclaim.io/reclaim-after`
annotation), and only a cycle at or after that time stops it (`reclaimer.plan.warning`). The
period is looked up per job: its queue in `byQueue`, else its kind in `byKind`, else
`warnBefore`. The default warns Notebooks 10 minutes ahead (a person's kernel state is what a stop
loses) and stops every other kind at once (`docs/policy.md` says why). An owner may keep a warned
job longer with `gpu-reclaim.io/keep-until`, honoured up to `maxKeep` after the scheduled stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from reclaimer.model import JobKind
from reclaimer.policy.fields import CrossCheck, as_duration, setting

NOTEBOOK_WARNING_S = 600.0
"""A Notebook's default warning: long enough to come back from a coffee, save and close."""


@dataclass(frozen=True)
class WarningPolicy:
    """The warning period before a stop, per queue and per workload kind, and the keep cap."""

    warn_before_seconds: float = setting(0.0, as_duration, "warnBefore")
    by_kind: Mapping[str, float] = setting(
        MappingProxyType({JobKind.NOTEBOOK.value: NOTEBOOK_WARNING_S}),
        None,
        "byKind",
        values=as_duration,
    )
    by_queue: Mapping[str, float] = setting(
        MappingProxyType({}), None, "byQueue", values=as_duration
    )
    # An owner's keep-until is honoured up to this long after the scheduled stop: the starved
    # queue waits for it, so a keep cannot hold GPUs for longer than an afternoon.
    max_keep_seconds: float = setting(4 * 3600.0, as_duration, "maxKeep")

    def before(self, kind: JobKind | str, queue: str) -> float:
        """Seconds of warning before a job of `kind` in `queue` is stopped (0: no warning)."""
        if queue in self.by_queue:
            return self.by_queue[queue]
        return self.by_kind.get(str(kind), self.warn_before_seconds)

    def problems(self) -> list[CrossCheck]:
        known = {k.value for k in JobKind}
        why = f"unknown workload kind (known: {', '.join(sorted(known))})"
        return [((f"byKind.{name}", "byKind"), why) for name in sorted(set(self.by_kind) - known)]
