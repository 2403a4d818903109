"""Pod-split cross-validation of every idle forecaster on a utilization trace (not a test).

    .venv/bin/python bench/forecast_cv.py --utilization FILE [--folds 3] [--seeds 0 1 2]
        [--horizon 900] [--threshold 0.05] [--oracle] [--json]

The project checks the forecaster on further pods of the same trace that it keeps aside, so a
number measured on the pods the method was tuned on says little. This script splits the pods
at random into `--folds` folds (once per seed) and runs `forecast-eval`'s exact protocol
(`reclaimer.forecast.backtest`) on each fold's pods alone, as if that fold were the held-out file:
the walk-forward models learn only from that fold's earlier windows and the fleet features see only
its pods. Nothing is fitted on the other folds, because no method ships parameters; a method that
did would have to be fitted on the other folds here.

For every method it prints precision and recall per fold, pooled over all folds and seeds
(sum of true positives / sum of predicted idle, / sum of idle windows), the worst fold, and
whether it meets the issue's target (precision >= 0.90 with recall >= 0.60) pooled and in every
fold. `recall@P.90 (hindsight)` is the recall at the best confidence cut that keeps pooled
precision >= 0.90, picked after seeing the answers: an upper bound on what re-tuning
`min_confidence` could give, not a result; `P@R.60 (hindsight)` is, the same way, the best
precision of a cut that keeps recall >= 0.60 (for the rule baselines, whose confidence is 0 or
1, both are their own operating point or 0).

`--oracle` adds `oracle-fleet-future`, which cheats: the pooled-logistic features plus the fleet's
busy share over the window ahead, read from the future of the fold's own pods (leaving out the pod
itself is not needed for a bound: with about 35 pods one pod moves the share by 3 %). It bounds
what any forecaster built on the fleet's load could reach if it knew that load exactly.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reclaimer.commands.forecast_eval import read_trace
from reclaimer.forecast.backtest import WARMUP_SECONDS, answers, origins
from reclaimer.forecast.baselines import BASELINES
from reclaimer.forecast.features import Grid, build_grid, busy_flags, fleet_fraction, samples_for
from reclaimer.forecast.forecaster import DEFAULT_METHOD, FORECASTERS, ForecastParams
from reclaimer.forecast.idle_model import _assemble, _training_columns, eligible
from reclaimer.forecast.logistic import fit_logistic
from reclaimer.forecast.params import Forecaster, Prediction

TARGET_PRECISION = 0.90
TARGET_RECALL = 0.60
ORACLE = "oracle-fleet-future"


@dataclass(frozen=True)
class FoldResult:
    seed: int
    fold: int
    pods: int
    windows: int
    idle_windows: int
    predicted: dict[str, int]
    true_positives: dict[str, int]
    confidence: dict[str, np.ndarray]
    labels: np.ndarray


def future_fleet(full: Grid, params: ForecastParams) -> np.ndarray:
    """Per column of `full`: the fleet's busy share over the next horizon (NaN past the end)."""
    busy, valid = busy_flags(full.values, params.threshold)
    fleet = fleet_fraction(busy, valid)
    h = samples_for(params.horizon_seconds, full.step)
    cum = np.concatenate(([0.0], np.cumsum(fleet)))
    out = np.full(full.columns, np.nan)
    if full.columns > h:
        i = np.arange(full.columns - h)
        out[: full.columns - h] = (cum[i + 1 + h] - cum[i + 1]) / h
    return out


