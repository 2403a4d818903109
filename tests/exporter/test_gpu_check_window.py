"""gpu_check's lastSeenTimeStamp experiment (scripts/gpu_check_window.py): its verdict on literal
answers, and on the NVML emulator answering with each reading of nvml.h it has."""

from __future__ import annotations

import sys

import pytest
from repo_paths import REPO

sys.path.insert(0, str(REPO / "scripts"))
from gpu_check_window import (
    LAST_PERIOD,
    LOOKBACK_S,
    PER_PERIOD,
    UNSETTLED,
    WINDOW,
    Answer,
    verdict,
)
from gpu_check_window_run import sim_answers

S = 1_000_000  # µs per second


def answers(
    after_busy: list[int | None], after_idle: list[int | None], rows_8s: int = 1, gap: int = S
) -> list[Answer]:
    """Literal answers: smUtil for lookbacks 1, 2, 4, 8 s (None: NotFound); the 8 s window 2 s
    into the second busy stretch holds `rows_8s` rows of the load, `gap` µs apart."""
    out = []
    for probe, values in (("after_busy", after_busy), ("after_idle", after_idle)):
        for lookback, sm in zip(LOOKBACK_S, values, strict=True):
            outcome = "not_found" if sm is None else "rows"
            n = rows_8s if (probe, lookback) == ("after_idle", 8.0) else 1
            pid_rows = tuple((k * gap, sm) for k in range(n)) if sm is not None else ()
            out.append(Answer(probe, lookback, 0, outcome, sm, None, len(pid_rows), True, pid_rows))
    return out


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        pytest.param(answers([None, None, 48, 72], [97, 96, 50, 25]), WINDOW, id="window-average"),
        pytest.param(
            answers([None, None, None, None], [97, 97, 96, 97]), LAST_PERIOD, id="last-period"
        ),
        pytest.param(
            answers([0, 0, 0, 0], [98, 98, 97, 98]), LAST_PERIOD, id="last-period-zero-rows"
        ),
        pytest.param(answers([None] * 4, [5, 5, 3, 2]), UNSETTLED, id="load-not-busy"),
        pytest.param(answers([40, 40, 40, 40], [97, 90, 70, 70]), UNSETTLED, id="neither"),
        pytest.param(
            answers([None, None, 97, 97], [97, 97, 97, 97], rows_8s=2), PER_PERIOD, id="per-period"
        ),
        pytest.param(
            answers([None, None, 97, 97], [97, 97, 97, 97], rows_8s=12, gap=S // 6),
            PER_PERIOD,
            id="per-period-of-a-sixth-of-a-second",
        ),
        pytest.param(
            answers([None] * 4, [97, 97, 96, 97], rows_8s=2, gap=1_000),
            LAST_PERIOD,
            id="rows-closer-than-a-period-are-not-periods",
        ),
    ],
)
def test_the_window_experiments_verdict(got: list[Answer], expected: str) -> None:
    assert verdict(got)[0] == expected


def test_the_window_experiment_on_the_emulator_finds_the_emulators_reading() -> None:
    """The emulator averages since lastSeenTimeStamp; the experiment must say so, in no time."""
    got = sim_answers()
    kind, why = verdict(got)
    assert kind == WINDOW, why
    by = {(a.probe, a.lookback_s): a for a in got}
    assert by[("after_busy", 1.0)].outcome == "not_found"  # idle in that window
    assert by[("after_idle", 8.0)].sm_util == pytest.approx(90 * 2 / 8, abs=3)
    assert all(len(a.pid_rows) <= 1 for a in got)


def test_the_window_experiment_tells_a_driver_answering_per_sample_period() -> None:
    """Per-period rows: 2 s into a busy stretch the 8 s window holds the load's two busy 1 s
    periods, each at the load's level; the verdict names the emulator's 1 s sample period."""
    got = sim_answers("per_period")
    kind, why = verdict(got)
    assert kind == PER_PERIOD and "every 1 s" in why, why
    by = {(a.probe, a.lookback_s): a for a in got}
    assert [sm for _, sm in by[("after_idle", 8.0)].pid_rows] == [90, 90]
    assert by[("after_busy", 1.0)].outcome == "not_found"  # idle in that window
    # 2 s into the idle stretch: a 4 s window reaches 2 busy periods back, an 8 s one all 6
    assert [len(by[("after_busy", s)].pid_rows) for s in (4.0, 8.0)] == [2, 6]
