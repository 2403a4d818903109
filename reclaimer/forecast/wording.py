"""How a forecast's probability reads to people: the one formatter for plans, Events and logs.

Theory of operation. A probability estimated from finite data is never certain, yet printed with
two decimals 0.996 reads "1.00". `probability_text` therefore writes two decimals but says
">0.99" and "<0.01" at the ends, and `odds_text` adds what the number rests on: the method and
the job's own record, e.g. `p_idle>0.99 (pooled-logistic; idle in 96/96 past 15m windows)`.
A job the forecaster would not judge (too little or too old history) reads as
`no idle forecast (insufficient-history; 40 samples)`, since its 0 is a rule, not an estimate.
Every place that shows a forecast's probability goes through `odds_text`.
"""

from __future__ import annotations

import math

from reclaimer.forecast.methods import UNDECIDED_METHODS
from reclaimer.model import Forecast
from reclaimer.units import format_duration


def probability_text(p: float) -> str:
    """'0.87'; '>0.99' and '<0.01' where two decimals would round to 1.00 or 0.00."""
    if math.isnan(p):
        return "unknown"
    shown = f"{p:.2f}"
    if shown == "1.00":
        return ">0.99"
    if shown in ("0.00", "-0.00"):
        return "<0.01"
    return shown


def record_text(f: Forecast) -> str:
    """'idle in 80/96 past 15m windows', or why there is no such record."""
    if f.samples == 0:
        return "no history read"
    horizon = format_duration(f.horizon_seconds)
    if f.past_windows == 0:
        return f"no complete past {horizon} window"
    return f"idle in {f.past_idle_windows}/{f.past_windows} past {horizon} windows"


def odds_text(f: Forecast) -> str:
    """The forecast's P(idle for the horizon) with its method and evidence, for people."""
    if f.method in UNDECIDED_METHODS:
        return f"no idle forecast ({f.method}; {f.samples} samples)"
    p = probability_text(f.confidence)
    sign = "" if p[0] in "<>" else "="
    return f"p_idle{sign}{p} ({f.method}; {record_text(f)})"
