"""`simulate --capacity-sweep` and `--report`: the JSON contract, the pool, and bad flags."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from simworld import BURSTY, HOUR, P, write_trace

from reclaimer.cli import main
from reclaimer.simulate.results import JSON_KEYS
from reclaimer.simulate.strategies import Strategy

# One LS job an hour for 12 hours on 1-GPU nodes, while BE jobs hold GPUs: with 1 GPU the LS
# queue waits for hours, with 4 it never waits.
TRACE = [P(f"be-{i}", "BE", 0.0, 30 * HOUR) for i in range(2)] + [
    P(f"ls-{i}", "LS", (i + 1) * HOUR, 2 * HOUR) for i in range(12)
]
NODES = [1, 1, 1, 1, 1]


def _args(paths, *extra):
    return [
        "simulate",
        "--pods", str(paths["pods"]),
        "--nodes", str(paths["nodes"]),
        "--utilization", str(paths["utilization"]),
        "--cold-start", str(paths["cold_start"]),
        *extra,
    ]  # fmt: skip


def _sweep(tmp_path, capsys, *extra):
    paths = write_trace(tmp_path, TRACE, NODES, BURSTY)
    code = main(_args(paths, "--capacity-sweep", "--capacities", "1-5", "--jobs", "1", *extra))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out), captured.err


def test_sweep_json_has_a_verdict_per_strategy_and_every_run(tmp_path, capsys):
    out, err = _sweep(tmp_path, capsys, "--json", "--slo", "30m", "--seeds", "0,1")

    assert out["slo_seconds"] == 1800.0
    assert out["seeds"] == [0, 1]
    assert set(out["policies"]) == {s.value for s in Strategy}
    for verdict in out["policies"].values():
        assert set(verdict) == {"min_gpus", "gpus_saved_vs_none", "reason", "caveats",
                                "per_capacity"}  # fmt: skip
        assert [c["gpus"] for c in verdict["per_capacity"]] == [1, 2, 3, 4, 5]
        assert set(verdict["per_capacity"][0]["guaranteed_wait_p95_s"]) == {"0", "1"}
    assert len(out["runs"]) == len(Strategy) * 5 * 2
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

    code = main(_args(paths, "--capacity-sweep", "--capacities", "4,5", "--jobs", "1"))

    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0].startswith("SLO: guaranteed pooled wait p95 <= 600 s")
    assert [line.split()[0] for line in lines[1:] if not line.startswith(" ")] == [
        s.value for s in Strategy
    ]


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
        (["--strategy", "none", "--capacities", "4"], "go with --capacity-sweep"),
        ([], "--strategy is required"),
        (["--report", "{tmp}/no/such/dir/r.html"], "no such directory"),
    ],
    ids=[
        "zero-slo", "slo-not-a-duration", "unreachable-capacity", "capacity-not-a-number",
        "empty-range", "zero-jobs", "unknown-strategy", "bad-seeds", "strategy-with-sweep",
        "capacities-without-sweep", "nothing-to-run", "report-dir-missing",
    ],
)  # fmt: skip
def test_bad_flags_exit_2_with_a_message(tmp_path, capsys, extra, message):
    paths = write_trace(tmp_path, TRACE, NODES, BURSTY)
    extra = [e.format(tmp=tmp_path) for e in extra]

    try:
        code = main(_args(paths, "--json", *extra))
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
    argv = _args(paths, "--report", str(tmp_path / "r.html"))

    done = subprocess.run(
        [sys.executable, "-c", hide, *argv], capture_output=True, text=True, check=False
    )

    assert done.returncode == 2
    assert "gpu-reclaim[report]" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_slo_per_queue_holds_each_guaranteed_queue_to_the_slo(tmp_path, capsys):
    """60 short LS jobs never wait; of two 2-GPU `ST` jobs of 6 h, only one fits the 2-GPU node
    at once: from 3 GPUs the pooled p95 is 0 s but ST's own is hours. `--slo-per-queue` then
    meets the SLO nowhere."""
    trace = [P(f"ls-{i}", "LS", i * 1800.0, 600.0) for i in range(60)]
    trace += [P(f"st-{i}", "ST", 0.5 * HOUR, 6 * HOUR, num_gpu=2) for i in range(2)]
    paths = write_trace(tmp_path, trace, [1, 1, 2], BURSTY)
    verdicts = []
    for extra in ((), ("--slo-per-queue",)):
        args = _args(paths, "--capacity-sweep", "--capacities", "2-4", "--jobs", "1", "--json")
        assert main([*args, "--strategies", "none", *extra]) == 0
        verdicts.append(json.loads(capsys.readouterr().out)["policies"]["none"])
    pooled, strict = verdicts
    assert pooled["min_gpus"] == 3 and strict["min_gpus"] is None
    at_3 = pooled["per_capacity"][1]
    assert at_3["guaranteed_wait_p95_s"]["0"] == 0.0
    assert at_3["worst_guaranteed_queue"]["0"] == {"queue": "st", "wait_p95_s": 20520.0}
    assert any("queue st's own wait p95 is 20,520 s" in c for c in pooled["caveats"])
