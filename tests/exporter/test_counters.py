"""`--collectors FILE` (dcgm-exporter's counters CSV): parsing, exit 2, and what is served."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_render import snapshot

import gpu_contract as gc
from exporter.cli import main
from exporter.counters import CountersError, parse_counters
from exporter.render import exposition_text

GOOD = """# Format
# DCGM FIELD, Prometheus metric type, help message

DCGM_FI_DEV_GPU_UTIL,      gauge, GPU utilization (in %).
  DCGM_FI_DEV_FB_USED , gauge , Framebuffer memory used (in MiB).
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, "Total energy, since boot (in mJ)."
DCGM_FI_DEV_VGPU_LICENSE_STATUS, gauge, vGPU License status
DCGM_FI_DRIVER_VERSION,        label, Driver Version
"""


def test_a_counters_file_chooses_families_and_skips_the_defaults_left_out() -> None:
    choice = parse_counters(GOOD)
    assert choice.families == {
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    }
    assert [s.split(":")[0] for s in choice.skipped] == [
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
        "DCGM_FI_DRIVER_VERSION",
    ]
    assert parse_counters("# nothing\n\n").families == frozenset()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        pytest.param(
            "DCGM_FI_PROF_SM_ACTIVE, gauge, x",
            "line 1: DCGM_FI_PROF_SM_ACTIVE is not a DCGM field gpu-exporter serves",
            id="unknown-field",
        ),
        pytest.param("DCGM_FI_DEV_GPU_UTIL, gauge", "line 1: expected `DCGM field", id="2-fields"),
        pytest.param("DCGM_FI_DEV_GPU_UTIL, gauge, a, b", "got 4", id="4-fields"),
        pytest.param(
            "DCGM_FI_DEV_GPU_UTIL, meter, x", "unknown Prometheus type 'meter'", id="bad-type"
        ),
        pytest.param(
            "DCGM_FI_DEV_GPU_UTIL, counter, x",
            "DCGM_FI_DEV_GPU_UTIL is a gauge here, not a counter",
            id="wrong-type",
        ),
    ],
)
def test_a_bad_line_is_an_error_naming_it(line: str, message: str) -> None:
    with pytest.raises(CountersError) as err:
        parse_counters(line + "\n")
    assert any(message in e for e in err.value.errors), err.value.errors


def test_every_bad_line_is_reported_at_once() -> None:
    with pytest.raises(CountersError) as err:
        parse_counters("A, gauge, x\n# ok\nDCGM_FI_DEV_GPU_UTIL, gauge, x\nB\n")
    assert [e.split(":")[0] for e in err.value.errors] == ["line 1", "line 4"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("DCGM_FI_NOPE, gauge, x\n", "DCGM_FI_NOPE is not a DCGM field", id="unknown"),
        pytest.param("DCGM_FI_DEV_GPU_UTIL\n", "expected `DCGM field, type, help`", id="malformed"),
        pytest.param(None, "cannot read it", id="missing-file"),
        pytest.param(b"\xff\xfe\x00", "cannot read it", id="not-text"),
    ],
)
def test_the_cli_exits_2_on_a_bad_collectors_file(
    content: str | bytes | None, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "counters.csv"
    if isinstance(content, str):
        path.write_text(content)
    elif content is not None:
        path.write_bytes(content)
    assert main(["--backend", "sim", "--collectors", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"--collectors={path}" in err and message in err


def test_only_the_chosen_dcgm_families_are_rendered_and_per_pod_families_stay() -> None:
    text = exposition_text(snapshot(), frozenset({"DCGM_FI_DEV_FB_USED"}))
    names = {f.name for f in text_string_to_metric_families(text)}
    dcgm = {n for n in names if n.startswith("DCGM_FI_")}
    assert dcgm == {"DCGM_FI_DEV_FB_USED"}
    assert {m.name for m in gc.POD_METRICS} <= names
    assert "DCGM_FI_DEV_GPU_UTIL" in {
        f.name for f in text_string_to_metric_families(exposition_text(snapshot()))
    }
