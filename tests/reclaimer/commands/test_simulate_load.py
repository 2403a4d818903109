"""`simulate`'s load flags: `--profile-offsets`, `--utilization-mean` and `--max-ls-cobusy`."""

from __future__ import annotations

import json

import pytest
from simworld import P, profile_frame, write_trace

from reclaimer.cli import main

# busy one minute in five at 40%: a mean busy share of 0.08, every fifth sample nonzero
ONE_IN_FIVE = profile_frame([40.0, 0.0, 0.0, 0.0, 0.0], repeat=20)
# two LS jobs arriving together; at 2 GPUs one node is the time-sliced pool and takes both
PAIR = [P("ls-1", "LS", 0.0, 3000.0), P("ls-2", "LS", 0.0, 3000.0)]


def _args(paths, *extra):
    return [
        "simulate",
        "--pods", str(paths["pods"]),
        "--nodes", str(paths["nodes"]),
        "--utilization", str(paths["utilization"]),
        "--cold-start", str(paths["cold_start"]),
        *extra,
    ]  # fmt: skip


def _run(tmp_path, capsys, *extra):
    paths = write_trace(tmp_path, PAIR, [1, 1], ONE_IN_FIVE)
    code = main(_args(paths, "--capacity-scale", "1", "--json", *extra))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_arrival_offsets_are_the_default_and_random_ones_a_flag(tmp_path, capsys):
    shared = ("--strategy", "timeslice", "--pool-share", "1", "--seed", "1")
    default = _run(tmp_path, capsys, *shared)
    arrival = _run(tmp_path, capsys, *shared, "--profile-offsets", "arrival")
    random = _run(tmp_path, capsys, *shared, "--profile-offsets", "random")

    # together from their arrival: every busy minute of each is one of the other's
    assert default["ls_cobusy_share"] == arrival["ls_cobusy_share"] == 1.0
    # seed 1 starts them 4 minutes apart in the 5-minute cycle (tests/.../test_load.py)
    assert random["ls_cobusy_share"] == 0.0


@pytest.mark.parametrize("mean", [0.1, 0.5], ids=["scaled", "idle-runs-filled"])
def test_utilization_mean_sets_the_busy_share_the_jobs_replay(tmp_path, capsys, mean):
    trace = _run(tmp_path, capsys, "--strategy", "none")
    moved = _run(tmp_path, capsys, "--strategy", "none", "--utilization-mean", str(mean))

    # each job runs 10 whole cycles of its profile, so its busy share is the profile's mean
    assert trace["effective_utilization"] == pytest.approx(0.08)
    assert moved["effective_utilization"] == pytest.approx(mean)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--utilization-mean", "0"), "a mean busy share must be in (0, 1]"),
        (("--utilization-mean", "1.2"), "a mean busy share must be in (0, 1]"),
        (("--profile-offsets", "sideways"), "invalid choice: 'sideways'"),
        (("--max-ls-cobusy", "2"), "a share must be in [0, 1]"),
    ],
    ids=["mean-zero", "mean-over-one", "unknown-offsets", "share-over-one"],
)
def test_bad_load_flags_exit_2_with_a_message(tmp_path, capsys, extra, message):
    paths = write_trace(tmp_path, PAIR, [1, 1], ONE_IN_FIVE)
    with pytest.raises(SystemExit) as exit_info:
        main(_args(paths, "--strategy", "none", *extra))
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def _sweep(tmp_path, capsys, *extra):
    paths = write_trace(tmp_path, PAIR, [1, 1], ONE_IN_FIVE)
    sweep = ("--capacity-sweep", "--capacities", "1-2", "--strategies", "timeslice")
    code = main(_args(paths, *sweep, "--jobs", "1", "--json", *extra))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_the_sweep_holds_ls_pods_to_the_co_busy_limit_and_states_its_load(tmp_path, capsys):
    held = _sweep(tmp_path, capsys)
    off = _sweep(tmp_path, capsys, "--max-ls-cobusy", "1")

    sliced = held["policies"]["timeslice"]
    at_two = sliced["per_capacity"][-1]
    # at 2 GPUs both jobs share the pool's GPU without waiting, busy together all the time
    assert at_two["gpus"] == 2 and at_two["worst_p95_s"] == 0.0
    assert at_two["ls_cobusy_share"] == {"0": 1.0}
    assert not at_two["meets_slo"] and sliced["min_gpus"] is None
    assert "LS co-busy share 1.000" in sliced["reason"]
    # with the limit off, the same capacity meets the rule
    assert off["policies"]["timeslice"]["min_gpus"] == 2
    assert held["load"] == {"profile_offsets": "arrival", "utilization_mean": 0.08}
