"""`simulate` on a node list that gives each node's device memory (an `export-history` export):
the memory file's bytes replay as measured, so no `--memory-peak-gib` value applies, in one run
or in a sweep (`commands.memory_flags`, `commands.sweep_grid`, `sim_sharing.memory.peak_for`)."""

from __future__ import annotations

import json

import pandas as pd
from simworld import HOUR, STEP, P, write_trace

from reclaimer.cli import main

# Two 2-hour LS jobs at once (and one late, to end the replay later), on 16 GiB devices
TRACE = [P("ls-1", "LS", 0.0, 2 * HOUR), P("ls-2", "LS", 0.0, 2 * HOUR)]
TRACE += [P("ls-3", "LS", 5 * HOUR, 600)]
DEVICE_MIB = 16 * 1024.0


def _write(tmp_path, gpus: list[int]) -> list[str]:
    """The trace's files, its nodes measured at 16 GiB, and pod-a (every job's profile) holding
    6 GiB throughout: two fit one device as measured (12 GiB), not scaled to 16 GiB each."""
    paths = write_trace(tmp_path, TRACE, gpus)
    nodes = pd.read_csv(paths["nodes"]).drop(columns="model").assign(gpu_memory_mib=DEVICE_MIB)
    nodes.to_csv(paths["nodes"], index=False)
    memory = tmp_path / "memory.csv"
    times = [1.6e9 + STEP * i for i in range(240)]
    frame = {"timestamp_anon": times, "value": 6 * 2**30, "container_ip": "pod-a"}
    pd.DataFrame(frame).to_csv(memory, index=False)
    return [
        "simulate", "--pods", str(paths["pods"]), "--nodes", str(paths["nodes"]),
        "--utilization", str(paths["utilization"]), "--cold-start", str(paths["cold_start"]),
        "--memory", str(memory), "--pool-share", "1", "--json",
    ]  # fmt: skip


def test_one_run_replays_the_bytes_as_measured(tmp_path, capsys):
    """6 + 6 GiB on a 16 GiB device: no OOM kill; read at `--memory-peak-gib` 16 (its default),
    each pod would hold 16 GiB and they could not share."""
    argv = [*_write(tmp_path, [1]), "--strategy", "timeslice"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)

    assert out["memory_replay"] == "as measured"
    assert out["timesliced_gpus"] == 1
    assert out["oom_kills"] == 0
    assert out["guaranteed_wait_p95_s"] == 0.0  # the two ran side by side


def test_a_sweep_on_measured_devices_sweeps_pool_draws_with_no_memory_value(tmp_path, capsys):
    argv = [*_write(tmp_path, [1, 1]), "--capacity-sweep", "--capacities", "1-2", "--jobs", "1"]
    assert main([*argv, "--strategies", "timeslice,timeslice-tuned", "--pool-seeds", "0,1"]) == 0
    out = json.loads(capsys.readouterr().out)

    assert [(s["memory_peak_gib"], s["pool_seed"]) for s in out["settings"]] == [
        (None, 0), (None, 1),
    ]  # fmt: skip
    assert "memory_sensitivity" not in out and "break_even_gib" not in out
    assert out["rule"] == "per-queue" and out["load"]["profile_offsets"] == "arrival"
    runs = [r for s in out["settings"] for r in s["runs"] if r["strategy"] != "none"]
    assert {r["memory_replay"] for r in runs} == {"as measured"}
    assert {r["oom_kills"] for r in runs} == {0}
    tuned = [r["tuned_replicas"] for r in runs if r["strategy"] == "timeslice-tuned"]
    assert {t["unknown"]["device_gib"] for t in tuned} == {16.0}  # 2 x 6 <= 14.4: 2 replicas
    assert {t["unknown"]["replicas"] for t in tuned} == {2}
    assert out["pool_draws"][0]["memory_peak_gib"] is None


def test_a_list_of_memory_values_is_refused_on_measured_devices(tmp_path, capsys):
    argv = [*_write(tmp_path, [1]), "--capacity-sweep", "--memory-peak-gib", "8,16"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "gives each node's device memory" in err and "8,16" in err
