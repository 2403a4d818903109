"""How a replayed pod comes back: the kubelet's crash back-off, the Job's backoffLimit, cold starts.

**Where.** An OOM-killed container restarts in its own pod, on the same node and the same device:
the kubelet restarts containers, not pods ("restartPolicy only refers to restarts of the
containers by the kubelet on the same node", Kubernetes docs, Pod Lifecycle, Container restart
policy), so the pod keeps its binding and its device plugin allocation (its replica).

**When** (`CrashLoop`, `crashed`), as the kubelet's source does it (kubernetes/kubernetes
`pkg/kubelet/kuberuntime/kuberuntime_manager.go` `doBackOff`, on client-go
`util/flowcontrol/backoff.go` `Backoff`, with `pkg/kubelet/kubelet.go`'s 10 s initial back-off and
`MaxContainerBackOff` of 300 s): the first crash of a pod's container finds no back-off entry and
is restarted at once, which sets the entry to 10 s; each later crash waits the entry, then doubles
it, capped at 300 s. A crash more than twice the cap (10 minutes) after the container's last
restart (`hasExpired`) finds the entry expired and starts over, as a first crash. So the waits
run 0, 10, 20, 40, 80, 160, 300, 300 s. The docs count only the back-offs ("10s, 20s, 40s, ...,
capped at five minutes"; "Once a container has executed for 10 minutes without any problems, the
kubelet resets the restart backoff timer"); KEP-4603 (kubernetes/enhancements,
`keps/sig-node/4603-tune-crashloopbackoff`) states the source's "0 seconds delay for first
restart". The kubelet's resync can add up to 10 s to each wait (kubernetes#123602): not modelled.

**How many** (`fails`): a Job's pods run with `restartPolicy: OnFailure`, and the Job controller
fails the Job once the restart counts of its running and pending pods add up to `backoffLimit`
(default 6; any restart when it is 0): `pastBackoffLimitOnFailure` in
`pkg/controller/job/job_controller.go`, and Kubernetes docs, Jobs, Pod backoff failure policy.
The count is the pod's: a pod deleted (a suspended job, a culled pod) takes its restarts and the
kubelet's back-off entry with it, and its successor starts from none.

**Cold starts** (`ColdStarts`): every container restart and every start of a job that ran before
(a resume, a culled pod's successor) loads its model again. The delay is drawn from GenTD26's
base-model load latency (`basemodel_update_latency_anon`, `value` in milliseconds, 7,531 loads on
123 pods: the publisher's README calls the base-model load "main component of cold start"), one
load drawn uniformly for each (seed, job, cold start of that job), so every strategy replays the
same job's n-th cold start with the same delay. A job's first start pays none: the trace's run
time already holds it.
Pure except `read_cold_starts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reclaimer.simulate.trace import FloatArray, TraceError, read_csv_frame

INITIAL_BACKOFF = 10.0  # pkg/kubelet/kubelet.go: the container restart back-off starts here
MAX_BACKOFF = 300.0  # MaxContainerBackOff
DEFAULT_BACKOFF_LIMIT = 6  # batch/v1 Job spec.backoffLimit default
COLD_START_COLUMNS = ("timestamp_anon", "value", "container_ip")
_COLD_STREAM = 0xC01D  # keeps the cold-start draws apart from the profile draws of the same seed


@dataclass(frozen=True)
class CrashLoop:
    """One pod's container restarts, as the kubelet and the Job controller count them."""

    restarts: int = 0  # the pod's restartCount
    backoff: float = 0.0  # the kubelet's back-off entry for the container; 0: none yet
    restarted_at: float = 0.0  # when the kubelet last restarted it (the entry's lastUpdate)


def crashed(loop: CrashLoop, at: float) -> tuple[float, CrashLoop]:
    """The container crashed at `at`: how long the kubelet waits before restarting it, and the
    pod's count after that restart (module doc). Pure."""
    if loop.backoff == 0.0 or at - loop.restarted_at > 2 * MAX_BACKOFF:
        wait, backoff = 0.0, INITIAL_BACKOFF
    else:
        wait, backoff = loop.backoff, min(2 * loop.backoff, MAX_BACKOFF)
    return wait, CrashLoop(loop.restarts + 1, backoff, at + wait)


def fails(restarts: int, backoff_limit: int) -> bool:
    """Does a pod at `restarts` container restarts fail its Job? (`pastBackoffLimitOnFailure`)"""
    return restarts > 0 if backoff_limit == 0 else restarts >= backoff_limit


@dataclass(frozen=True)
class ColdStarts:
    """The loads cold starts are drawn from (seconds); none: no cold start at all."""

    seconds: tuple[float, ...] = ()

    def draw(self, seed: int, job: int, nth: int) -> float:
        """The delay of `job`'s `nth` cold start in the replay of `seed` (module doc). Pure."""
        if not self.seconds:
            return 0.0
        rng = np.random.default_rng((seed, _COLD_STREAM, job, nth))
        return self.seconds[int(rng.integers(len(self.seconds)))]


def parse_cold_starts(frame: pd.DataFrame) -> ColdStarts:
    """GenTD26's `basemodel_update_latency` rows as loads in seconds; raises TraceError."""
    what = "cold starts"
    missing = [c for c in COLD_START_COLUMNS if c not in frame.columns]
    if missing:
        raise TraceError(f"{what}: missing column(s) {', '.join(missing)}")
    millis = pd.to_numeric(frame["value"], errors="coerce")
    if frame.empty or millis.isna().any() or (millis < 0).any():
        raise TraceError(f"{what}: value must hold load times in milliseconds, each >= 0")
    seconds: FloatArray = millis.to_numpy(dtype=np.float64) / 1000.0
    return ColdStarts(tuple(float(s) for s in seconds))


def read_cold_starts(path: Path) -> ColdStarts:
    return parse_cold_starts(read_csv_frame(path, "cold starts"))
