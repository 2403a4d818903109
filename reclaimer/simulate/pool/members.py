"""The time-sliced pool of a replay: which nodes it holds, and why it holds none.

`pool_nodes` takes `round(n * share)` of the `n` nodes of each GPU count, drawn at random by
`--pool-seed`: the nodes of a count go in the order of a seeded hash of their names
(`draw_order`, BLAKE2b of `seed:name`), and the first ones form the pool. A node's place depends
on the seed and its name only, so each seed is a uniform draw, and the same draw whatever the
row order of the node list. When the trace has multi-GPU pods that fit the largest nodes
(`keeps_a_node_whole`) it leaves at least one node of the largest count out (the last in the
draw), so every multi-GPU pod still has a node (multi-GPU pods never run on the pool: on a
time-sliced node a request for more than one replica gains no compute, `sim_scheduler`). A trace
of one-GPU pods loses nothing by a pool of every node, so then no node is kept out.
`simulate --pool-share` defaults to 0.5; `SimSettings.pool_share` to 0 (no pool, the replay as
it was before time-slicing). `pool_replicas` gives each node its replicas at the start. A pool
that comes out empty is explained by `empty_pool`, for the command to refuse or report: a
sharing strategy on an empty pool time-slices nothing. Pure.
"""

from __future__ import annotations

import hashlib

import numpy as np

from reclaimer.simulate.trace import BoolArray, IntArray, Jobs, Nodes


def keeps_a_node_whole(jobs: Jobs, nodes: Nodes) -> bool:
    """Whether the pool leaves a node of the largest GPU count out: only when some pod asks for
    more than one GPU and no more than that node has (a larger one never runs anywhere)."""
    largest = int(nodes.gpus.max(initial=0))
    return bool(((jobs.num_gpu > 1) & (jobs.num_gpu <= largest)).any())


def draw_order(names: tuple[str, ...], seed: int) -> IntArray:
    """Row indices of `names` in the pool's draw for `seed`: by a hash of the seed and the name
    (ties, which need equal names, by name), so a node's place depends on nothing else."""
    keys = [
        (hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest(), name, row)
        for row, name in enumerate(names)
    ]
    return np.array([row for *_, row in sorted(keys)], dtype=np.int64)


def pool_nodes(nodes: Nodes, share: float, keep_whole: bool = True, seed: int = 0) -> BoolArray:
    """The nodes of the time-sliced pool, drawn by `seed` (see the module doc)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the pool share must be in [0, 1], got {share}")
    chosen = np.zeros(len(nodes.gpus), dtype=bool)
    largest = int(nodes.gpus.max())
    order = draw_order(nodes.names, seed)
    for count in np.unique(nodes.gpus):
        rows = order[nodes.gpus[order] == count]
        wanted = round(len(rows) * share)
        if count == largest and keep_whole:
            wanted = min(wanted, len(rows) - 1)
        chosen[rows[:wanted]] = True
    return chosen


def pool_replicas(
    nodes: Nodes, share: float, replicas: int, keep_whole: bool = True, seed: int = 0
) -> IntArray | None:
    """Replicas per node at the start: `replicas` on the pool, 1 elsewhere (None: no pool)."""
    if replicas < 2 or share <= 0:
        return None
    chosen = pool_nodes(nodes, share, keep_whole, seed)
    result: IntArray = np.where(chosen, replicas, 1).astype(np.int64)
    return result


def empty_pool(jobs: Jobs, nodes: Nodes, share: float) -> str | None:
    """Why `--pool-share share` puts no node of `nodes` in the pool, or None when it puts one."""
    keep_whole = keeps_a_node_whole(jobs, nodes)
    if pool_nodes(nodes, share, keep_whole).any():
        return None
    largest = int(nodes.gpus.max(initial=0))
    parts = []
    for count in np.unique(nodes.gpus[nodes.gpus > 0]).tolist():
        n = int((nodes.gpus == count).sum())
        wanted = round(n * share)
        kept = count == largest and keep_whole and wanted > 0
        parts.append(
            f"{n} node(s) of {count} GPU(s): round({n} x {share:g}) = {wanted}"
            + (", less the one kept whole for the trace's multi-GPU pods" if kept else "")
        )
    return (
        "the time-sliced pool is empty (--pool-share takes round(n x share) of the n nodes of "
        f"each GPU count: {'; '.join(parts) or 'no node has a GPU'})"
    )
