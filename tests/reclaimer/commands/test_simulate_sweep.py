"""`simulate --capacity-sweep` and `--report`: the JSON contract, the pool, and bad flags."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from simworld import BURSTY, HOUR, P, profile_frame, simulate_argv, write_trace

from reclaimer.cli import main
from reclaimer.simulate.results import JSON_KEYS
from reclaimer.simulate.strategies import Strategy

# Without a memory file a sweep compares every strategy but timeslice-tuned, which sizes its
# replicas from the pods' memory peaks.
WITHOUT_MEMORY = [s.value for s in Strategy if s is not Strategy.TIMESLICE_TUNED]

# One LS job an hour for 12 hours on 1-GPU nodes, while BE jobs hold GPUs: with 1 GPU the LS
# queue waits for hours, with 4 it never waits.
TRACE = [P(f"be-{i}", "BE", 0.0, 30 * HOUR) for i in range(2)] + [
    P(f"ls-{i}", "LS", (i + 1) * HOUR, 2 * HOUR) for i in range(12)
]
NODES = [1, 1, 1, 1, 1]


def _sweep(tmp_path, capsys, *extra):
    paths = write_trace(tmp_path, TRACE, NODES, BURSTY)
    code = main(
        simulate_argv(paths, "--capacity-sweep", "--capacities", "1-5", "--jobs", "1", *extra)
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out), captured.err


def test_sweep_json_has_a_verdict_per_strategy_and_every_run(tmp_path, capsys):
    out, err = _sweep(tmp_path, capsys, "--json", "--slo", "30m", "--seeds", "0,1")

    assert out["slo_seconds"] == 1800.0
    assert out["rule"] == "per-queue"
    assert out["seeds"] == [0, 1]
    assert set(out["policies"]) == set(WITHOUT_MEMORY)
    for verdict in out["policies"].values():
        assert set(verdict) == {"min_gpus", "gpus_saved_vs_none", "reason", "caveats",
                                "per_capacity"}  # fmt: skip
        assert [c["gpus"] for c in verdict["per_capacity"]] == [1, 2, 3, 4, 5]
        assert set(verdict["per_capacity"][0]["guaranteed_wait_p95_s"]) == {"0", "1"}
    assert len(out["runs"]) == len(WITHOUT_MEMORY) * 5 * 2
    assert set(out["runs"][0]) == {*JSON_KEYS, "gpus", "capacity_scale", "seed"}
    none = out["policies"]["none"]
    assert none["per_capacity"][0]["meets_slo"] is False  # one GPU: the LS jobs queue
    assert none["per_capacity"][-1]["meets_slo"] is True
    assert none["min_gpus"] is not None and none["gpus_saved_vs_none"] == 0
    assert err.count("\n") == len(out["runs"])  # one progress line per replay
    assert f"sweep {len(out['runs'])}/{len(out['runs'])}: " in err


def test_the_process_pool_gives_the_same_answer_as_one_process(tmp_path, capsys):
    alone, _ = _sweep(tmp_path, capsys, "--json")
    pooled, _ = _sweep(tmp_path, capsys, "--json", "--jobs", "2")

    def strip(out):
        return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in out["runs"]]

    assert strip(alone) == strip(pooled)
    assert alone["policies"] == pooled["policies"]


def test_a_capacity_no_strategy_meets_gives_null_with_a_reason(tmp_path, capsys):
    out, _ = _sweep(tmp_path, capsys, "--json", "--slo", "1s", "--capacities", "1")

    for verdict in out["policies"].values():
        assert verdict["min_gpus"] is None
        assert verdict["gpus_saved_vs_none"] is None
        assert "no capacity tried meets the SLO" in verdict["reason"]


def test_without_json_the_sweep_prints_a_line_per_strategy(tmp_path, capsys):
    paths = write_trace(tmp_path, TRACE, NODES, BURSTY)

    code = main(simulate_argv(paths, "--capacity-sweep", "--capacities", "4,5", "--jobs", "1"))

    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0].startswith(
        "SLO (per-queue rule): every guaranteed queue's own wait p95 <= 600 s"
    )
    assert [line.split()[0] for line in lines[1:] if not line.startswith(" ")] == WITHOUT_MEMORY


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--capacity-sweep", "--slo", "0s"], "longer than 0"),
        (["--capacity-sweep", "--slo", "soon"], "expected a duration"),
        (["--capacity-sweep", "--capacities", "7"], "--capacities: no capacity scale gives [7]"),
        (["--capacity-sweep", "--capacities", "2,two"], "expected a number of GPUs"),
        (["--capacity-sweep", "--capacities", "5-2"], "no capacity in 5-2 GPUs"),
        (["--capacity-sweep", "--jobs", "0"], "expected a positive number"),
        (["--capacity-sweep", "--strategies", "greedy"], "expected strategies among"),
        (["--capacity-sweep", "--seeds", "a"], "expected seeds"),
        (["--capacity-sweep", "--strategy", "none"], "--strategy picks one run"),
        (["--capacity-sweep", "--slo-per-queue"], "unrecognized arguments: --slo-per-queue"),
        (["--strategy", "none", "--capacities", "4"], "go with --capacity-sweep"),
        ([], "--strategy is required"),
        (["--report", "{tmp}/no/such/dir/r.html"], "no such directory"),
    ],
    ids=[
        "zero-slo", "slo-not-a-duration", "unreachable-capacity", "capacity-not-a-number",
        "empty-range", "zero-jobs", "unknown-strategy", "bad-seeds", "strategy-with-sweep",
        "per-queue-is-no-flag-but-the-default",
        "capacities-without-sweep", "nothing-to-run", "report-dir-missing",
    ],
)  # fmt: skip
def test_bad_flags_exit_2_with_a_message(tmp_path, capsys, extra, message):
    paths = write_trace(tmp_path, TRACE, NODES, BURSTY)
    extra = [e.format(tmp=tmp_path) for e in extra]

    try:
        code = main(simulate_argv(paths, "--json", *extra))
    except SystemExit as exit_info:  # argparse rejects a flag's value itself
        code = exit_info.code

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert message in captured.err


def test_without_matplotlib_report_names_the_extra_and_exits_2(tmp_path):
    paths = write_trace(tmp_path, TRACE, NODES, BURSTY)
    hide = (
        "import sys; sys.modules['matplotlib'] = None; "  # an import of it raises ImportError
        "from reclaimer.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    argv = simulate_argv(paths, "--report", str(tmp_path / "r.html"))

    done = subprocess.run(
        [sys.executable, "-c", hide, *argv], capture_output=True, text=True, check=False
    )

    assert done.returncode == 2
    assert "gpu-reclaim[report]" in done.stderr
    assert not (tmp_path / "r.html").exists()


def _queue_trace(tmp_path):
    """60 short LS jobs never wait; of two 2-GPU `ST` jobs of 6 h, only one fits the 2-GPU node
    at once: from 3 GPUs the pooled p95 is 0 s but ST's own is hours."""
    trace = [P(f"ls-{i}", "LS", i * 1800.0, 600.0) for i in range(60)]
    trace += [P(f"st-{i}", "ST", 0.5 * HOUR, 6 * HOUR, num_gpu=2) for i in range(2)]
    paths = write_trace(tmp_path, trace, [1, 1, 2], BURSTY)
    return simulate_argv(paths, "--capacity-sweep", "--capacities", "2-4", "--jobs", "1",
                         "--strategies", "none")  # fmt: skip


