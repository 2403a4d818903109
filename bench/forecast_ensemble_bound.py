"""How far can the default forecaster, alone or with decayed-p95, go at precision 0.90? (not a test)

    .venv/bin/python bench/forecast_ensemble_bound.py [--seeds 0] [--variants base,rule] [--raw]

`bench/forecast_cv.py`'s pod-split protocol (3 folds per seed, each fold's pods run alone
through `forecast-eval`'s walk-forward protocol) on the shared GenTD26 pods, for:

- `base`: the default `pooled-logistic`;
- `rule`: the same model with decayed-p95's own verdict as features: whether the job's decayed
  busy share (half-life 1 h) is below 5% (which is when its decayed 95th percentile is below the
  threshold) and below 1%;
- `long`: the same model with the job's decayed busy share at a 12 h half-life too;
- the rule `decayed-p95` itself;
- the variants of `forecast_variants` (idle-run survival, nonlinear transforms, burst rates);
- `pod-rate-oracle`, a cheat that reads the future: each pod's burst rate around the origin.

`--raw` scores the logistic model's own probabilities, without the recalibration map.

For each it prints pooled precision and recall at the shipped cut, the idle GPU-hours found, the
best recall of any cut at precision >= 0.90 and the best precision of any cut at recall >= 0.62,
both chosen in hindsight (upper bounds, not results), and the ECE. Last, for each variant, the
best recall at precision >= 0.90 of any ensemble that says idle when "decayed-p95 says idle and
P >= c1" or "P >= c2", both cuts chosen in hindsight on a 0.02 grid: an upper bound on what
stacking the two by cuts can give.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import forecast_variants as fv
import numpy as np
from forecast_cv import hindsight_precision, hindsight_recall

from reclaimer.commands.forecast_eval import read_trace
from reclaimer.forecast import idle_model
from reclaimer.forecast.backtest import WARMUP_SECONDS, Origins, answers, origins
from reclaimer.forecast.baselines import decayed_p95
from reclaimer.forecast.calibration import calibrate
from reclaimer.forecast.features import (
    FloatArray,
    Grid,
    build_grid,
    busy_flags,
    decayed_fraction,
    samples_for,
)
from reclaimer.forecast.params import Forecaster, ForecastParams, Prediction

ORACLE = "pod-rate-oracle"
ORACLE_HALF_WIDTH_SECONDS = 1.5 * 3600.0
TRACE = "/work/shared/data/alibaba-gentd26/pod_gpu_duty_cycle.csv.gz"
BASE = idle_model._job_features


def with_rule(busy, valid, cols, grid, p):  # type: ignore[no-untyped-def]
    """The default's job features plus decayed-p95's verdict at two cuts."""
    base = BASE(busy, valid, cols, grid, p)
    share = decayed_fraction(busy, valid, 3600.0 / grid.step)[:, cols]
    extra = [(share < 0.05).astype(float), (share < 0.01).astype(float)]
    return np.concatenate((base, np.stack(extra, axis=2)), axis=2)


def with_long(busy, valid, cols, grid, p):  # type: ignore[no-untyped-def]
    """The default's job features plus the decayed busy share at a 12 h half-life: the pod's
    slowly changing idle propensity."""
    base = BASE(busy, valid, cols, grid, p)
    share = decayed_fraction(busy, valid, 43200.0 / grid.step)[:, cols]
    return np.concatenate((base, np.log(share + 0.005)[:, :, None]), axis=2)


VARIANTS: dict[str, Callable[..., FloatArray]] = {
    "base": BASE,
    "rule": with_rule,
    "long": with_long,
    "survival": fv.with_survival,
    "survival-pod": fv.with_survival_pod,
    "survival-pod-only": fv.with_survival_pod_only,
    "shapes": fv.with_shapes,
    "run-bins": fv.with_run_bins,
    "share-bands": fv.with_share_bands,
    "cross": fv.with_cross,
    "bursts": fv.with_bursts,
    "all": fv.with_all,
}


def pod_rate_oracle(grid: Grid, found: Origins, p: ForecastParams) -> np.ndarray:
    """A cheat: exp(-rate * horizon) for a pod idle at the origin, where rate is the pod's busy
    onsets per sample over the 3 h centred on the origin (its future included, the scored
    window itself left out). What knowing each pod's burst rate, as a Poisson process, is worth."""
    busy, valid = busy_flags(grid.values, p.threshold)
    onset = np.zeros_like(busy)
    onset[:, 1:] = busy[:, 1:] * (1.0 - busy[:, :-1])
    cum = np.concatenate((np.zeros((busy.shape[0], 1)), np.cumsum(onset, axis=1)), axis=1)
    h = samples_for(p.horizon_seconds, grid.step)
    half = round(ORACLE_HALF_WIDTH_SECONDS / grid.step)
    r, c = found.rows, found.cols
    lo, hi = np.clip(c - half, 0, grid.columns), np.clip(c + half + 1, 0, grid.columns)
    own = cum[r, np.minimum(c + 1 + h, grid.columns)] - cum[r, c + 1]
    rate = (cum[r, hi] - cum[r, lo] - own) / np.maximum(hi - lo - h, 1)
    out: np.ndarray = np.where(valid[r, c] & (busy[r, c] == 0), np.exp(-rate * h), 0.0)
    return out


