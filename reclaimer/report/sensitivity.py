"""A capacity sweep over several settings: each memory reading and each pool draw, side by side.

A *setting* is one `--memory-peak-gib` value and one `--pool-seeds` draw; the sweep judges each
on its own (`SettingSweep`: its `SweepSummary` and its runs). Across them:
- `memory_sensitivity`: per memory value, each strategy's `min_gpus` under the rule in force
  (over several pool draws, their median, below);
- `break_even_gib`: per strategy, the largest memory value tried at which it needs fewer GPUs
  than `none` (a strategy's `min_gpus` below `none`'s, or a number where `none` has none: `none`
  then keeps the SLO at no capacity tried), or null when there is none;
- `pool_draws` (several draws only): per memory value and strategy, `min_gpus` on each draw,
  their median and range. A draw with no `min_gpus` counts as more than any capacity tried: it
  sorts last, a median that falls on it is null, and so is the top of the range. With an even
  number of draws the median is the higher middle one (the more GPUs, `statistics.median_high`).

`as_json` keeps one setting's JSON as `sweep_text.as_json` gives it, plus `memory_sensitivity` and
`break_even_gib` when memory was replayed at `--memory-peak-gib` values (not when it was replayed as
measured, with no value: the runs' `memory_replay` says which); several settings' `policies` and
`runs` move into `settings`, one entry per setting. Under the pooled rule (`--slo-pooled`) the
pooled minima are never shown alone: the per-queue rule's `memory_sensitivity`,
`break_even_gib` and `pool_draws` stand beside them, in JSON under `per_queue` and in the text
as a block of their own (`per_queue=True` reads each setting's per-queue verdicts). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reclaimer.report import sweep_text
from reclaimer.report.replay_data import Rule, SweepSummary


@dataclass(frozen=True)
class SettingSweep:
    memory_gib: float | None  # the `--memory-peak-gib` value (None: no memory replayed, or
    # replayed as measured: no value applies)
    pool_seed: int
    summary: SweepSummary
    runs: list[dict[str, object]]

    def min_gpus(self, per_queue: bool = False) -> dict[str, int | None]:
        """Each strategy's `min_gpus` under the rule in force, or the per-queue rule's."""
        verdicts = self.summary.per_queue if per_queue else self.summary.verdicts
        return {v.strategy: v.min_gpus for v in verdicts}


@dataclass(frozen=True)
class Draws:
    """One strategy's `min_gpus` over the pool draws of one memory value."""

    by_seed: dict[int, int | None]

    def _sorted(self) -> list[int | None]:
        return sorted(self.by_seed.values(), key=lambda n: (n is None, n or 0))

    @property
    def median(self) -> int | None:
        ordered = self._sorted()
        return ordered[len(ordered) // 2]

    @property
    def range(self) -> tuple[int | None, int | None]:
        ordered = self._sorted()
        return ordered[0], ordered[-1]

    def as_dict(self) -> dict[str, object]:
        return {
            "by_pool_seed": {str(s): n for s, n in sorted(self.by_seed.items())},
            "median": self.median,
            "range": list(self.range),
        }


def _memories(sweeps: Sequence[SettingSweep]) -> list[float | None]:
    return list(dict.fromkeys(s.memory_gib for s in sweeps))


def _pool_seeds(sweeps: Sequence[SettingSweep]) -> list[int]:
    return list(dict.fromkeys(s.pool_seed for s in sweeps))


def draws(
    sweeps: Sequence[SettingSweep], per_queue: bool = False
) -> dict[float | None, dict[str, Draws]]:
    """Per memory value, per strategy, `min_gpus` on each pool draw."""
    out: dict[float | None, dict[str, Draws]] = {}
    for sweep in sweeps:
        mine = out.setdefault(sweep.memory_gib, {})
        for strategy, least in sweep.min_gpus(per_queue).items():
            mine.setdefault(strategy, Draws({})).by_seed[sweep.pool_seed] = least
    return out


def memory_sensitivity(
    sweeps: Sequence[SettingSweep], per_queue: bool = False
) -> list[dict[str, object]]:
    """Per memory value, each strategy's `min_gpus` (the median over the pool draws)."""
    return [
        {
            "memory_peak_gib": gib,
            "min_gpus": {name: d.median for name, d in per_strategy.items()},
        }
        for gib, per_strategy in draws(sweeps, per_queue).items()
    ]


def _fewer(least: int | None, baseline: int | None) -> bool:
    return least is not None and (baseline is None or least < baseline)


def break_even(sweeps: Sequence[SettingSweep], per_queue: bool = False) -> dict[str, float | None]:
    """Per strategy, the largest memory value at which it needs fewer GPUs than `none`."""
    found: dict[str, float | None] = {}
    for gib, per_strategy in draws(sweeps, per_queue).items():
        baseline = per_strategy["none"].median
        for name, d in per_strategy.items():
            found.setdefault(name, None)
            if name != "none" and gib is not None and _fewer(d.median, baseline):
                found[name] = max(gib, found[name] or 0.0)
    return found


def as_json(sweeps: Sequence[SettingSweep]) -> dict[str, object]:
    """One JSON for every setting (the module doc)."""
    first = sweeps[0]
    if len(sweeps) == 1:
        out = sweep_text.as_json(first.summary, first.runs)
    else:
        whole = sweep_text.as_json(first.summary, [])
        out = {k: v for k, v in whole.items() if k not in ("policies", "runs")}
        out["memory_peak_gib"] = _memories(sweeps)
        out["pool_seeds"] = _pool_seeds(sweeps)
        out["settings"] = [
            {
                "memory_peak_gib": s.memory_gib,
                "pool_seed": s.pool_seed,
                "policies": sweep_text.as_json(s.summary, [])["policies"],
                "runs": s.runs,
            }
            for s in sweeps
        ]
    out |= _across(sweeps, per_queue=False)
    if first.summary.rule is Rule.POOLED:
        out["per_queue"] = _across(sweeps, per_queue=True)
    return out


def _across(sweeps: Sequence[SettingSweep], *, per_queue: bool) -> dict[str, object]:
    """What changes across the settings, under the rule in force or the per-queue rule."""
    out: dict[str, object] = {}
    if sweeps[0].memory_gib is not None:
        out["memory_sensitivity"] = memory_sensitivity(sweeps, per_queue)
        out["break_even_gib"] = break_even(sweeps, per_queue)
    if len(_pool_seeds(sweeps)) > 1:
        out["pool_draws"] = [
            {"memory_peak_gib": gib, "min_gpus": {n: d.as_dict() for n, d in per.items()}}
            for gib, per in draws(sweeps, per_queue).items()
        ]
    return out


def lines(sweeps: Sequence[SettingSweep]) -> list[str]:
    """Each setting's verdicts (with a header naming it when there are several), then the
    memory sensitivity with the break-even, then the pool draws."""
    out: list[str] = []
    for s in sweeps:
        if len(sweeps) > 1:
            out.append(f"-- {_setting(s.memory_gib, s.pool_seed)}")
        out += sweep_text.lines(s.summary)
    pooled = sweeps[0].summary.rule is Rule.POOLED
    for per_queue in (False, True) if pooled else (False,):
        rule = "per-queue" if per_queue else sweeps[0].summary.rule.value
        if sweeps[0].memory_gib is not None:
            out += _memory_lines(sweeps, per_queue, rule)
        if len(_pool_seeds(sweeps)) > 1:
            out += _draw_lines(sweeps, per_queue, rule)
    return out


def _setting(gib: float | None, pool_seed: int) -> str:
    memory = "" if gib is None else f"memory peak {gib:g} GiB, "
    return f"{memory}pool seed {pool_seed}"


def _memory_lines(sweeps: Sequence[SettingSweep], per_queue: bool, rule: str) -> list[str]:
    seeds = _pool_seeds(sweeps)
    over = f" (median over pool seeds {', '.join(map(str, seeds))})" if len(seeds) > 1 else ""
    out = [
        f"memory sensitivity ({rule} rule): min_gpus by --memory-peak-gib{over}, and the break-even"
    ]
    table = draws(sweeps, per_queue)
    for name, gib in break_even(sweeps, per_queue).items():
        cells = "  ".join(
            f"{m:g}: {_n(per[name].median)}" for m, per in table.items() if m is not None
        )
        even = "-" if gib is None else f"{gib:g} GiB"
        out.append(f"{name:<15} {cells}  break-even {even}")
    return out


def _draw_lines(sweeps: Sequence[SettingSweep], per_queue: bool, rule: str) -> list[str]:
    seeds = ", ".join(map(str, _pool_seeds(sweeps)))
    out = [f"pool draws (seeds {seeds}, {rule} rule): min_gpus on each, median and range"]
    for gib, per in draws(sweeps, per_queue).items():
        where = "" if gib is None else f" at {gib:g} GiB"
        for name, d in per.items():
            each = ", ".join(_n(n) for _, n in sorted(d.by_seed.items()))
            low, high = d.range
            out.append(
                f"{name:<15}{where}: {each} (median {_n(d.median)}, range {_n(low)}-{_n(high)})"
            )
    return out


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)
