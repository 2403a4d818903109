"""gpu_check's experiment: over what span is `nvmlDeviceGetProcessUtilization`'s smUtil?

nvml.h (NVIDIA/go-nvml gen/nvml/nvml.h, R570 header) says, in full: "Reads recent utilization of
GPU SM (3D/Compute), framebuffer, video encoder, and video decoder for processes running. ... One
utilization sample structure is returned per process running, that had some non-zero utilization
during the last sample period. It includes the CPU timestamp at which the samples were recorded.
... If no valid sample entries are found since the lastSeenTimeStamp, NVML_ERROR_NOT_FOUND is
returned." and "lastSeenTimeStamp represents the CPU timestamp in microseconds at which
utilization samples were last read. Set it to 0 to read utilization based on all the samples
maintained by the driver's internal sample buffer. Set lastSeenTimeStamp to a timeStamp
retrieved from a previous query to read utilization since the previous query."

Three readings fit those words (with the parameter's "Return only samples with timestamp
greater than lastSeenTimeStamp"):
- WINDOW: one row per process, its smUtil the average of the process's samples since
  lastSeenTimeStamp ("read utilization since the previous query").
- PER_PERIOD: one row per process per sample period since lastSeenTimeStamp in which it was busy
  ("return only samples with timestamp greater than lastSeenTimeStamp"): a process busy for
  several periods of the window has several rows.
- LAST_PERIOD: one row per process, its last sample period ("non-zero utilization during the
  last sample period"); lastSeenTimeStamp only decides which rows come back.
The exporter reads WINDOW and PER_PERIOD (`exporter.nvml.process_activity`), the NVML emulator
answers either (`exporter.sim.nvml.sampling.ProcessRows`); LAST_PERIOD cannot give an interval's
average.

The experiment settles it on a real GPU: one process with a known pattern (busy `BUSY_S`, idle
`IDLE_S`, busy again), queried twice with several lastSeenTimeStamp values (now minus each of
`LOOKBACK_S`, and 0): 2 s into the idle stretch (WINDOW: a window reaching back into the busy
stretch returns a row, about the busy share of it; LAST_PERIOD: no row) and 2 s into the second
busy stretch (WINDOW: an 8 s window reads about a quarter of a 1 s one; LAST_PERIOD: the same;
PER_PERIOD: the 8 s window holds a row per busy period, two or more). Each answer keeps every row
of the load's process. `verdict` (pure) classifies what came back; everything is recorded in
gpu_check.json.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import Any

from exporter.nvml.process_activity import MIN_PERIOD_US

BUSY_S, IDLE_S = 6.0, 6.0
LOOKBACK_S = (1.0, 2.0, 4.0, 8.0)
PROBES = (("after_busy", BUSY_S + 2.0), ("after_idle", BUSY_S + IDLE_S + 2.0))
NOT_FOUND = 6  # NVML_ERROR_NOT_FOUND
WINDOW, LAST_PERIOD, UNSETTLED = "window_average", "last_sample_period", "unsettled"
PER_PERIOD = "row_per_sample_period"
EXPORTER_READS = (WINDOW, PER_PERIOD)


def busy_at(t: float) -> bool:
    """The pattern, `t` seconds after it starts: busy, idle, busy, then done."""
    return 0 <= t < BUSY_S or BUSY_S + IDLE_S <= t < 2 * BUSY_S + IDLE_S


def pattern_seconds() -> float:
    return 2 * BUSY_S + IDLE_S


@dataclass(frozen=True)
class Answer:
    probe: str
    lookback_s: float | None  # None: lastSeenTimeStamp 0 (every buffered sample)
    last_seen_us: int
    outcome: str  # "rows", "not_found", or the error
    sm_util: int | None  # the load process's newest row, None when it has none
    time_stamp_us: int | None
    rows: int  # rows for any process
    pid_matched: bool = True  # False: the rows are the busiest row's PID's, not our PID's
    pid_rows: tuple[tuple[int, int], ...] = ()  # every (timeStamp, smUtil) of the load's PID


def query(lib: Any, handle: Any, pid: int, probe: str, now: float) -> list[Answer]:
    """One probe: the call with each lastSeenTimeStamp, back to back."""
    out = []
    for lookback in (*LOOKBACK_S, None):
        last_seen = 0 if lookback is None else int((now - lookback) * 1e6)
        try:
            rows = list(lib.nvmlDeviceGetProcessUtilization(handle, last_seen))
        except Exception as exc:  # NVMLError_NotFound and kin
            code = getattr(exc, "value", None)
            outcome = "not_found" if code == NOT_FOUND else f"{type(exc).__name__}: {exc}"
            out.append(Answer(probe, lookback, last_seen, outcome, None, None, 0))
            continue
        out.append(_answer(rows, pid, probe, lookback, last_seen))
    return out


def _answer(rows: list[Any], pid: int, probe: str, lookback: float | None, seen: int) -> Answer:
    """One answer's rows for the load: our PID's, or in a container (where our PID is not the
    host PID NVML names) the busiest row's PID's, as gpu_check runs on a box of its own."""
    matched = any(int(r.pid) == pid for r in rows)
    if not matched and rows:
        pid = int(max(rows, key=lambda r: int(r.smUtil)).pid)
    mine = sorted((int(r.timeStamp), int(r.smUtil)) for r in rows if int(r.pid) == pid)
    sm, stamp = (mine[-1][1], mine[-1][0]) if mine else (None, None)
    return Answer(probe, lookback, seen, "rows", sm, stamp, len(rows), matched, tuple(mine))


def run_pattern(
    lib: Any,
    handle: Any,
    pid: int,
    start: float,
    *,
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Answer]:
    """Both probes of a pattern that starts at `start` (Unix seconds), after a first query (its
    answers are not kept: a driver, or the emulator, may start its sample buffer on first use)."""
    query(lib, handle, pid, "warm_up", now())
    answers: list[Answer] = []
    for probe, after in PROBES:
        sleep(max(0.0, start + after - now()))
        answers += query(lib, handle, pid, probe, now())
    return answers


def _sm(answers: list[Answer], probe: str, lookback: float) -> int:
    """The load's smUtil in one answer; no row (or NotFound) reads 0."""
    found = [a for a in answers if a.probe == probe and a.lookback_s == lookback]
    return (found[0].sm_util or 0) if found else 0


