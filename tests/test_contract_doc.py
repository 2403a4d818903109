"""The metric-contract table in docs/metrics.md is generated from the code and must match it."""

import re

from repo_paths import REPO

import gpu_contract


def test_documented_table_matches_contract() -> None:
    text = (REPO / "docs" / "metrics.md").read_text()
    match = re.search(r"<!-- contract:begin -->\n(.*?)\n<!-- contract:end -->", text, re.S)
    assert match, "docs/metrics.md lacks the contract markers"
    assert match.group(1).strip() == gpu_contract.markdown_table().strip()


def test_contract_names_are_unique_and_pod_families_have_no_device_only_labels() -> None:
    names = [m.name for m in gpu_contract.ALL_METRICS]
    assert len(names) == len(set(names))
    for m in gpu_contract.POD_METRICS:
        assert {"namespace", "pod", "container"} <= set(m.labels)
    for m in gpu_contract.DEVICE_METRICS:
        assert "pod" not in m.labels and "namespace" not in m.labels