def test_by_default_each_guaranteed_queue_is_held_to_the_slo(tmp_path, capsys):
    assert main([*_queue_trace(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    verdict = out["policies"]["none"]

    assert out["rule"] == "per-queue"
    assert verdict["min_gpus"] is None  # ST waits hours at every capacity
    assert "queue st's own wait p95 is 20,520 s" in verdict["reason"]
    assert "per_queue" not in verdict  # the rule in force is already the per-queue one
    at_3 = verdict["per_capacity"][1]
    assert at_3["guaranteed_wait_p95_s"]["0"] == 0.0
    assert at_3["worst_guaranteed_queue"]["0"] == {"queue": "st", "wait_p95_s": 20520.0}


def test_slo_pooled_prints_the_per_queue_verdict_beside_the_pooled_one(tmp_path, capsys):
    assert main([*_queue_trace(tmp_path), "--json", "--slo-pooled"]) == 0
    out = json.loads(capsys.readouterr().out)
    verdict = out["policies"]["none"]

    assert out["rule"] == "pooled"
    assert verdict["min_gpus"] == 3  # the pooled p95 is 0 s from 3 GPUs
    assert any("queue st's own wait p95 is 20,520 s" in c for c in verdict["caveats"])
    assert verdict["per_queue"]["min_gpus"] is None
    assert "queue st's own wait p95 is 20,520 s" in verdict["per_queue"]["reason"]

    assert main([*_queue_trace(tmp_path), "--slo-pooled"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("SLO (pooled rule): guaranteed pooled wait p95 <= 600 s")
    none = next(line for line in lines if line.startswith("none"))
    assert "min_gpus 3  saved vs none 0 (per-queue rule: min_gpus -, saved vs none -)" in none
    assert "3: 0 / 20,520" in none  # the pooled p95 / ST's own, at 3 GPUs


def test_a_sweep_replays_under_the_contention_model_given(tmp_path, capsys):
    """Two LS jobs at demand 0.45 on one time-sliced GPU: slowed only under `pessimistic`."""
    pair = [P("ls-1", "LS", 0.0, 2 * HOUR), P("ls-2", "LS", 0.0, 2 * HOUR)]
    paths = write_trace(tmp_path, pair, [1], profile_frame([45.0] * 240))
    args = simulate_argv(paths, "--capacity-sweep", "--capacities", "1", "--strategies",
                         "timeslice", "--pool-share", "1", "--jobs", "1", "--json")  # fmt: skip
    slowdowns = []
    for model in ("fair", "pessimistic"):
        assert main([*args, "--contention", model]) == 0
        runs = json.loads(capsys.readouterr().out)["runs"]
        sliced = next(r for r in runs if r["strategy"] == "timeslice")
        assert sliced["timesliced_gpus"] == 1
        slowdowns.append(sliced["guaranteed_slowdown_p95"])
    assert slowdowns == [1.0, pytest.approx(1.45, rel=0.01)]


def test_a_sharing_strategys_empty_pool_is_a_caveat_where_it_happens(tmp_path, capsys):
    """Half of one node rounds to no node: at 1 GPU the pool is empty, from 2 it is not."""
    out, _ = _sweep(tmp_path, capsys, "--json", "--strategies", "timeslice,forecast")

    for name in ("timeslice", "forecast"):
        sliced = [r["timesliced_gpus"] for r in out["runs"] if r["strategy"] == name]
        assert sliced == [0, 1, 2, 2, 2]  # capacities 1-5: round(n x 0.5) of n 1-GPU nodes
        assert out["policies"][name]["caveats"][-1] == (
            "its time-sliced pool is empty at 1 GPUs: it time-slices nothing there (see "
            "--pool-share)"
        )
    assert not any("pool is empty" in c for c in out["policies"]["none"]["caveats"])
