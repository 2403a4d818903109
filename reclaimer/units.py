"""Parsing of the human quantities found in policies and annotations: durations and ratios.

Durations are numbers of seconds or Go-style strings (`600s`, `15m`, `1h30m`, `1.5h`, `250ms`,
`2d`), the shape Volcano uses for `volcano.sh/cooldown-time`. Ratios are numbers in 0..1 or
percent strings (`5%`). Every parser raises `ValueError` with a message fit for an operator.
"""

from __future__ import annotations

import math
import re

_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")


def parse_duration(value: object) -> float:
    """Seconds in `value`: a non-negative number, or a string like `600s`, `15m`, `1h30m`."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 600s, 15m or 1h, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and _DURATION.fullmatch(value.strip()):
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(value.strip()))
    elif isinstance(value, str) and _is_number(value):
        seconds = float(value)
    else:
        raise ValueError(f"expected a duration like 600s, 15m or 1h, got {value!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"duration must be finite and >= 0, got {value!r}")
    return seconds


def parse_ratio(value: object) -> float:
    """A ratio in 0..1 from a number (0.05) or a percent string ("5%")."""
    if isinstance(value, bool):
        raise ValueError(f"expected a ratio like 0.05 or '5%', got {value!r}")
    if isinstance(value, int | float):
        ratio = float(value)
    elif isinstance(value, str) and (m := _PERCENT.fullmatch(value.strip())):
        ratio = float(m.group(1)) / 100.0
    else:
        raise ValueError(f"expected a ratio like 0.05 or '5%', got {value!r}")
    if not (0.0 <= ratio <= 1.0):
        raise ValueError(f"must be between 0 and 1 (0% and 100%), got {value!r}")
    return ratio


def format_duration(seconds: float) -> str:
    """Shortest readable form: 900 -> '15m', 5400 -> '1h30m', 42.5 -> '42.5s'.

    From a minute up, fractions of a second are rounded away (89971.6 -> '1d59m32s'): a measured
    span that long reads in whole units, never as raw seconds.
    """
    if seconds < 60:
        return f"{seconds:g}s"
    rest = round(seconds)
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            out += f"{rest // size}{unit}"
            rest %= size
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
