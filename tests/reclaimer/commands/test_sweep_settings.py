"""`simulate --capacity-sweep` over settings: a list of `--memory-peak-gib` values, pool draws,
`timeslice-tuned` with `--memory`, and the flags that go with them."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from simworld import HOUR, IDLE, STEP, P, nodes_frame, pods_frame, write_trace

from reclaimer.cli import main
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.memory import parse_memory
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

# Four 2-hour LS jobs at once (and one late, to end the replay later) on four 1-GPU T4 nodes
# (16 GiB), all in the pool at 2 replicas: without sharing, 4 GPUs keep the SLO; time-sliced, 2
# do, as long as two pods fit one GPU's memory.
TRACE = [P(f"ls-{i}", "LS", 0.0, 2 * HOUR) for i in range(4)] + [P("ls-late", "LS", 9 * HOUR, 600)]


def _memory_csv(tmp_path):
    """pod-a (the profile's pod) holds the same bytes throughout: the file's largest value."""
    path = tmp_path / "memory.csv"
    times = [1.6e9 + STEP * i for i in range(240)]
    pd.DataFrame({"timestamp_anon": times, "value": 2**30, "container_ip": "pod-a"}).to_csv(
        path, index=False
    )
    return path


def _args(tmp_path, *extra, memory=True):
    paths = write_trace(tmp_path, TRACE, [1, 1, 1, 1])
    given = ["--memory", str(_memory_csv(tmp_path))] if memory else []
    return [
        "simulate", "--pods", str(paths["pods"]), "--nodes", str(paths["nodes"]),
        "--utilization", str(paths["utilization"]), "--cold-start", str(paths["cold_start"]),
        *given, "--capacity-sweep", "--capacities", "1-4", "--pool-share", "1", "--jobs", "1",
        *extra,
    ]  # fmt: skip


def test_a_memory_list_sweeps_each_value_and_reports_the_break_even(tmp_path, capsys):
    """Two pods of 6 or 8 GiB fit a 16 GiB T4, of 12 they do not (24 > 16: OOM kills at every
    capacity, as best fit packs pods onto one GPU first). `timeslice-tuned` shares only where
    two pods fit 90% of it (6 GiB: 2 x 6 <= 14.4; 8 GiB: 16 > 14.4, kept whole, like none)."""
    strategies = ["--strategies", "timeslice,timeslice-tuned"]
    assert main(_args(tmp_path, "--memory-peak-gib", "12,6,8", *strategies, "--json")) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)

    assert out["memory_peak_gib"] == [6.0, 8.0, 12.0]
    assert [(s["memory_peak_gib"], s["pool_seed"]) for s in out["settings"]] == [
        (6.0, 0), (8.0, 0), (12.0, 0),
    ]  # fmt: skip
    assert out["memory_sensitivity"] == [
        {"memory_peak_gib": 6.0, "min_gpus": {"none": 4, "timeslice": 2, "timeslice-tuned": 2}},
        {"memory_peak_gib": 8.0, "min_gpus": {"none": 4, "timeslice": 2, "timeslice-tuned": 4}},
        {"memory_peak_gib": 12.0, "min_gpus": {"none": 4, "timeslice": None,
                                               "timeslice-tuned": 4}},
    ]  # fmt: skip
    assert out["break_even_gib"] == {"none": None, "timeslice": 8.0, "timeslice-tuned": 6.0}
    at_12 = out["settings"][2]["policies"]["timeslice"]
    assert "guaranteed OOM kills" in at_12["reason"]
    # at 8 GiB tuned keeps its pool's T4s whole: it says so in its runs, not as an empty pool
    tuned_8 = [r for r in out["settings"][1]["runs"] if r["strategy"] == "timeslice-tuned"]
    assert {r["tuned_replicas"]["T4"]["replicas"] for r in tuned_8} == {1}
    assert {r["timesliced_gpus"] for r in tuned_8} == {0}
    caveats = out["settings"][1]["policies"]["timeslice-tuned"]["caveats"]
    assert not any("pool is empty" in c for c in caveats)
    # `none` replays whole GPUs, where memory is never read: one replay per capacity serves
    # every value (4), the two sharing strategies replay each value (2 x 4 x 3)
    assert captured.err.count("\n") == 4 + 2 * 4 * 3
    runs = [s["runs"] for s in out["settings"]]
    nones = [[r for r in mine if r["strategy"] == "none"] for mine in runs]
    assert nones[0] == nones[1] == nones[2]


def test_one_memory_value_keeps_the_sweeps_json_and_adds_the_sensitivity(tmp_path, capsys):
    argv = _args(tmp_path, "--memory-peak-gib", "8", "--strategies", "timeslice", "--json")
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)

    assert {"policies", "runs", "rule", "seeds"} <= set(out)
    assert "settings" not in out
    assert out["memory_sensitivity"] == [
        {"memory_peak_gib": 8.0, "min_gpus": {"none": 4, "timeslice": 2}}
    ]
    assert out["break_even_gib"] == {"none": None, "timeslice": 8.0}


def test_the_text_gives_the_sensitivity_table(tmp_path, capsys):
    assert main(_args(tmp_path, "--memory-peak-gib", "8,12", "--strategies", "timeslice")) == 0
    lines = capsys.readouterr().out.splitlines()

    assert "-- memory peak 8 GiB, pool seed 0" in lines
    assert lines[lines.index("-- memory peak 12 GiB, pool seed 0") + 1].startswith("SLO (")
    table = lines.index(
        "memory sensitivity (per-queue rule): min_gpus by --memory-peak-gib, and the break-even"
    )
    assert lines[table + 1 :] == [
        "none            8: 4  12: 4  break-even -",
        "timeslice       8: 2  12: -  break-even 8 GiB",
    ]


def test_pool_draws_give_each_draws_min_gpus_its_median_and_range(tmp_path, capsys):
    argv = _args(tmp_path, "--memory-peak-gib", "8", "--strategies", "timeslice", "--json")
    assert main([*argv, "--pool-share", "0.5", "--pool-seeds", "0,1,2"]) == 0
    out = json.loads(capsys.readouterr().out)

    assert out["pool_seeds"] == [0, 1, 2]
    draws = out["pool_draws"][0]["min_gpus"]["timeslice"]
    each = [draws["by_pool_seed"][str(s)] for s in (0, 1, 2)]
    assert each == [setting["policies"]["timeslice"]["min_gpus"] for setting in out["settings"]]
    assert draws["median"] == sorted(each)[1]
    assert draws["range"] == [min(each), max(each)]
    assert out["memory_sensitivity"][0]["min_gpus"]["timeslice"] == draws["median"]


def test_none_replays_the_same_whatever_the_memory_or_the_pool_draw():
    """What lets a sweep replay `none` once for every setting."""
    jobs, nodes, profiles = (
        parse_pods(pods_frame(TRACE)),
        parse_nodes(nodes_frame([1, 1])),
        (parse_profiles(IDLE)),
    )
    held = pd.DataFrame({"timestamp_anon": [1.6e9], "value": [2**30], "container_ip": ["pod-a"]})
    results = [
        simulate(jobs, nodes, profiles, SimSettings(Strategy.NONE, pool_share=1.0, pool_seed=p),
                 memory=parse_memory(held, profiles, gib)).to_json()
        for gib in (6.0, 16.0) for p in (0, 1)
    ]  # fmt: skip
    assert all(r == results[0] for r in results)
    assert results[0]["guaranteed_wait_p95_s"] > 0  # jobs did wait: there was a choice to make


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--strategies", "timeslice-tuned"], "timeslice-tuned sets its replicas from the pods"),
        (["--memory-peak-gib", "6,x"], "expected GiB like 8 or 6,8,12,16"),
        (["--memory-peak-gib", "6,0"], "every value must be more than 0 GiB"),
        (["--memory-peak-gib", "6,8", "--report", "{tmp}/r.html"], "--report replays one setting"),
        (["--pool-seeds", "0,1", "--report", "{tmp}/r.html"], "--report replays one setting"),
    ],
    ids=["tuned-needs-memory", "gib-not-a-number", "gib-zero", "report-two-memories",
         "report-two-draws"],
)  # fmt: skip
def test_bad_setting_flags_exit_2(tmp_path, capsys, extra, message):
    memory = not extra[-1].startswith("timeslice-tuned")  # that case asks without --memory
    argv = _args(tmp_path, *(e.format(tmp=tmp_path) for e in extra), memory=memory)
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse rejects a flag's value itself
        code = exit_info.code
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--strategy", "none", "--memory-peak-gib", "6,8"], "goes with --capacity-sweep"),
        (["--strategy", "none", "--pool-seeds", "0,1"], "go with --capacity-sweep"),
        (["--strategy", "timeslice-tuned"], "it needs --memory"),
    ],
    ids=["memory-list-one-run", "pool-seeds-one-run", "tuned-one-run-needs-memory"],
)
def test_one_run_refuses_what_only_a_sweep_takes(tmp_path, capsys, extra, message):
    paths = write_trace(tmp_path, TRACE, [1, 1])
    argv = ["simulate", "--pods", str(paths["pods"]), "--nodes", str(paths["nodes"]),
            "--utilization", str(paths["utilization"]), "--cold-start", str(paths["cold_start"]),
            *extra]  # fmt: skip
    assert main(argv) == 2
    assert message in capsys.readouterr().err