def oracle_forecaster(full: Grid) -> Forecaster:
    """Walk-forward pooled logistic that also reads the fleet's future load (a bound, a cheat)."""

    def oracle(grid: Grid, params: ForecastParams) -> Prediction:
        ok, _ = eligible(grid, params)
        zero = np.zeros(len(grid.jobs))
        cols = _training_columns(grid, params)
        if grid.columns == 0 or not ok.any() or cols.size == 0:
            return Prediction(ORACLE, zero, np.zeros_like(ok))
        x, y = _assemble(grid, params, cols)
        offset = round((grid.start - full.start) / grid.step)
        fut = future_fleet(full, params)[offset + np.append(cols, grid.columns - 1)]
        extra = np.broadcast_to(np.log(fut + 0.002)[None, :, None], (*x.shape[:2], 1))
        x = np.concatenate((x, extra), axis=2)
        train_x, train_y = x[:, :-1, :].reshape(-1, x.shape[2]), y[:, :-1].reshape(-1)
        keep = ~np.isnan(train_y) & ~np.isnan(train_x).any(axis=1)
        if keep.sum() < params.min_training_windows or len(set(train_y[keep])) < 2:
            return Prediction(ORACLE, zero, np.zeros_like(ok))
        model = fit_logistic(train_x[keep], train_y[keep], ridge=params.ridge)
        now_x = np.nan_to_num(x[:, -1, :])
        confidence = np.where(ok, model.probability(now_x), 0.0)
        return Prediction(ORACLE, confidence, ok & (confidence >= params.min_confidence))

    return oracle


def run_fold(
    history: pd.DataFrame, pods: list[str], params: ForecastParams, with_oracle: bool
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray, int]:
    """(idle answers, confidences, labels, pods) of every method on `pods` alone."""
    part = history[history["job"].isin(pods)]
    ts = part["timestamp"]
    grid = build_grid(part, float(ts.max()), float(ts.max() - ts.min()) + 1.0)
    methods: dict[str, Forecaster] = {**FORECASTERS, **BASELINES}
    if with_oracle:
        methods[ORACLE] = oracle_forecaster(grid)
    found = origins(grid, params, WARMUP_SECONDS)
    idle, confidence = {}, {}
    for name, method in methods.items():
        got = answers(grid, method, params, found, lambda: 0.0)
        idle[name], confidence[name] = got.idle, got.confidence
    return idle, confidence, found.idle, len(grid.jobs)


def cross_validate(
    history: pd.DataFrame, params: ForecastParams, folds: int, seeds: list[int], oracle: bool
) -> list[FoldResult]:
    jobs = np.array(sorted(history["job"].unique()))
    results = []
    for seed in seeds:
        parts = np.array_split(np.random.default_rng(seed).permutation(jobs), folds)
        for k, part in enumerate(parts):
            idle, confidence, labels, pods = run_fold(history, list(part), params, oracle)
            results.append(
                FoldResult(
                    seed=seed,
                    fold=k,
                    pods=pods,
                    windows=int(labels.size),
                    idle_windows=int(labels.sum()),
                    predicted={m: int(a.sum()) for m, a in idle.items()},
                    true_positives={m: int((a & labels).sum()) for m, a in idle.items()},
                    confidence=confidence,
                    labels=labels,
                )
            )
    return results


