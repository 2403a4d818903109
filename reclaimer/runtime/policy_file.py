"""The policy file in force, re-read when it changes, as the web config is (`webconfig/live.py`).

The policy is a ConfigMap volume. The kubelet updates one through its AtomicWriter
(kubernetes/kubernetes, pkg/volume/util/atomic_writer.go): the new files go to a fresh
timestamped directory, a `..data_tmp` symlink to it is renamed over `..data`, and the visible
`policy.yaml` is a symlink through `..data`. The path's stat (following the links) therefore
changes inode on every update, even when the size and the mtime do not. `PolicyFile.check()`
compares (inode, device, mtime, size) with the version last read; the controller calls it at the
start of every cycle:

- unchanged: nothing is read (`None`);
- valid: the new policy (`PolicyChange.policy`), in force from this cycle on;
- invalid (bad YAML or any bad setting, every problem listed; unreadable; gone): `policy` None
  and `problem` saying why. The caller keeps the last good policy. The version refused is
  remembered, so it is reported once, not every cycle, until the file changes again.

At startup there is no last good policy to keep: `read_policy` raises and `run` exits 2 with every
problem listed, before anything is contacted, rather than plan with defaults the operator did not
write. Stat before read, so that a change made during a read is seen by the next check.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from reclaimer.policy.settings import Policy, PolicyError, load_policy

Fingerprint = tuple[int, int, int, int] | None


class PolicyFileError(Exception):
    """A policy file that cannot be used: unreadable, or invalid (every problem in the text)."""


@dataclass(frozen=True)
class PolicyChange:
    policy: Policy | None  # the new policy; None: the new version is refused
    problem: str = ""  # why it is refused


@dataclass(frozen=True)
class PolicyFeed:
    """How a running controller follows its policy file (`Controller(policy_feed=...)`)."""

    check: Callable[[], PolicyChange | None]  # PolicyFile.check (blocking)
    rejected: Callable[[str], None]  # says so outside the log: a Warning Event (blocking)
    accepted: Callable[[Policy], None]  # hands the new policy to the others holding one


def fingerprint(path: Path) -> Fingerprint:
    try:
        found = os.stat(path)  # follows ..data and the key's symlink
    except OSError:
        return None
    return (found.st_ino, found.st_dev, found.st_mtime_ns, found.st_size)


def read_policy(path: Path) -> Policy:
    """The policy in `path`, or `PolicyFileError` saying why not, every problem listed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PolicyFileError(f"--policy-file: cannot read {path}: {err}") from err
    try:
        return load_policy(text)
    except PolicyError as err:
        listed = "\n  ".join(err.errors)
        raise PolicyFileError(
            f"invalid policy {path} ({len(err.errors)} errors):\n  {listed}"
        ) from err


class PolicyFile:
    """The policy read from `path` (raises `PolicyFileError` at once); see the docstring."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen = fingerprint(path)
        self.policy = read_policy(path)

    def check(self) -> PolicyChange | None:
        """What changed since the last check (blocking: a stat, at most one read)."""
        seen = fingerprint(self.path)
        if seen == self._seen:
            return None
        self._seen = seen
        try:
            policy = read_policy(self.path)
        except PolicyFileError as err:
            return PolicyChange(None, str(err))
        self.policy = policy
        return PolicyChange(policy)


def changed_settings(old: Policy, new: Policy) -> list[str]:
    """Pure: the YAML keys of the top-level settings (or sections) whose values differ."""
    differ = [f for f in fields(Policy) if getattr(old, f.name) != getattr(new, f.name)]
    return [str(f.metadata["key"]) for f in differ]
