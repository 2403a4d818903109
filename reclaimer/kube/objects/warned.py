"""A job's scheduled stop and its owner's keep, from its `gpu-reclaim.io/` annotations. Pure.

The warning record (`reclaim-after`, `warned-at`, `warned-for`, `warn-reason`) is written by the
reclaimer with the warning Event; `keep-until` is written by the job's owner. A record missing a
part, or a time that does not parse, is no warning: the planner then warns afresh, which only
ever delays a stop. An owner's `keep-until` that does not parse is ignored (and so is not kept).
"""

from __future__ import annotations

from collections.abc import Mapping

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects.resources import (
    KEEP_UNTIL,
    RECLAIM_AFTER,
    WARN_REASON,
    WARNED_AT,
    WARNED_FOR,
)
from reclaimer.model import StopWarning


def _time(value: str | None) -> float | None:
    try:
        return f.timestamp(value)
    except ValueError:
        return None


def stop_warning(annotations: Mapping[str, str]) -> StopWarning | None:
    """The stop scheduled on a job, or None when it carries no complete record."""
    stop_at = _time(annotations.get(RECLAIM_AFTER))
    warned_at = _time(annotations.get(WARNED_AT))
    pending = annotations.get(WARNED_FOR) or ""
    if stop_at is None or warned_at is None or not pending:
        return None
    return StopWarning(warned_at, stop_at, pending, annotations.get(WARN_REASON, ""))


def keep_until(annotations: Mapping[str, str]) -> float | None:
    return _time(annotations.get(KEEP_UNTIL))
