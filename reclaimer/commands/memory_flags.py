"""`simulate`'s memory and pool-draw flags: what GPU memory is replayed, which nodes share GPUs.

`--memory FILE` replays each job's GPU memory (GenTD26's `pod_gpu_memory_used_bytes` format);
`--memory-peak-gib` says what the file's largest value stands for (`sim_sharing.memory`): one value
(default 16) for a run, or a list (`6,8,12,16`) for a `--capacity-sweep`, which runs the whole sweep
once per value. On a node list that gives each node's device memory (an `export-history` export) the
bytes are replayed as they are and no value applies (`sim_sharing.memory.peak_for`): the series is
read once, under the key None, and a list of values is refused (`moot`), as every value would replay
the same bytes. `--no-share-memory-cap` replays the trace's GPU-sharing pods without the bound their
request gives their memory (`sim_sharing.share_memory`), to measure what the bound changes.
`--pool-seed` picks the draw of the time-sliced pool's nodes (`sim_pool.members`; a sweep takes
several with `--pool-seeds`). `timeslice-tuned` sets its replicas from the replayed memory, so it
needs `--memory`. `read_memories` alone touches a file.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from reclaimer.commands.flag_values import gib_list
from reclaimer.simulate.sharing.memory import DEFAULT_PEAK_GIB, peak_for, read_memory
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import FloatArray, Nodes, Profiles


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--memory", type=Path, help="gentd26-format GPU memory CSV")
    group.add_argument(
        "--memory-peak-gib",
        type=gib_list,
        default=(DEFAULT_PEAK_GIB,),
        help="GiB the memory file's largest value stands for (default "
        f"{DEFAULT_PEAK_GIB:g}); a sweep takes a list, e.g. 6,8,12,16, and runs each",
    )
    group.add_argument(
        "--no-share-memory-cap",
        dest="share_memory_cap",
        action="store_false",
        help="replay GPU-sharing pods' memory without the bound their gpu_milli share gives it",
    )
    group.add_argument(
        "--pool-seed",
        type=int,
        default=0,
        help="which seeded draw of each GPU count's nodes forms the time-sliced pool (default 0)",
    )


def problem(args: argparse.Namespace, sweep: bool) -> str | None:
    """What is wrong with these flags for one run (`sweep` False) or a sweep; None if nothing."""
    if not sweep and len(args.memory_peak_gib) > 1:
        return "a list of --memory-peak-gib values goes with --capacity-sweep"
    if args.memory is None and Strategy.TIMESLICE_TUNED in _named(args):
        return "timeslice-tuned sets its replicas from the pods' memory peaks: it needs --memory"
    return None


def _named(args: argparse.Namespace) -> Iterable[Strategy]:
    """The strategies the flags name (`--strategy`, `--strategies`); none when left default."""
    if args.strategy is not None:
        return (Strategy(args.strategy),)
    return args.strategies or ()


def default_strategies(args: argparse.Namespace) -> tuple[Strategy, ...]:
    """`--strategies` when given, else every strategy (`timeslice-tuned` only with --memory)."""
    if args.strategies:
        return tuple(args.strategies)
    tuned = args.memory is not None
    return tuple(s for s in Strategy if tuned or s is not Strategy.TIMESLICE_TUNED)


def moot(args: argparse.Namespace, nodes: Nodes) -> str | None:
    """What is wrong with a list of `--memory-peak-gib` values next to `nodes`: on measured
    devices no value applies (module doc); None when nothing is."""
    if args.memory is None or len(args.memory_peak_gib) < 2 or not nodes.measured_memory:
        return None
    values = ",".join(f"{gib:g}" for gib in args.memory_peak_gib)
    return (
        "the node list gives each node's device memory (gpu_memory_mib): the memory file's "
        f"bytes are replayed as measured, so --memory-peak-gib does not apply and {values} "
        "would replay the same bytes each time; give no list"
    )


def read_memories(
    args: argparse.Namespace, profiles: Profiles, nodes: Nodes
) -> dict[float | None, FloatArray]:
    """Each `--memory-peak-gib` value's memory series ({} without `--memory`); on `nodes` that
    give device memory, the bytes as they are under None (`sim_sharing.memory.peak_for`)."""
    if args.memory is None:
        return {}
    peaks = dict.fromkeys(peak_for(nodes, gib) for gib in args.memory_peak_gib)
    return {peak: read_memory(args.memory, profiles, peak) for peak in peaks}
