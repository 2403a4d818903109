"""`PolicyFile.check()` table: what each change of the file yields, in a ConfigMap-style dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reclaimer.policy.settings import Policy
from reclaimer.runtime.policy_file import PolicyFile, PolicyFileError, changed_settings


def swap(root: Path, version: str, text: str) -> None:
    """The kubelet's AtomicWriter in small: a new dir, `..data_tmp` renamed over `..data`."""
    (root / version).mkdir()
    (root / version / "policy.yaml").write_text(text)
    (root / "..data_tmp").symlink_to(version)
    os.replace(root / "..data_tmp", root / "..data")
    if not (root / "policy.yaml").is_symlink():
        (root / "policy.yaml").symlink_to("..data/policy.yaml")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    swap(tmp_path, "..v1", "threshold: 0.05\n")
    return tmp_path


def test_each_version_is_read_once_and_a_refused_one_keeps_the_last_good(root: Path) -> None:
    watched = PolicyFile(root / "policy.yaml")
    assert watched.check() is None  # unchanged: nothing read
    swap(root, "..v2", "threshold: 0.05\n")  # same text, same size: the inode tells
    change = watched.check()
    assert change is not None and change.policy == Policy()
    swap(root, "..v3", "threshold: [0.05\n")
    refused = watched.check()
    assert refused is not None and refused.policy is None
    assert f"invalid policy {root / 'policy.yaml'} (1 errors)" in refused.problem
    assert watched.check() is None  # the refused version is reported once
    assert watched.policy == Policy()  # the last good one
    swap(root, "..v4", "horizon: 30m\nactions: {preempt: false}\n")
    taken = watched.check()
    assert taken is not None and taken.policy is not None
    assert changed_settings(Policy(), taken.policy) == ["horizon", "actions"]


def test_a_vanished_file_is_refused_and_its_return_is_taken(root: Path) -> None:
    watched = PolicyFile(root / "policy.yaml")
    (root / "..data").unlink()
    gone = watched.check()
    assert gone is not None and gone.policy is None and "cannot read" in gone.problem
    swap(root, "..v2", "threshold: 0.1\n")
    back = watched.check()
    assert back is not None and back.policy is not None and back.policy.threshold == 0.1


def test_at_startup_an_invalid_file_raises_listing_every_problem(root: Path) -> None:
    swap(root, "..v2", "threshold: 2\nhorizon: -1\n")
    with pytest.raises(PolicyFileError, match=r"\(2 errors\)"):
        PolicyFile(root / "policy.yaml")