def variant(features: Callable[..., FloatArray]) -> Forecaster:
    def run(grid, params: ForecastParams) -> Prediction:  # type: ignore[no-untyped-def]
        idle_model._job_features = features  # type: ignore[assignment]
        try:
            return idle_model.pooled_logistic(grid, params)
        finally:
            idle_model._job_features = BASE  # type: ignore[assignment]

    return run


def ensemble_bound(conf: np.ndarray, rule: np.ndarray, labels: np.ndarray) -> tuple[float, str]:
    best, how = 0.0, "none"
    cuts = np.round(np.arange(0.0, 1.0001, 0.02), 2)
    for c1 in cuts:
        for c2 in cuts:
            pick = (rule & (conf >= c1)) | (conf >= c2)
            n, tp = int(pick.sum()), int((pick & labels).sum())
            if n and tp >= 0.9 * n and tp / labels.sum() > best:
                best, how = tp / labels.sum(), f"c1={c1:.2f} c2={c2:.2f} P={tp / n:.3f}"
    return float(best), how


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variants", default="base,rule")
    parser.add_argument(
        "--raw",
        action="store_true",
        help="the logistic model's own probabilities, no recalibration",
    )
    args = parser.parse_args()
    params = ForecastParams(calibration_bins=0) if args.raw else ForecastParams()
    history = read_trace(TRACE)  # type: ignore[arg-type]
    jobs = np.array(sorted(history["job"].unique()))
    methods: dict[str, Forecaster] = {"decayed-p95": decayed_p95}
    methods |= {v: variant(VARIANTS[v]) for v in args.variants.split(",")}
    got: dict[str, dict[str, list[np.ndarray]]] = {
        m: {"idle": [], "conf": []} for m in [*methods, ORACLE]
    }
    labels: list[np.ndarray] = []
    for seed in args.seeds:
        for part in np.array_split(np.random.default_rng(seed).permutation(jobs), 3):
            sub = history[history["job"].isin(list(part))]
            ts = sub["timestamp"]
            grid = build_grid(sub, float(ts.max()), float(ts.max() - ts.min()) + 1.0)
            found = origins(grid, params, WARMUP_SECONDS)
            labels.append(found.idle)
            for name, method in methods.items():
                a = answers(grid, method, params, found, lambda: 0.0)
                got[name]["idle"].append(a.idle)
                got[name]["conf"].append(a.confidence)
            cheat = pod_rate_oracle(grid, found, params)
            got[ORACLE]["idle"].append(cheat >= params.min_confidence)
            got[ORACLE]["conf"].append(cheat)
    lab = np.concatenate(labels)
    hours = params.horizon_seconds / 3600.0
    for name, g in got.items():
        idle, conf = np.concatenate(g["idle"]), np.concatenate(g["conf"])
        tp, pred = int((idle & lab).sum()), int(idle.sum())
        print(
            f"{name:<17} P {tp / max(pred, 1):.3f} R {tp / lab.sum():.3f} "
            f"idle GPU-h {tp * hours:.1f} R@P.90 hindsight {hindsight_recall(conf, lab, 0.9):.3f} "
            f"P@R.62 hindsight {hindsight_precision(conf, lab, 0.62):.3f} "
            f"ECE {calibrate(conf, lab).ece:.3f}"
        )
    rule = np.concatenate(got["decayed-p95"]["idle"])
    print("ensemble (decayed-p95 and P >= c1) or P >= c2, hindsight bound at P >= 0.90:")
    for name in args.variants.split(","):
        recall, how = ensemble_bound(np.concatenate(got[name]["conf"]), rule, lab)
        print(f"  {name:<17} recall {recall:.3f} ({how})")


if __name__ == "__main__":
    main()
