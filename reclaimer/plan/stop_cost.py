"""Cost-aware stops: stop an idle job only when what it frees outweighs what it risks.

Theory of operation. With `costAwareStops` on, a job forecast idle with P = P(idle over the
horizon) is stopped for a waiting gang only when

    P x (GPU-seconds its stop frees for that gang over the horizon)
        > (1 - P) x (GPU-seconds lost if it turns busy instead),

both sides in the same GPU-seconds, so the rule needs the forecaster's probabilities to mean
what they say (`forecast-eval` checks their calibration). What it frees: the GPUs of the gang's
device resource the job holds, at most the gang's own, for one horizon. What it risks: the
work since its last checkpoint, counted as busy time, plus the cold start it pays when it comes
back. The busy time is the run time since the last checkpoint (`victims.work_lost_seconds`)
times the share of the job's past horizons that were not idle (the forecast's own counts; a
horizon with one busy sample counts as busy throughout, so this errs high); with no past
horizon recorded, the whole run time counts.

The rule replaces `minConfidence` as the cut, bounded below by `costAwareFloor`: a job more
likely busy than that is never stopped, however much a gang waits. A stop that passes says
both sides in the plan ("frees 2 GPUs for 15m of waiting demand; risks 12m of work and a 1m
cold start"); one that fails is a `StopCostsMoreThanItFrees` skip with the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

from reclaimer.model import Forecast
from reclaimer.units import format_duration


@dataclass(frozen=True)
class CostRule:
    """The policy's side of the rule: the cold start a stopped job pays, and the floor."""

    cold_start_seconds: float
    floor: float  # never stop below this P(idle), whatever the gain


def busy_share(forecast: Forecast) -> float:
    """Share of the job's past horizons that were not idle; 1 with none recorded."""
    if forecast.past_windows <= 0:
        return 1.0
    return 1.0 - forecast.past_idle_windows / forecast.past_windows


@dataclass(frozen=True)
class StopCost:
    """Both sides of one stop, in GPU-seconds weighed by the forecast's probability."""

    p_idle: float
    gpus_freed: float  # of the waiting gang's resource, at most what it asks for
    gpus_held: float  # everything the job holds, which it would lose work on
    horizon_seconds: float
    work_seconds: float  # busy seconds since the last checkpoint
    cold_start_seconds: float

    @property
    def gain(self) -> float:
        return self.p_idle * self.gpus_freed * self.horizon_seconds

    @property
    def risk(self) -> float:
        return (1.0 - self.p_idle) * self.gpus_held * (self.work_seconds + self.cold_start_seconds)

    @property
    def worth(self) -> bool:
        return self.gain > self.risk

    def text(self) -> str:
        """Both sides in words, e.g. "frees 2 GPUs for 15m of waiting demand; risks 12m of
        work and a 1m cold start (expected 27.0 against 1.3 GPU-min)"."""
        gpus = f"{self.gpus_freed:g} GPU" + ("" if self.gpus_freed == 1 else "s")
        return (
            f"frees {gpus} for {format_duration(self.horizon_seconds)} of waiting demand; "
            f"risks {format_duration(self.work_seconds)} of work and a "
            f"{format_duration(self.cold_start_seconds)} cold start "
            f"(expected {self.gain / 60:.1f} against {self.risk / 60:.1f} GPU-min)"
        )


def stop_cost(
    forecast: Forecast,
    rule: CostRule,
    *,
    gpus_freed: float,
    gpus_held: float,
    work_lost_seconds: float,
) -> StopCost:
    """The two sides of stopping the job `forecast` speaks of, to free `gpus_freed` for a gang."""
    return StopCost(
        p_idle=forecast.confidence,
        gpus_freed=gpus_freed,
        gpus_held=gpus_held,
        horizon_seconds=forecast.horizon_seconds,
        work_seconds=work_lost_seconds * busy_share(forecast),
        cold_start_seconds=rule.cold_start_seconds,
    )
