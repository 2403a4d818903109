"""rules/: `promtool check rules` and `promtool test rules` on every test file, plus coverage.

promtool does the real work (evaluating the rules on the series each test file lists); these tests
fail whenever promtool exits non-zero, and check that every alert has a case where it fires and a
case where it stays silent, that every recorded series is asserted, and that the names the
reclaimer reads (`gpu_contract.RECORDED_*`) are the ones recorded.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from promserver import PROMTOOL, require_prometheus
from repo_paths import REPO

import gpu_contract as gc

RULES = REPO / "rules" / "gpu-reclaim.rules.yml"
TEST_FILES = sorted((REPO / "rules" / "tests").glob("*.test.yml"))

pytestmark = pytest.mark.prometheus


def promtool(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    require_prometheus()
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [r for g in doc["groups"] for r in g["rules"]]


def unit_tests() -> list[dict[str, Any]]:
    return [t for f in TEST_FILES for t in yaml.safe_load(f.read_text("utf-8"))["tests"]]


def test_promtool_check_rules_passes() -> None:
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules())} rules found" in result.stdout


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: p.name)
def test_promtool_unit_tests_pass(path: Path) -> None:
    result = promtool("test", "rules", path.name, cwd=path.parent)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_wrong_expectation_makes_promtool_fail(tmp_path: Path) -> None:
    """The runner above would notice a failing rule test: promtool exits non-zero."""
    broken = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": 'DCGM_FI_DEV_GPU_UTIL{gpu="0"}', "values": "90x20"}],
                "alert_rule_test": [
                    {
                        "eval_time": "16m",
                        "alertname": "GPUUtilizationLow",
                        "exp_alerts": [{"exp_labels": {"severity": "info"}}],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "broken.test.yml"
    path.write_text(yaml.safe_dump(broken), encoding="utf-8")
    result = promtool("test", "rules", str(path))
    assert result.returncode != 0
    assert "FAILED" in result.stdout + result.stderr


def test_seed_alert_keeps_its_threshold_over_every_gpu_mig_ones_included() -> None:
    """The seed's `avg(DCGM_FI_DEV_GPU_UTIL) < 30` for 15m, over the per-GPU utilization that
    also covers MIG-enabled GPUs (which have no DCGM_FI_DEV_GPU_UTIL)."""
    seed = next(r for r in rules() if r.get("alert") == "GPUUtilizationLow")
    assert seed["expr"].strip() == "avg(gpu:utilization_percent:avg5m) < 30"
    per_gpu = next(r for r in rules() if r.get("record") == "gpu:utilization_percent:avg5m")
    assert "DCGM_FI_DEV_GPU_UTIL" in per_gpu["expr"]
    assert 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID=""}' in per_gpu["expr"]
    assert seed["for"] == "15m"
    assert seed["labels"]["severity"] == "info"


ALERTS = [r for r in rules() if "alert" in r]


@pytest.mark.parametrize("rule", ALERTS, ids=lambda r: r["alert"])
def test_alert_is_tested_firing_and_silent(rule: dict[str, Any]) -> None:
    cases = [
        case
        for t in unit_tests()
        for case in t.get("alert_rule_test", [])
        if case["alertname"] == rule["alert"]
    ]
    assert any(case.get("exp_alerts") for case in cases), "no case where it fires"
    assert any(not case.get("exp_alerts") for case in cases), "no case where it stays silent"


@pytest.mark.parametrize("rule", ALERTS, ids=lambda r: r["alert"])
def test_alert_tells_operators_what_to_do(rule: dict[str, Any]) -> None:
    assert rule["labels"]["severity"] in {"info", "warning", "critical"}
    assert {"summary", "description", "runbook"} <= set(rule["annotations"])


RECORDS = sorted({r["record"] for r in rules() if "record" in r})


@pytest.mark.parametrize("name", RECORDS)
def test_recorded_series_is_asserted(name: str) -> None:
    asserted = [
        case
        for t in unit_tests()
        for case in t.get("promql_expr_test", [])
        if re.match(rf"{re.escape(name)}(\{{|$)", case["expr"])
    ]
    assert asserted, f"no promql_expr_test evaluates {name}"


def test_reclaimer_reads_recorded_names() -> None:
    assert gc.RECORDED_POD_UTILIZATION_5M in RECORDS
    assert gc.RECORDED_POD_ALLOCATED in RECORDS


def test_rules_use_only_contract_metrics() -> None:
    used = {
        name
        for r in rules()
        for name in re.findall(r"(?<![\w:])((?:DCGM_FI|gpu)_\w+)(?![\w:])", r["expr"])
    }
    assert used, "no contract metric found: the pattern is wrong"
    unknown = used - set(gc.BY_NAME)
    assert not unknown, f"not in gpu_contract: {sorted(unknown)}"
