"""The exporter against dcgm-exporter's default counters (a copy of its CSV in tests/fixtures):
which fields it serves, under which names, types, HELP texts (units included) and labels, which it
leaves out and why, and which series carry each family on a MIG-enabled GPU."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from exporter_fakes import sim_node
from prometheus_client.parser import text_string_to_metric_families
from repo_paths import REPO

import gpu_contract as gc
from exporter.counters import parse_counters
from exporter.cycle import AttributionSources, CollectLoop
from exporter.node.podresources import AllocationsFile
from exporter.node.pods import PodsFile

CSV = REPO / "tests" / "fixtures" / "dcgm-exporter" / "default-counters.csv"
UNIT = re.compile(r"\(in (\w+)\)")


def default_rows() -> list[tuple[str, str, str]]:
    lines = [ln for ln in CSV.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    rows = [[c.strip() for c in r] for r in csv.reader(lines, skipinitialspace=True)]
    return [(r[0], r[1], r[2]) for r in rows]


def test_every_default_field_is_served_as_dcgm_exporter_serves_it_or_left_out_with_a_reason() -> (
    None
):
    rows = default_rows()
    assert len(rows) == 26  # the fixture is the whole default list
    for name, kind, help_ in rows:
        if name in gc.LEFT_OUT:
            assert name not in gc.DCGM_NAMES and len(gc.LEFT_OUT[name]) > 20
            continue
        spec = gc.BY_NAME[name]
        assert (spec.kind, spec.help, spec.source) == (kind, help_, gc.Source.DCGM), name
        assert spec.labels == gc.DEVICE_LABELS
        unit = UNIT.search(help_)
        assert unit is None or unit[1] == spec.unit, name
    assert {r[0] for r in rows} - set(gc.LEFT_OUT) == gc.DCGM_NAMES  # nothing beyond the defaults


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Three cycles of a sim node with a MIG GPU, after an XID on the GPU and on an instance."""
    parts, node, clock = sim_node(tmp_path_factory.mktemp("sim"), seed=5, gpus=2, pods=6)
    assert parts.podresources_file is not None and parts.pods_file is not None
    sources = AttributionSources(
        AllocationsFile(parts.podresources_file), PodsFile(parts.pods_file), parts.proc_root
    )
    loop = CollectLoop(parts.devices, sources, hostname="n1", clock=clock)
    for step in range(3):
        clock.now += 1.0
        if step == 1:
            node.lib.raise_xid(1, 13)
            node.lib.raise_xid(0, 43, gpu_instance_id=7)
        text = loop.collect_once().exposition.body.decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


@pytest.mark.parametrize("row", default_rows(), ids=lambda r: r[0])
def test_a_sim_scrape_serves_each_default_with_its_type_help_and_labels(
    row: tuple[str, str, str], scraped: dict[str, object]
) -> None:
    name, kind, help_ = row
    if name in gc.LEFT_OUT:
        assert name not in scraped
        return
    family = scraped[name]
    assert (family.type, family.documentation) == (kind, help_)  # type: ignore[attr-defined]
    spec = gc.BY_NAME[name]
    gpus, instances = set(), set()
    for sample in family.samples:  # type: ignore[attr-defined]
        labels = sample.labels
        assert set(gc.DEVICE_LABELS) <= set(labels) and labels["Hostname"] == "n1"
        if "GPU_I_ID" in labels:
            assert set(labels) == set(gc.DEVICE_LABELS) | set(gc.MIG_LABELS)
            assert labels["GPU_I_PROFILE"] == "1g.10gb"
            instances.add((labels["gpu"], labels["GPU_I_ID"]))
        else:
            assert set(labels) == set(gc.DEVICE_LABELS)
            gpus.add(labels["gpu"])
    scope = spec.mig_scope
    # GPU 0 is MIG-enabled (7 instances), GPU 1 is whole.
    assert ("0" in gpus) is (scope in (gc.MigScope.GPU, gc.MigScope.BOTH)), name
    assert len(instances) == (7 if scope in (gc.MigScope.INSTANCES, gc.MigScope.BOTH) else 0)
    assert "1" in gpus


def test_a_node_sum_of_framebuffer_counts_each_byte_once(scraped: dict[str, object]) -> None:
    used = scraped["DCGM_FI_DEV_FB_USED"]
    by_gpu: dict[str, list[dict[str, str]]] = {}
    for s in used.samples:  # type: ignore[attr-defined]
        by_gpu.setdefault(s.labels["gpu"], []).append(s.labels)
    assert all("GPU_I_ID" in labels for labels in by_gpu["0"]) and len(by_gpu["0"]) == 7
    assert by_gpu["1"] == [next(s.labels for s in used.samples if s.labels["gpu"] == "1")]  # type: ignore[attr-defined]


def test_xid_events_are_counted_by_device_and_value(scraped: dict[str, object]) -> None:
    events = scraped["gpu_xid_errors"]  # the parser drops `_total`
    got = {
        (s.labels["gpu"], s.labels.get("GPU_I_ID"), s.labels["xid"], s.value)
        for s in events.samples  # type: ignore[attr-defined]
    }
    assert got == {("1", None, "13", 1.0), ("0", "7", "43", 1.0)}
    last = scraped["DCGM_FI_DEV_XID_ERRORS"]
    values = {(s.labels["gpu"], s.labels.get("GPU_I_ID")): s.value for s in last.samples}  # type: ignore[attr-defined]
    assert values[("1", None)] == 13 and values[("0", "7")] == 43 and values[("0", None)] == 0


def test_the_default_csv_is_a_valid_collectors_file_choosing_every_family() -> None:
    choice = parse_counters(CSV.read_text())
    assert choice.families == gc.DCGM_NAMES
    assert {s.split(":")[0] for s in choice.skipped} == set(gc.LEFT_OUT)


def test_fixture_is_dcgm_exporters_file() -> None:
    text = CSV.read_text()
    assert text.startswith("# Format\n# If line starts with a '#' it is considered a comment")
    assert "DCGM_FI_PROF_PCIE_TX_BYTES,      gauge" in text
    assert (Path(CSV).parent / "README.md").read_text().count("4.5.3-4.8.2") == 1
