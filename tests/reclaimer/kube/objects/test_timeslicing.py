"""Device-plugin time-slicing configs: invariants of render/parse and key naming."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from reclaimer.kube.objects.timeslicing import (
    KEY_PREFIX,
    TimeSlicingError,
    key_for,
    render,
    replicas_of,
    unused_keys,
)

BASES = [
    "",
    "version: v1\n",
    "version: v1\nflags:\n  migStrategy: none\n",
    "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 4\n",
    "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/mig-1g.5gb\n"
    "      replicas: 2\n    - name: nvidia.com/gpu\n      replicas: 8\n",
]


@given(base=st.sampled_from(BASES), replicas=st.integers(min_value=1, max_value=64))
def test_render_sets_exactly_the_replicas_and_keeps_the_rest(base: str, replicas: int) -> None:
    text = render(base, replicas)
    assert replicas_of(text) == replicas
    before, after = yaml.safe_load(base) or {}, yaml.safe_load(text)
    assert after.get("flags") == before.get("flags")
    others = [
        r
        for r in ((before.get("sharing") or {}).get("timeSlicing") or {}).get("resources", [])
        if r["name"] != "nvidia.com/gpu"
    ]
    kept = [
        r
        for r in ((after.get("sharing") or {}).get("timeSlicing") or {}).get("resources", [])
        if r["name"] != "nvidia.com/gpu"
    ]
    assert kept == others


@given(base=st.sampled_from(BASES), a=st.integers(1, 16), b=st.integers(1, 16))
def test_keys_are_content_addressed(base: str, a: int, b: int) -> None:
    ka, kb = key_for(render(base, a), a), key_for(render(base, b), b)
    assert (ka == kb) == (a == b)
    assert ka.startswith(KEY_PREFIX) and len(ka) <= 63
    assert all(c.isalnum() or c in "-._" for c in ka)


@given(
    keys=st.sets(st.sampled_from(["plain", "ts-4", KEY_PREFIX + "r2-a", KEY_PREFIX + "r4-b"])),
    used=st.sets(st.sampled_from(["plain", "ts-4", KEY_PREFIX + "r2-a", KEY_PREFIX + "r4-b"])),
)
def test_only_unreferenced_reclaimer_keys_are_unused(keys: set[str], used: set[str]) -> None:
    unused = unused_keys(dict.fromkeys(keys, ""), used)
    assert set(unused) == {k for k in keys if k.startswith(KEY_PREFIX) and k not in used}


@pytest.mark.parametrize(
    "text",
    [
        "[1, 2",
        "- a list",
        "sharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 0}\n",
    ],
    ids=["bad-yaml", "not-a-mapping", "zero-replicas"],
)
def test_bad_configs(text: str) -> None:
    with pytest.raises(TimeSlicingError):
        replicas_of(text)
