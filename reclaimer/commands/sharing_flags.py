"""`simulate`'s flags for time-slicing, load and restarts, and the settings they make.

The groups are the replay's sharing models' (`reclaimer.simulate.sharing`, `.pool`): how the pool
is formed and sliced, how its GPUs' time and memory are shared, how the profiles are placed and
scaled, and what a restart or resume waits for. `sharing_settings` turns them into the
`SimSettings` every run of a command starts from (the strategy is filled in per run).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reclaimer.commands import memory_flags
from reclaimer.commands.flag_values import number_in
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.contention import (
    DEFAULT_ANONYMIZED_GIB,
    DEFAULT_SWITCH_OVERHEAD,
    Contention,
)
from reclaimer.simulate.sharing.load import ProfileOffsets
from reclaimer.simulate.strategies import Strategy

DEFAULT_POOL_SHARE = 0.5
DEFAULT_REPLICAS = 2

_ratio = number_in(lambda v: 0.0 <= v < 1.0, "must be in [0, 1)")
_share = number_in(lambda v: 0.0 <= v <= 1.0, "must be in [0, 1]")
_gib = number_in(lambda v: v > 0, "must be more than 0 GiB")
_busy_share = number_in(lambda v: 0.0 < v <= 1.0, "a mean busy share must be in (0, 1]")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sharing_arguments(parser)
    load_arguments(parser)
    restart_arguments(parser)


def load_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("load (every strategy)")
    group.add_argument(
        "--profile-offsets",
        choices=[o.value for o in ProfileOffsets],
        default=ProfileOffsets.ARRIVAL.value,
        help="where a drawn profile starts: at the job's arrival time of day on the profile's "
        "own clock, or at a seeded random offset (default arrival)",
    )
    group.add_argument(
        "--utilization-mean",
        type=_busy_share,
        help="transform the profiles to this fleet mean busy share (default: the trace's own)",
    )


def _replicas(text: str) -> int:
    if not text.isdigit() or int(text) < 2:
        raise argparse.ArgumentTypeError(f"time-slicing needs 2 or more replicas, got {text!r}")
    return int(text)


def sharing_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("time-slicing (timeslice, forecast)")
    group.add_argument(
        "--replicas",
        type=_replicas,
        default=DEFAULT_REPLICAS,
        help=f"time-slice replicas per pool GPU (default {DEFAULT_REPLICAS})",
    )
    group.add_argument(
        "--forecast-start",
        choices=("whole", "replicas"),
        default="whole",
        help="forecast's pool starts whole and is raised once the pods' memory is measured, "
        "or at --replicas (default whole)",
    )
    group.add_argument(
        "--pool-share",
        type=_share,
        default=DEFAULT_POOL_SHARE,
        help=f"share of each GPU count's nodes in the pool (default {DEFAULT_POOL_SHARE})",
    )
    group.add_argument(
        "--contention",
        choices=[c.value for c in Contention],
        default=Contention.FAIR.value,
        help="how a time-sliced GPU's time is divided: fair (equal shares, none beyond demand) "
        "or pessimistic (every neighbour's demand costs a pod time in full) (default fair)",
    )
    group.add_argument(
        "--switch-overhead",
        type=_ratio,
        help="GPU time lost to context switches, fair contention only "
        f"(default {DEFAULT_SWITCH_OVERHEAD})",
    )
    memory_flags.add_arguments(group)
    group.add_argument(
        "--anonymized-gib",
        type=_gib,
        default=DEFAULT_ANONYMIZED_GIB,
        help=f"GiB of a GPU model the trace hides (default {DEFAULT_ANONYMIZED_GIB:g})",
    )


def restart_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("restarts and resumes").add_mutually_exclusive_group()
    group.add_argument(
        "--cold-start",
        type=Path,
        help="gentd26-format base-model load times (ms) a restart or resume waits, drawn per "
        "job (default: fetched trace)",
    )
    group.add_argument(
        "--no-cold-start", action="store_true", help="restarts and resumes load nothing"
    )


def sharing_settings(args: argparse.Namespace) -> SimSettings:
    """The time-slicing and load fields of the flags (the strategy is filled in per run)."""
    overhead = args.switch_overhead
    return SimSettings(
        strategy=Strategy.NONE,
        replicas=args.replicas,
        forecast_start_whole=args.forecast_start == "whole",
        pool_share=args.pool_share,
        switch_overhead=DEFAULT_SWITCH_OVERHEAD if overhead is None else overhead,
        contention=Contention(args.contention),
        anonymized_gib=args.anonymized_gib,
        profile_offsets=ProfileOffsets(args.profile_offsets),
        pool_seed=args.pool_seed,
        share_memory_cap=args.share_memory_cap,
    )
