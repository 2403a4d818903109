"""The controller's HTTP face: `/` (status page), `/metrics`, `/plan`, `/healthz`, `/readyz`.

Handlers only read what the last cycle left behind (`Controller.last`, the metrics registry);
they never query Prometheus or Kubernetes, so a scrape can neither slow a cycle nor be slowed by
one. `/plan` is the operator's view: the cycle's result and data quality, the fleet summary, every
planned action with its reason and evidence, every skipped candidate with its reason, and what the
actuator answered. `/` is the same for people: an HTML page (`reclaimer.report.status.page`),
rendered once per cycle report and served with its strict security headers. `/readyz` turns
200 after the first cycle that completed (success or skipped). `/healthz` answers 503 once the
loop has not finished a cycle within its bound (`reclaimer.runtime.liveness`), 200 before.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from reclaimer.report.cycle import CycleReport
from reclaimer.report.plan_table import forecast_to_dict, plan_to_dict
from reclaimer.report.status.page import render_page, security_headers
from reclaimer.runtime.controller import Controller
from reclaimer.runtime.liveness import Liveness
from reclaimer.runtime.telemetry import ReclaimerMetrics


def to_jsonable(obj: Any) -> Any:
    """Frozen dataclasses, enums and mappings -> plain JSON values (field names kept)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def report_dict(report: CycleReport | None, dry_run: bool) -> dict[str, Any]:
    """What `/plan` and `run --once --json` print."""
    if report is None:
        return {"cycle": None, "dry_run": dry_run, "plan": None}
    plan = report.plan
    return {
        "cycle": {
            "result": str(report.result),
            "at": report.at,
            "duration_seconds": report.duration,
            "message": report.message,
            "acted": report.acted,
            "prometheus_requests": report.requests,
        },
        "dry_run": dry_run,
        "quality": to_jsonable(report.quality),
        "fleet": report.summary.as_dict() if report.summary else None,
        "plan": plan_to_dict(plan) if plan is not None else None,
        "forecasts": {k: forecast_to_dict(v) for k, v in sorted(report.forecasts.items())},
        "outcomes": to_jsonable(report.outcomes),
    }


log = logging.getLogger("gpu_reclaimer.server")

PROBES = ("/healthz", "/readyz")
"""Open without credentials under a web config, so kubelet probes work (they say nothing)."""


def make_app(
    controller: Controller,
    metrics: ReclaimerMetrics,
    dry_run: bool,
    liveness: Liveness | None = None,
) -> web.Application:
    async def metrics_handler(_: web.Request) -> web.Response:
        body = metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def plan_handler(_: web.Request) -> web.Response:
        text = json.dumps(report_dict(controller.last, dry_run), indent=2, allow_nan=False)
        return web.Response(text=text, content_type="application/json")

    # The page for the report it was rendered from (held, so `is` cannot match a newer one).
    page: list[tuple[CycleReport | None, bytes]] = []

    async def status_page(_: web.Request) -> web.Response:
        report = controller.last
        if not page or page[0][0] is not report:
            page[:] = [(report, render_page(report, dry_run=dry_run).encode("utf-8"))]
        return web.Response(
            body=page[0][1],
            content_type="text/html",
            charset="utf-8",
            headers=security_headers(),
        )

    async def healthz(_: web.Request) -> web.Response:
        stuck = liveness.problem() if liveness is not None else None
        if stuck is not None:
            log.error("/healthz: %s", stuck)
            return web.Response(status=503, text=stuck + "\n")
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        if controller.ready:
            return web.Response(text="ready\n")
        return web.Response(status=503, text="no completed cycle yet\n")

    app = web.Application()
    app.router.add_get("/", status_page)
    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/plan", plan_handler)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app