def _period_gaps(answers: list[Answer]) -> list[int]:
    """The gaps between the load's rows within one answer that are at least a sample period
    apart (nvml.h's shortest is 1/6 s): rows of several periods."""
    return [
        b[0] - a[0]
        for answer in answers
        for a, b in pairwise(answer.pid_rows)
        if b[0] - a[0] >= MIN_PERIOD_US
    ]


def verdict(answers: list[Answer]) -> tuple[str, str]:
    """Pure: (WINDOW | PER_PERIOD | LAST_PERIOD | UNSETTLED, why), from `run_pattern`'s
    answers."""
    gaps = _period_gaps(answers)
    if gaps:
        counts = ", ".join(
            f"{a.probe} {'all' if a.lookback_s is None else f'{a.lookback_s:g} s'}: "
            f"{len(a.pid_rows)}"
            for a in answers
            if a.pid_rows
        )
        return PER_PERIOD, (
            f"the load has a row per sample period (every {min(gaps) / 1e6:g} s): rows per "
            f"window, {counts}"
        )
    level = _sm(answers, "after_idle", 1.0)
    if level < 20:
        return UNSETTLED, f"the load read {level}% 1 s into a busy stretch: not busy enough"
    long_busy = _sm(answers, "after_idle", 8.0)
    idle_reach = max(_sm(answers, "after_busy", 4.0), _sm(answers, "after_busy", 8.0))
    idle_tail = _sm(answers, "after_busy", 1.0)
    numbers = (
        f"busy 1 s window {level}%, 8 s window (2 s busy) {long_busy}%; idle: 1 s window "
        f"{idle_tail}%, 4-8 s windows reaching into the busy stretch {idle_reach}%"
    )
    if long_busy <= 0.6 * level and idle_reach > 0 and idle_tail <= 0.2 * level:
        return WINDOW, "smUtil averages since lastSeenTimeStamp: " + numbers
    if long_busy >= 0.8 * level and idle_reach <= 0.2 * level:
        return LAST_PERIOD, "smUtil is the last sample period, whatever the window: " + numbers
    return UNSETTLED, "neither reading fits: " + numbers


def record(answers: list[Answer], where: str) -> dict[str, Any]:
    kind, why = verdict(answers)
    return {
        "where": where,
        "pattern": {"busy_s": BUSY_S, "idle_s": IDLE_S, "then": "busy again"},
        "probes": {name: after for name, after in PROBES},
        "answers": [asdict(a) for a in answers],
        "verdict": kind,
        "why": why,
        "exporter_reads": list(EXPORTER_READS),
    }
