"""One bad object becomes one problem, never a failed view.

`safe` runs the decoding of one object and, where the object is malformed (a field of the wrong
type, a time-slicing config that does not parse), notes `"<what>: skipped, <why>"` in `problems`
and returns None so that the caller leaves that object out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects.timeslicing import TimeSlicingError

T = TypeVar("T")


def safe(problems: list[str], what: str, fn: Callable[[], T]) -> T | None:
    try:
        return fn()
    except (f.FieldError, TimeSlicingError, AttributeError, TypeError) as exc:
        problems.append(f"{what}: skipped, {exc}")
        return None
