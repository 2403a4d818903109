"""Loading `kubectl get -o yaml` dumps: List, multi-document, mixed, and malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from repo_paths import REPO

from reclaimer.kube.dumps import ClusterFileError, load_cluster_file, load_cluster_view

FIXTURE = REPO / "tests" / "fixtures" / "cluster" / "cluster.yaml"


def _docs() -> list[dict[str, object]]:
    return [d for d in yaml.safe_load_all(FIXTURE.read_text()) if d]


def test_list_and_multidoc_give_the_same_view() -> None:
    docs = _docs()
    as_list = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs})
    half = len(docs) // 2
    mixed = yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "List", "items": docs[:half]}, *docs[half:]]
    )
    multi = load_cluster_file(FIXTURE, taken_at=1.0)
    assert load_cluster_view(as_list, 1.0) == multi
    assert load_cluster_view(mixed, 1.0) == multi
    assert len(multi.jobs) == 5


def test_unknown_kinds_are_logged_not_problems(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")
    text = yaml.safe_dump_all(
        [
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}},
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}},
        ]
    )
    view = load_cluster_view(text, 0.0)
    assert not view.problems
    assert "ignored 1 object(s) of kind Deployment" in caplog.text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [unclosed", "not valid YAML"),
        ("- just\n- a list\n", "expected a Kubernetes object"),
        ("kind: Pod\nmetadata: {name: x}\n", "without kind/apiVersion"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {}\n", "without metadata.name"),
        ("apiVersion: v1\nkind: List\nitems: {a: 1}\n", "not a list"),
        ("", "no Kubernetes objects"),
    ],
    ids=["bad-yaml", "not-an-object", "no-kind", "no-name", "items-not-list", "empty"],
)
def test_malformed_dumps_are_refused_clearly(text: str, message: str) -> None:
    with pytest.raises(ClusterFileError, match=message):
        load_cluster_view(text, 0.0, source="dump.yaml")


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ClusterFileError, match="cannot read"):
        load_cluster_file(tmp_path / "missing.yaml", 0.0)


def test_later_objects_replace_earlier_ones() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"capacity": {"nvidia.com/gpu": "2"}},
    }
    bigger = {**node, "status": {"capacity": {"nvidia.com/gpu": "8"}}}
    view = load_cluster_view(yaml.safe_dump_all([node, bigger]), 0.0)
    assert [n.gpus for n in view.nodes] == [8]


def test_deploy_examples_load() -> None:
    """The examples (as `kubectl apply -k` creates them) plus the demo's scheduled state."""
    examples = REPO / "deploy" / "examples"
    listed = yaml.safe_load((examples / "kustomization.yaml").read_text())["resources"]
    files = [examples / f for f in listed if f.endswith(".yaml")]
    state = examples / "sim" / "cluster-state.yaml"
    text = "\n---\n".join(p.read_text() for p in [*files, *([state] if state.is_file() else [])])
    view = load_cluster_view(text, 0.0)
    assert {q.name for q in view.queues} >= {"research", "production"}
    assert "research/bert-finetune" in {j.key for j in view.jobs}
    assert "production/llm-pretrain" in {d.job for d in view.pending} | {j.key for j in view.jobs}
    if state.is_file():  # the demo's time-sliced node resolves its device-plugin config key
        assert any(n.replicas > 1 for n in view.nodes)
        assert not [p for p in view.problems if "device-plugin config key" in p]