def _cuts(confidence: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(true positives, predictions, usable) at every cut down the confidence order.

    A cut is usable when it does not split a tie and keeps only positive confidences.
    """
    order = np.argsort(-confidence, kind="stable")
    cut_conf = confidence[order]
    tp = np.cumsum(labels[order])
    n = np.arange(1, labels.size + 1)
    last_of_tie = np.append(cut_conf[1:] != cut_conf[:-1], True)
    return tp, n, last_of_tie & (cut_conf > 0)


def hindsight_recall(confidence: np.ndarray, labels: np.ndarray, precision: float) -> float:
    """Best recall over confidence cuts whose precision is >= `precision` (0 if none)."""
    if not labels.any():
        return 0.0
    tp, n, usable = _cuts(confidence, labels)
    ok = usable & (tp >= precision * n)
    return float(tp[ok].max() / labels.sum()) if ok.any() else 0.0


def hindsight_precision(confidence: np.ndarray, labels: np.ndarray, recall: float) -> float:
    """Best precision over confidence cuts whose recall is >= `recall` (0 if none)."""
    if not labels.any():
        return 0.0
    tp, n, usable = _cuts(confidence, labels)
    ok = usable & (tp >= recall * labels.sum())
    return float((tp[ok] / n[ok]).max()) if ok.any() else 0.0


def summarise(results: list[FoldResult]) -> list[dict[str, object]]:
    rows = []
    for method in results[0].predicted:
        per_fold = []
        for r in results:
            tp, pred = r.true_positives[method], r.predicted[method]
            per_fold.append((tp / pred if pred else 0.0, tp / r.idle_windows))
        tp = sum(r.true_positives[method] for r in results)
        pred = sum(r.predicted[method] for r in results)
        idle = sum(r.idle_windows for r in results)
        p, rc = (tp / pred if pred else 0.0), tp / idle
        conf = np.concatenate([r.confidence[method] for r in results])
        labels = np.concatenate([r.labels for r in results])
        rows.append(
            {
                "method": method,
                "default": method == DEFAULT_METHOD,
                "precision": round(p, 4),
                "recall": round(rc, 4),
                "worst_fold_precision": round(min(f[0] for f in per_fold), 4),
                "worst_fold_recall": round(min(f[1] for f in per_fold), 4),
                "recall_at_p90_hindsight": round(hindsight_recall(conf, labels, 0.9), 4),
                "precision_at_r60_hindsight": round(hindsight_precision(conf, labels, 0.6), 4),
                "meets_target_pooled": p >= TARGET_PRECISION and rc >= TARGET_RECALL,
                "meets_target_every_fold": all(
                    fp >= TARGET_PRECISION and fr >= TARGET_RECALL for fp, fr in per_fold
                ),
                "folds": [{"precision": round(a, 4), "recall": round(b, 4)} for a, b in per_fold],
            }
        )
    return rows


def _folds(row: dict[str, object]) -> list[dict[str, float]]:
    folds = row["folds"]
    assert isinstance(folds, list)
    return folds


def format_table(rows: list[dict[str, object]], results: list[FoldResult]) -> str:
    head = (
        f"{'method':<20} {'P pooled':>8} {'R pooled':>8} {'P worst':>8} {'R worst':>8} "
        f"{'R@P.90 hindsight':>16} {'P@R.60 hindsight':>16}  target"
    )
    lines = [head, "-" * len(head)]
    for row in rows:
        name = str(row["method"]) + (" *" if row["default"] else "")
        verdict = (
            "every fold"
            if row["meets_target_every_fold"]
            else ("pooled" if row["meets_target_pooled"] else "no")
        )
        lines.append(
            f"{name:<20} {row['precision']:>8.3f} {row['recall']:>8.3f} "
            f"{row['worst_fold_precision']:>8.3f} {row['worst_fold_recall']:>8.3f} "
            f"{row['recall_at_p90_hindsight']:>16.3f} "
            f"{row['precision_at_r60_hindsight']:>16.3f}  {verdict}"
        )
    lines.append("")
    lines.append("per fold (seed/fold: pods, windows, idle): precision/recall of each method")
    for i, r in enumerate(results):
        cells = " ".join(
            f"{f['precision']:.2f}/{f['recall']:.2f}" for f in (_folds(row)[i] for row in rows)
        )
        lines.append(
            f"s{r.seed}/f{r.fold}: {r.pods} pods, {r.windows} win, {r.idle_windows} idle: {cells}"
        )
    lines.append("methods in order: " + ", ".join(str(row["method"]) for row in rows))
    return "\n".join(lines)


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utilization", required=True, type=Path)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--horizon", type=float, default=900.0, help="seconds")
    parser.add_argument("--threshold", type=float, default=0.05, help="ratio")
    parser.add_argument("--oracle", action="store_true", help="add the cheating upper bound")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    params = ForecastParams(horizon_seconds=args.horizon, threshold=args.threshold)
    history = read_trace(args.utilization)
    results = cross_validate(history, params, args.folds, args.seeds, args.oracle)
    rows = summarise(results)
    out(json.dumps(rows, indent=2) if args.json else format_table(rows, results))


if __name__ == "__main__":
    main()
