"""The reclaimer Deployment gives the controller what its self-reporting needs.

Probes, matching what the endpoints mean (reclaimer.runtime.liveness):

`/healthz` fails only once the loop has finished no cycle for `--interval + 2 x --cycle-timeout`;
`/readyz` until the first completed cycle. So the livenessProbe must ask `/healthz` (asking
`/readyz` would restart a controller whose Prometheus is down, which no restart cures), the
flags it runs with must give a bound above the longest first cycle measured
(docs/reclaimer.md#memory-and-scale: 77 s at 20,000 GPU pods), and the probe must act on a stuck
loop within one more bound.

Its own Pod (POD_NAME, POD_NAMESPACE, POD_UID from the downward API): a refused policy edit is a
Warning Event on it, which `kubectl describe pod` finds by uid.
"""

from __future__ import annotations

from typing import Any

import pytest
from manifests import DEPLOY, OVERLAYS, render

from reclaimer.cli import build_parser
from reclaimer.runtime.liveness import liveness_bound
from reclaimer.runtime.wiring import own_pod
from reclaimer.units import parse_duration

LONGEST_FIRST_CYCLE_S = 77.0


def reclaimer_container(overlay: str) -> dict[str, Any]:
    (dep,) = [
        o
        for o in render(DEPLOY / "overlays" / overlay)
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "gpu-reclaimer"
    ]
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    return dict(c)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_liveness_probe_asks_healthz_within_the_loops_bound(overlay: str) -> None:
    c = reclaimer_container(overlay)
    args = build_parser(c["args"]).parse_args(c["args"])
    bound = liveness_bound(parse_duration(args.interval), parse_duration(args.cycle_timeout))
    assert bound > 2 * LONGEST_FIRST_CYCLE_S
    live, ready = c["livenessProbe"], c["readinessProbe"]
    assert live["httpGet"]["path"] == "/healthz" and ready["httpGet"]["path"] == "/readyz"
    assert live["httpGet"]["port"] == ready["httpGet"]["port"] == "metrics"
    assert live["periodSeconds"] * live["failureThreshold"] <= bound


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_controller_knows_its_own_pod(overlay: str) -> None:
    env = {
        e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"]
        for e in reclaimer_container(overlay)["env"]
    }
    want = {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    assert env == {**want, "POD_UID": "metadata.uid"}
    assert own_pod(dict.fromkeys(env, "x")) is not None
