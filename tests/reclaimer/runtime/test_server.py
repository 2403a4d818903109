"""/metrics, /plan, /healthz, /readyz served by aiohttp, read back over loopback HTTP."""

from __future__ import annotations

import json
import subprocess

from aiohttp.test_utils import TestClient, TestServer
from fakeprom import fake_prometheus
from prometheus_client.parser import text_string_to_metric_families
from promserver import PROMTOOL, require_prometheus

import gpu_contract as gc
from reclaimer.runtime.server import make_app
from reclaimer.runtime.telemetry import ReclaimerMetrics
from runtime.test_controller import RecordingActuator, make, prom_route


def exposed_names(text: str) -> tuple[set[str], set[str]]:
    """(family names as a scraper sees them, sample names)."""
    families, samples = set(), set()
    for family in text_string_to_metric_families(text):
        suffix = "_total" if family.type == "counter" else ""
        families.add(family.name + suffix)
        samples |= {s.name for s in family.samples}
    return families, samples


async def test_endpoints_before_and_after_the_first_cycle() -> None:
    act = RecordingActuator()
    async with fake_prometheus(route=prom_route()) as fake:
        c, metrics, prom = make(fake.url, act)
        client = TestClient(TestServer(make_app(c, metrics, dry_run=True), host="127.0.0.1"))
        async with prom, client:
            assert (await client.get("/healthz")).status == 200
            assert (await client.get("/readyz")).status == 503
            empty = await (await client.get("/plan")).json()
            assert empty["plan"] is None and empty["dry_run"] is True
            await c.cycle()
            assert (await client.get("/readyz")).status == 200
            plan = await (await client.get("/plan")).json()
            metrics_text = await (await client.get("/metrics")).text()
    assert plan["cycle"]["result"] == "success"
    assert plan["quality"]["complete"] is True
    (action,) = plan["plan"]["actions"]
    assert action["kind"] == "preempt" and action["target"] == "team-b/idle-b"
    assert action["reason"] == "IdleJobForStarvedQueue"
    assert action["evidence"]["for_pending"] == "team-a/wait"
    assert plan["fleet"]["allocated_gpus"] == 1 and plan["fleet"]["idle_gpus"] == 1
    json.dumps(plan, allow_nan=False)
    contract = {m.name for m in gc.RECLAIMER_METRICS}
    families, samples = exposed_names(metrics_text)
    assert families == contract  # exactly the contract's names, nothing else
    assert samples <= contract


async def test_plan_lists_withheld_actions_as_skips() -> None:
    act = RecordingActuator()
    async with fake_prometheus(route=prom_route(newest=1.0)) as fake:
        c, metrics, prom = make(fake.url, act)
        client = TestClient(TestServer(make_app(c, metrics, dry_run=True), host="127.0.0.1"))
        async with prom, client:
            await c.cycle()
            plan = await (await client.get("/plan")).json()
    assert plan["cycle"]["result"] == "skipped"
    assert plan["plan"]["actions"] == []
    reasons = {s["target"]: s["reason"] for s in plan["plan"]["skipped"]}
    assert reasons["team-b/idle-b"] == "StaleData"


def test_exposition_passes_promtool_check_metrics() -> None:
    require_prometheus()
    promtool = PROMTOOL
    m = ReclaimerMetrics()
    m.planned.labels(kind="preempt", reason="IdleJobForStarvedQueue").inc()
    out = subprocess.run(
        [promtool, "check", "metrics"],
        input=m.exposition(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


async def test_status_page_before_and_after_the_first_cycle() -> None:
    async with fake_prometheus(route=prom_route()) as fake:
        c, metrics, prom = make(fake.url, RecordingActuator())
        client = TestClient(TestServer(make_app(c, metrics, dry_run=True), host="127.0.0.1"))
        async with prom, client:
            before = await client.get("/")
            before_text = await before.text()
            await c.cycle()
            after = await client.get("/")
            after_text = await after.text()
            again = await (await client.get("/")).text()
    assert before.status == after.status == 200
    assert before.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "No plan yet" in before_text
    csp = after.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'none'" in csp
    assert after.headers["X-Frame-Options"] == "DENY"
    assert "No plan yet" not in after_text and "team-b/idle-b" in after_text
    assert again == after_text  # rendered once per cycle report
