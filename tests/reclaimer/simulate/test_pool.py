"""The time-sliced pool's draw: round(n x share) of each GPU count, by a seeded hash of names."""

from __future__ import annotations

import pandas as pd
import pytest

from reclaimer.simulate.pool.members import pool_nodes
from reclaimer.simulate.trace import parse_nodes

# four nodes of each of three sizes, named apart from their rows
GPUS = [1, 2, 8] * 4
FRAME = pd.DataFrame(
    {"sn": [f"host-{chr(97 + i)}" for i in range(len(GPUS))], "gpu": GPUS, "model": "T4"}
)


def _pool(frame: pd.DataFrame, share: float = 0.5, **seed: int) -> set[str]:
    nodes = parse_nodes(frame)
    chosen = pool_nodes(nodes, share, True, **seed)
    return {name for name, flag in zip(nodes.names, chosen.tolist(), strict=True) if flag}


@pytest.mark.parametrize(
    "order",
    [list(range(len(GPUS)))[::-1], [5, 0, 11, 3, 8, 1, 10, 6, 2, 9, 4, 7]],
    ids=["reversed", "shuffled"],
)
def test_the_pool_is_the_same_nodes_whatever_the_row_order(order):
    """The same node list in another row order gives the same pool, node by node (the first
    rows of each count would give another: 'reversed' puts the last ones first)."""
    assert _pool(FRAME.iloc[order]) == _pool(FRAME)


def test_each_seed_draws_round_n_share_of_each_count_and_the_seeds_draw_apart():
    draws = [_pool(FRAME, 0.5, seed=seed) for seed in range(8)]
    count = dict(zip(FRAME["sn"], FRAME["gpu"], strict=True))

    for pool in draws:  # round(4 x 0.5) of each count; no multi-GPU pod here, so none kept out
        assert sorted(count[name] for name in pool) == [1, 1, 2, 2, 8, 8]
    assert len({frozenset(p) for p in draws}) > 1  # the seed picks the draw
    assert set().union(*draws) == set(FRAME["sn"])  # every node is drawn by some seed


def test_the_largest_count_keeps_the_last_of_its_draw_out():
    nodes = parse_nodes(FRAME)
    for seed in range(4):
        pool = pool_nodes(nodes, 1.0, True, seed)
        assert int((pool & (nodes.gpus == 8)).sum()) == 3  # one 8-GPU node kept whole
        assert int((pool & (nodes.gpus < 8)).sum()) == 8
