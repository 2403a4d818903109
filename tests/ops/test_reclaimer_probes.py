"""The reclaimer Deployment's probes match what its endpoints mean (reclaimer.runtime.liveness).

`/healthz` fails only once the loop has finished no cycle for `--interval + 2 x --cycle-timeout`;
`/readyz` until the first completed cycle. So the livenessProbe must ask `/healthz` (asking
`/readyz` would restart a controller whose Prometheus is down, which no restart cures), the
flags it runs with must give a bound above the longest first cycle measured
(docs/reclaimer.md#memory-and-scale: 77 s at 20,000 GPU pods), and the probe must act on a stuck
loop within one more bound.
"""

from __future__ import annotations

import pytest
from manifests import DEPLOY, OVERLAYS, render

from reclaimer.cli import build_parser
from reclaimer.runtime.liveness import liveness_bound
from reclaimer.units import parse_duration

LONGEST_FIRST_CYCLE_S = 77.0


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_liveness_probe_asks_healthz_within_the_loops_bound(overlay: str) -> None:
    (dep,) = [
        o
        for o in render(DEPLOY / "overlays" / overlay)
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "gpu-reclaimer"
    ]
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    args = build_parser(c["args"]).parse_args(c["args"])
    bound = liveness_bound(parse_duration(args.interval), parse_duration(args.cycle_timeout))
    assert bound > 2 * LONGEST_FIRST_CYCLE_S
    live, ready = c["livenessProbe"], c["readinessProbe"]
    assert live["httpGet"]["path"] == "/healthz" and ready["httpGet"]["path"] == "/readyz"
    assert live["httpGet"]["port"] == ready["httpGet"]["port"] == "metrics"
    assert live["periodSeconds"] * live["failureThreshold"] <= bound
