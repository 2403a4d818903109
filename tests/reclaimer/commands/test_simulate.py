"""`gpu-reclaimer simulate` end to end: output contract, exit codes, a slice of the real trace."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest
from simworld import HOUR, WORKING_4_OF_5, P, profile_frame, simulate_argv, write_trace

from reclaimer.cli import main
from reclaimer.commands import trace_paths
from reclaimer.simulate.results import JSON_KEYS
from reclaimer.simulate.strategies import Strategy

TRACE = [
    P("be-1", "BE", 0.0, 20 * HOUR),
    P("be-2", "BE", 0.0, 20 * HOUR),
    P("ls-1", "LS", 3 * HOUR, HOUR),
]


def _args(paths, *extra):
    return simulate_argv(paths, "--capacity-scale", "1", *extra)


@pytest.mark.parametrize("policy", [p.value for p in Strategy])
def test_json_output_has_exactly_the_documented_keys(tmp_path, capsys, policy):
    paths = write_trace(tmp_path, TRACE, [1, 1])
    # timeslice-tuned sizes its replicas from the pods' memory peaks: it needs a memory file
    tuned = policy == Strategy.TIMESLICE_TUNED.value
    memory = ["--memory", str(_memory_csv(tmp_path, "pod-a", 4.0))] if tuned else []

    code = main(_args(paths, "--strategy", policy, "--json", *memory))

    out = capsys.readouterr().out
    result = json.loads(out)  # nothing but JSON on stdout
    assert code == 0
    assert tuple(result) == JSON_KEYS
    assert result["strategy"] == policy
    assert set(result["wait_p95_s"]) == {"be", "ls"}
    assert result["wall_seconds"] >= 0


def test_without_json_a_table_lists_every_key(tmp_path, capsys):
    paths = write_trace(tmp_path, TRACE, [1, 1])

    code = main(_args(paths, "--strategy", "forecast"))

    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [line.split()[0] for line in lines] == list(JSON_KEYS)


def test_a_policy_file_sets_the_checkpoint_interval(tmp_path, capsys):
    paths = write_trace(tmp_path, TRACE, [1, 1], WORKING_4_OF_5)  # a busy victim loses work
    policy = tmp_path / "policy.yaml"
    policy.write_text("checkpointInterval: 1h\n")

    main(_args(paths, "--strategy", "allocation", "--json"))
    plain = json.loads(capsys.readouterr().out)
    main(_args(paths, "--strategy", "allocation", "--json", "--policy-file", str(policy)))
    saved = json.loads(capsys.readouterr().out)

    assert plain["preemptions"] == saved["preemptions"] == 1
    assert saved["lost_gpu_hours"] < plain["lost_gpu_hours"]


def _break_nodes(paths):
    pd.read_csv(paths["nodes"]).drop(columns=["gpu"]).to_csv(paths["nodes"], index=False)


def _break_utilization(paths):
    paths["utilization"].write_text("value,timestamp_anon\n1,2\n")


def _missing_pods(paths):
    paths["pods"].unlink()


@pytest.mark.parametrize(
    ("breakage", "extra", "message"),
    [
        (_missing_pods, [], "no such file"),
        (_break_nodes, [], "nodes: missing column(s) gpu"),
        (_break_utilization, [], "utilization: missing column(s) container_ip"),
        (None, ["--policy-file", "{tmp}/nope.yaml"], "cannot read"),
        (None, ["--policy-file", "{tmp}/bad.yaml"], "threshold"),
    ],
    ids=["no-pods-file", "nodes-without-gpu", "utilization-without-pod", "no-policy", "bad-policy"],
)
def test_bad_input_exits_2_with_a_message(tmp_path, capsys, breakage, extra, message):
    paths = write_trace(tmp_path, TRACE, [1, 1])
    (tmp_path / "bad.yaml").write_text("threshold: -1\nhorizon: soon\n")
    if breakage:
        breakage(paths)
    extra = [e.format(tmp=tmp_path) for e in extra]

    code = main(_args(paths, "--strategy", "forecast", "--json", *extra))

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert message in captured.err


@pytest.mark.parametrize(
    "extra",
    [["--strategy", "greedy"], ["--strategy", "none", "--capacity-scale", "0"]],
    ids=["unknown-policy", "zero-capacity"],
)
def test_bad_arguments_exit_2(tmp_path, extra):
    paths = write_trace(tmp_path, TRACE, [1, 1])
    args = [a for a in _args(paths) if a not in ("--capacity-scale", "1")]

    with pytest.raises(SystemExit) as exit_info:
        main([*args, *extra])

    assert exit_info.value.code == 2


def test_a_slice_of_the_shared_trace_replays_under_every_policy(shared_data, tmp_path, capsys):
    """Two busy days of alibaba-openb on a small cluster, gentd26 utilization (docs/data.md)."""
    pods = pd.read_csv(shared_data / "alibaba-openb" / "openb_pod_list_default.csv")
    days = pods[(pods.creation_time >= 146 * 86400) & (pods.creation_time < 148 * 86400)]
    days.to_csv(tmp_path / "pods.csv", index=False)
    common = [
        "simulate",
        "--pods",
        str(tmp_path / "pods.csv"),
        "--nodes",
        str(shared_data / "alibaba-openb" / "openb_node_list_gpu_node.csv"),
        "--utilization",
        str(shared_data / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz"),
        "--cold-start",
        str(shared_data / trace_paths.FLAGS["cold_start"].value),
        "--capacity-scale",
        "0.002",
        "--json",
    ]
    # at the default pool share this 2- and 8-GPU node slice has no pool: timeslice refuses
    assert main([*common, "--strategy", "timeslice"]) == 2
    assert "round(1 x 0.5) = 0" in capsys.readouterr().err
    results = {}
    gentd = shared_data / "alibaba-gentd26" / "pod_gpu_memory_used_bytes.csv.gz"
    memory = ["--memory", str(gentd), "--memory-peak-gib", "8"]
    for policy in Strategy:
        share = ["--pool-share", "1"] if policy is Strategy.TIMESLICE else []
        tuned = [*memory, "--pool-share", "1"] if policy is Strategy.TIMESLICE_TUNED else []
        assert main([*common, "--strategy", policy.value, *share, *tuned]) == 0
        results[policy] = json.loads(capsys.readouterr().out)
    assert results[Strategy.TIMESLICE]["timesliced_gpus"] == 2  # the 2-GPU node

    for result in results.values():
        assert result["guaranteed_preemptions"] == 0
        assert result["gpu_hours_allocated"] > 0
    assert results[Strategy.NONE]["preemptions"] == 0
    assert results[Strategy.NONE]["wait_p95_s"]["ls"] > 0  # the slice does contend
    ours, culler = results[Strategy.FORECAST], results[Strategy.THRESHOLD]
    assert ours["preemptions"] > 0
    assert ours["wrongful_preemptions"] < culler["wrongful_preemptions"]
    assert ours["lost_gpu_hours"] < culler["lost_gpu_hours"]


def test_files_not_given_are_read_from_the_traces_folder(tmp_path, capsys):
    paths = write_trace(tmp_path, TRACE, [1, 1])
    root = tmp_path / "traces"
    for flag, role in trace_paths.FLAGS.items():
        (root / role.value).parent.mkdir(parents=True, exist_ok=True)
        data = paths[flag].read_bytes()
        (root / role.value).write_bytes(gzip.compress(data) if role.value.endswith(".gz") else data)
    argv = ["simulate", "--traces-dir", str(root), "--capacity-scale", "1"]
    assert main([*argv, "--strategy", "none", "--json"]) == 0
    given = main([*_args(paths), "--strategy", "none", "--json"])
    assert given == 0
    by_default, by_flag = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert by_default | {"wall_seconds": 0} == by_flag | {"wall_seconds": 0}


def test_a_missing_default_trace_says_how_to_fetch_it(tmp_path, capsys):
    argv = ["simulate", "--traces-dir", str(tmp_path), "--strategy", "none"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no --pods given" in err and "gpu-reclaimer traces fetch" in err


def _memory_csv(tmp_path, pod: str, gib: float):
    path = tmp_path / "memory.csv"
    pd.DataFrame(
        {"timestamp_anon": [1.6e9, 1.6e9 + 60.0], "value": [gib * 2**30] * 2, "container_ip": pod}
    ).to_csv(path, index=False)
    return path


def test_a_memory_file_replays_oom_kills_on_the_time_sliced_pool(tmp_path, capsys):
    pods = [P("ls-1", "LS", 0.0, 2 * HOUR), P("ls-2", "LS", 0.0, 2 * HOUR)]
    paths = write_trace(tmp_path, [*pods, P("ls-3", "LS", 9 * HOUR, HOUR)], [1, 1])
    memory = _memory_csv(tmp_path, "pod-a", 12.0)  # the profile's pod: 12 of a T4's 16 GiB

    args = _args(paths, "--strategy", "timeslice", "--json", "--pool-share", "0.5")
    code = main([*args, "--memory", str(memory), "--memory-peak-gib", "12"])
    result = json.loads(capsys.readouterr().out)
    lighter = main([*args, "--memory", str(memory), "--memory-peak-gib", "6"])
    light = json.loads(capsys.readouterr().out)

    assert code == lighter == 0
    assert result["timesliced_gpus"] == 1
    assert result["oom_kills"] == result["guaranteed_oom_kills"] == 6
    # ls-2 restarts in place next to ls-1 until its Job's backoffLimit (6) fails it
    assert result["failed_jobs"] == result["guaranteed_failed_jobs"] == 1
    assert light["oom_kills"] == light["failed_jobs"] == 0  # 6 + 6 GiB fit a T4


def test_restarts_and_resumes_pay_the_cold_start_files_loads(tmp_path, capsys):
    paths = write_trace(tmp_path, TRACE, [1, 1])
    args = _args(paths, "--strategy", "threshold", "--json")  # culls and restarts idle BE jobs
    assert main(args) == 0
    loaded = json.loads(capsys.readouterr().out)
    plain = [a for a in args if a not in ("--cold-start", str(paths["cold_start"]))]
    assert main([*plain, "--no-cold-start"]) == 0
    free = json.loads(capsys.readouterr().out)

    assert loaded["preemptions"] == free["preemptions"] > 0
    assert free["slowdown_p95"] == 1.0  # a culled idle job loses nothing without a load
    assert loaded["slowdown_p95"] > 1.0  # each restart holds its GPU through a 20 or 40 s load


def test_a_missing_default_cold_start_file_says_how_to_get_it_or_opt_out(tmp_path, capsys):
    paths = write_trace(tmp_path, TRACE, [1, 1])
    given = _args(paths, "--strategy", "none", "--traces-dir", str(tmp_path / "empty"))
    argv = [a for a in given if a not in ("--cold-start", str(paths["cold_start"]))]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no --cold-start given" in err and "gpu-reclaimer traces fetch" in err
    assert main([*argv, "--no-cold-start"]) == 0
    with pytest.raises(SystemExit) as both:
        main([*given, "--no-cold-start"])
    assert both.value.code == 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--replicas", "1"), "2 or more replicas"),
        (("--switch-overhead", "1.5"), "must be in [0, 1)"),
        (("--pool-share", "2"), "must be in [0, 1]"),
        (("--memory-peak-gib", "0"), "more than 0 GiB"),
    ],
)
def test_bad_time_slicing_flags_exit_2_with_a_message(tmp_path, capsys, extra, message):
    paths = write_trace(tmp_path, TRACE, [1, 1])
    with pytest.raises(SystemExit) as exit_info:
        main(_args(paths, "--strategy", "timeslice", *extra))
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_memory_file_without_the_profiles_pods_exits_2_saying_which(tmp_path, capsys):
    paths = write_trace(tmp_path, TRACE, [1, 1])
    memory = _memory_csv(tmp_path, "another-pod", 1.0)

    code = main(_args(paths, "--strategy", "timeslice", "--memory", str(memory)))

    assert code == 2
    assert "no series for 1 utilization pod(s), e.g. pod-a" in capsys.readouterr().err


HALF_BUSY = profile_frame([45.0] * 240)  # demand 0.45 throughout
PAIR = [P("ls-1", "LS", 0.0, 2 * HOUR), P("ls-2", "LS", 0.0, 2 * HOUR)]


def test_the_contention_flag_picks_the_model_two_pods_at_045_share_by(tmp_path, capsys):
    paths = write_trace(tmp_path, PAIR, [1], HALF_BUSY)
    args = _args(paths, "--strategy", "timeslice", "--pool-share", "1", "--json")

    slowdowns = []
    for model in ("fair", "pessimistic"):
        assert main([*args, "--contention", model]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["guaranteed_wait_p95_s"] == 0.0  # both on the one GPU at once
        slowdowns.append(result["guaranteed_slowdown_p95"])

    assert slowdowns == [1.0, pytest.approx(1.45, rel=0.01)]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--contention", "harsh"), "invalid choice: 'harsh'"),
        (
            ("--contention", "pessimistic", "--switch-overhead", "0.15"),
            "--switch-overhead is the fair model's",
        ),
    ],
    ids=["unknown-model", "overhead-with-pessimistic"],
)
def test_bad_contention_flags_exit_2_with_a_message(tmp_path, capsys, extra, message):
    paths = write_trace(tmp_path, PAIR, [1, 1], HALF_BUSY)
    try:
        code = main(_args(paths, "--strategy", "timeslice", *extra))
    except SystemExit as exit_info:  # argparse rejects a flag's value itself
        code = exit_info.code
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert message in captured.err


def test_a_one_node_trace_time_slices_its_gpu_for_two_busy_jobs(tmp_path, capsys):
    paths = write_trace(tmp_path, PAIR, [1], profile_frame([80.0] * 240))
    args = ["--replicas", "2", "--pool-share", "1", "--json"]

    assert main(_args(paths, "--strategy", "timeslice", *args)) == 0
    result = json.loads(capsys.readouterr().out)

    assert result["timesliced_gpus"] == 1
    assert result["guaranteed_wait_p95_s"] == 0.0  # they share instead of one queueing
    assert result["guaranteed_slowdown_p95"] == pytest.approx(0.8 / 0.475, rel=0.01)


def test_an_empty_pool_refuses_timeslice_and_is_said_for_forecast(tmp_path, capsys):
    """One 8-GPU node and a 2-GPU pod: the node stays whole for it, so nothing is time-sliced."""
    pods = [*PAIR, P("st-1", "ST", 0.0, HOUR, num_gpu=2)]
    paths = write_trace(tmp_path, pods, [8], profile_frame([80.0] * 240))
    why = (
        "the time-sliced pool is empty (--pool-share takes round(n x share) of the n nodes of "
        "each GPU count: 1 node(s) of 8 GPU(s): round(1 x 1) = 1, less the one kept whole for "
        "the trace's multi-GPU pods)"
    )

    assert main(_args(paths, "--strategy", "timeslice", "--pool-share", "1", "--json")) == 2
    refused = capsys.readouterr()
    assert refused.out == ""
    assert f"{why}: timeslice would time-slice nothing and replay none" in refused.err

    assert main(_args(paths, "--strategy", "forecast", "--pool-share", "1", "--json")) == 0
    said = capsys.readouterr()
    assert json.loads(said.out)["timesliced_gpus"] == 0
    assert f"{why}: forecast replays reclaim only, time-slicing nothing" in said.err
