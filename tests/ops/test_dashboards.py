"""grafana/: the JSON is what grafana/dashboards.py renders, and every query returns data.

Every expression of every panel and template variable, with the variables substituted as
Grafana would for "All", runs as an instant query on a real Prometheus that scrapes the
exporter's sim backend (pods of deploy/examples) with rules/ loaded and the reclaimer's metrics
backfilled (tests/ops/simfleet.py). Each must parse and return at least one series, with the
labels its legend names and finite values within its unit's range.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from repo_paths import REPO
from simfleet import Fleet, query, sim_fleet

GRAFANA = REPO / "grafana"
BOARDS = sorted(GRAFANA.glob("*.json"))

# What Grafana puts in place of each variable for the test: "All" (allValue .*) and a 1h range.
SUBSTITUTIONS = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range_s": "3600",
    "$__range": "1h",
    "$cluster": ".*",
    "$node": ".*",
    "$namespace": ".*",
}


def substitute(expr: str) -> str:
    for var, value in SUBSTITUTIONS.items():
        expr = expr.replace(var, value)
    assert "$" not in expr, f"unsubstituted variable in {expr}"
    return expr


def label_values_to_promql(definition: str) -> tuple[str, str]:
    """`label_values(selector, label)` -> (`count by (label) (selector)`, label)."""
    m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", definition.strip())
    assert m, f"unsupported variable query {definition}"
    return f"count by ({m[2]}) ({m[1]})", m[2]


def load_generator() -> ModuleType:
    sys.path.insert(0, str(GRAFANA))
    try:
        spec = importlib.util.spec_from_file_location("gpu_dashboards", GRAFANA / "dashboards.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(GRAFANA))


def panel_queries() -> list[Any]:
    out = []
    for path in BOARDS:
        board = json.loads(path.read_text("utf-8"))
        for p in board["panels"]:
            unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
            for t in p.get("targets", []):
                pid = f"{path.stem}/{p['title']}/{t['refId']}"
                out.append(pytest.param(t["expr"], t.get("legendFormat", ""), unit, id=pid))
    return out


# What a value of each unit may be: a query answering out of range reads the wrong series or
# scales wrongly (a percent read as a ratio), whatever Grafana would draw.
UNIT_RANGES = {
    "percent": (0.0, 100.0),
    "percentunit": (0.0, 1.0),
    "celsius": (-40.0, 150.0),
    "watt": (0.0, 2000.0),
    "rotmhz": (0.0, 10000.0),
    "bytes": (0.0, 2.0**50),
    "s": (0.0, 10.0**9),
    "h": (0.0, 10.0**7),
}


def variable_queries() -> list[Any]:
    out = []
    for path in BOARDS:
        board = json.loads(path.read_text("utf-8"))
        for var in board["templating"]["list"]:
            if var["type"] == "query":
                out.append(pytest.param(var["definition"], id=f"{path.stem}/${var['name']}"))
    return out


def test_json_is_what_the_generator_renders() -> None:
    rendered = load_generator().render()
    assert sorted(rendered) == [p.name for p in BOARDS]
    for path in BOARDS:
        assert path.read_text("utf-8") == rendered[path.name], (
            f"{path.name} is stale: run .venv/bin/python grafana/dashboards.py"
        )


@pytest.mark.parametrize("path", BOARDS, ids=lambda p: p.stem)
def test_dashboard_shape(path: Path) -> None:
    board = json.loads(path.read_text("utf-8"))
    names = {v["name"] for v in board["templating"]["list"]}
    assert {"datasource", "cluster", "node", "namespace"} <= names
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for p in board["panels"]:
        for t in p.get("targets", []):
            assert t["datasource"]["uid"] == "${datasource}"


def test_fleet_dashboard_has_the_seed_buckets() -> None:
    board = json.loads((GRAFANA / "gpu-fleet.json").read_text("utf-8"))
    legends = [t["legendFormat"] for p in board["panels"] for t in p.get("targets", [])]
    assert {"0-20%", "20-40%", "40-60%", "60-80%", "80-100%"} <= set(legends)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with sim_fleet(tmp_path_factory.mktemp("fleet")) as f:
        yield f


@pytest.mark.prometheus
@pytest.mark.slow
@pytest.mark.parametrize(("expr", "legend", "unit"), panel_queries())
def test_panel_query_returns_what_the_panel_shows(
    fleet: Fleet, expr: str, legend: str, unit: str | None
) -> None:
    """Data, with every label the legend names, finite values in the panel unit's range."""
    result = query(fleet.prometheus, substitute(expr))
    assert result, f"no data for {substitute(expr)}"
    named = set(re.findall(r"{{\s*(\w+)\s*}}", legend))
    for series in result:
        value = float(series["value"][1])
        fallback = "vector(0)" in expr and not series["metric"] and value == 0.0  # "none yet"
        assert fallback or named <= set(series["metric"]), f"{series['metric']} lacks {named}"
        assert math.isfinite(value), f"{series['metric']}: {value}"
        low, high = UNIT_RANGES.get(unit or "", (-math.inf, math.inf))
        assert low - 1e-9 <= value <= high + 1e-9, f"{series['metric']}: {value} not a {unit}"


@pytest.mark.prometheus
@pytest.mark.slow
@pytest.mark.parametrize("definition", variable_queries())
def test_variable_query_returns_values(fleet: Fleet, definition: str) -> None:
    expr, label = label_values_to_promql(substitute(definition))
    values = {r["metric"].get(label) for r in query(fleet.prometheus, expr)}
    assert values - {None}, f"no values of {label} from {expr}"
