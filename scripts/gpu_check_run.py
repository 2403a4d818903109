"""gpu_check's run, once the environment check has passed: collect, load, compare, serve.

1. Build the backend the CLI would build from the same flags (`build_nvml_backend`; for `--lib
   sim`, `sim_backend_for` on an emulated node whose pods include the load phases), its NVML
   library wrapped to time each energy counter read (`gpu_check_timed`), and run the exporter's
   own `CollectLoop` through the phases (`gpu_check_load`): one busy process, then two; without a
   load, one idle phase. Cycles are `--interval` apart; each phase's first cycle straddles the
   change.
2. Record the node and every cycle (`gpu_check_record`); check the collection, the load's
   numbers (`gpu_check_quant`), and nvidia-smi, run between the last loaded cycle and one more,
   so that what it reads lies between two readings of the exporter however long it takes.
3. Serve: `python -m exporter` with the same flags, scraped against the contract
   (`gpu_check_served`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import tempfile
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpu_check_env import Check
from gpu_check_load import Phase, TorchLoad, phases, sim_workloads, wants_load
from gpu_check_quant import check_energy, load_gpu, quantitative_checks
from gpu_check_record import check_collection, cycle_record, identity
from gpu_check_served import (
    NODE,
    check_scrapes,
    check_smi,
    expected_series,
    free_port,
    serve_and_scrape,
)
from gpu_check_timed import ReadTime, TimedLib

from exporter.cli import attribution_sources, build_parser
from exporter.config import ExporterConfig, load_config
from exporter.cycle import CollectLoop
from exporter.model import NodeSnapshot
from exporter.nvml.library import load_pynvml
from exporter.nvml.source import NvmlSource, build_nvml_backend
from exporter.sources import BackendParts

LEAD_S = 1.0  # the emulated load's first phase starts this long after the node is built
SETTLE_S = 1.0  # a phase's first cycle comes one driver sample period after its change


def exporter_flags(args: argparse.Namespace, port: int, gpus: int, workloads: Path) -> list[str]:
    """The CLI flags both the in-process collect loop and the served exporter are built from."""
    if args.lib == "sim":
        backend = ["--backend", "sim", "--sim.gpus", str(gpus), "--sim.mig", str(args.sim_mig)]
        backend += ["--sim.workloads", str(workloads)]
    else:
        backend = ["--backend", "nvml", "--no-collector.kubernetes"]  # no API server on a box
    return [*backend, "--node-name", NODE, "--web.listen-address", f"127.0.0.1:{port}"]


def build_parts(
    config: ExporterConfig, args: argparse.Namespace, tmp: Path
) -> tuple[BackendParts, TimedLib]:
    """The parts `exporter.cli` builds for this config, their NVML library timed; `--sim.inject`
    faults go in the emulator."""
    if args.lib == "pynvml":
        timed = TimedLib(load_pynvml())
        return build_nvml_backend(proc_root=config.procfs, lib=timed), timed
    from exporter.sim.backend import sim_backend_for  # noqa: PLC0415 (a real node never loads it)

    parts, node = sim_backend_for(config, tmp)
    for fault in args.inject:
        call, _, code = fault.partition("=")
        node.lib.inject(call, int(code))
    timed = TimedLib(node.lib)
    return replace(parts, devices=NvmlSource(timed, clock=node.clock)), timed


Reads = list[Mapping[str, ReadTime]]


def collect_phase(
    loop: CollectLoop, phase: Phase, interval: float, timed: TimedLib
) -> tuple[list[NodeSnapshot], Reads]:
    """Cycles from just after the phase's start, `interval` apart, while they fit before its
    end (three at least: the first straddles the change, and process samples, GPM and energy
    difference against a previous read), with when each read its energy counters."""
    out: list[NodeSnapshot] = []
    reads: Reads = []
    at = phase.start + SETTLE_S
    while len(out) < 3 or at < phase.end - 0.1:
        time.sleep(max(0.0, at - time.time()))
        timed.energy_reads()  # drop reads made outside a cycle
        out.append(loop.collect_once().snapshot)
        reads.append(timed.energy_reads())
        at += interval
    return out, reads


def run_check(args: argparse.Namespace, report: dict[str, Any]) -> list[Check]:
    port = free_port()
    loaded = wants_load(args.load, args.lib)
    plan = phases(time.time() + LEAD_S, args.seconds, loaded)
    args.out.mkdir(parents=True, exist_ok=True)
    workloads = args.out / "sim-workloads.yaml"
    gpus = sim_workloads(workloads, args.sim_mig, plan) if args.lib == "sim" else 0
    flags = report["exporter_argv"] = exporter_flags(args, port, gpus, workloads)
    config = load_config(vars(build_parser().parse_args(flags)), os.environ, socket.gethostname())
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        parts, timed = build_parts(config, args, Path(tmp))
        stack.callback(parts.devices.close)
        sources = attribution_sources(config, parts, stack)
        loop = CollectLoop(parts.devices, sources, hostname=NODE, interval=args.interval)
        load = TorchLoad(args.seconds + 60, stack) if loaded and args.lib == "pynvml" else None
        by_phase, reads, checks = run_phases(loop, plan, load, args, timed)
        snaps = [s for p in by_phase.values() for s in p]
        # between the last (loaded) cycle and one more: nvidia-smi reads a moment between them
        smi, report["nvidia_smi_rows"] = check_smi(
            args.nvidia_smi, snaps[-1].devices, lambda: loop.collect_once().snapshot.devices
        )
        assert isinstance(parts.devices, NvmlSource)  # both backends read through NvmlSource
        report["identity"] = identity(parts.devices, snaps[-1].devices)
        report["cycles"] = [
            cycle_record(s, p, r)
            for p, ss in by_phase.items()
            for s, r in zip(ss, reads[p], strict=True)
        ]
        report["load"] = {"pids": load.pids, "uuid": load.uuid} if load else {"sim": loaded}
        checks += check_collection(snaps, report["identity"])
        uuid = load.uuid if load else _sim_load_uuid(parts, by_phase)
        checks += numbers(by_phase, reads, uuid)
        with ExitStack() as served:  # the exporter subprocess is stopped before we go on
            families = {f for f, _ in expected_series(snaps[-1].devices)}
            scrapes = serve_and_scrape(flags, port, args.out, served, families)
        checks += check_scrapes(scrapes, snaps[-1].devices)
    return [*checks, smi]


def run_phases(
    loop: CollectLoop,
    plan: list[Phase],
    load: TorchLoad | None,
    args: argparse.Namespace,
    timed: TimedLib,
) -> tuple[dict[str, list[NodeSnapshot]], dict[str, Reads], list[Check]]:
    """Each phase's cycles and energy read times; a real load's phase starts once its process
    computes, and a load that does not start ends the run with a failed check."""
    by_phase: dict[str, list[NodeSnapshot]] = {}
    reads: dict[str, Reads] = {}
    for planned in plan:
        phase = planned
        if load is not None:
            if not load.enter(planned):
                return by_phase, reads, [Check("gpu_load", False, load.failed)]
            phase = Phase(planned.name, time.time(), time.time() + args.seconds / 2)
        by_phase[phase.name], reads[phase.name] = collect_phase(loop, phase, args.interval, timed)
    return by_phase, reads, []


def numbers(
    by_phase: dict[str, list[NodeSnapshot]], reads: dict[str, Reads], uuid: str | None
) -> list[Check]:
    if "one" in by_phase and "two" in by_phase:
        return quantitative_checks(by_phase["one"], by_phase["two"], uuid, reads["one"])
    idle = by_phase.get("idle", [])
    busiest = load_gpu(idle, None) if idle else None
    if busiest is None:
        return []
    return [check_energy(idle, busiest, reads["idle"])]


def _sim_load_uuid(parts: BackendParts, by_phase: dict[str, list[NodeSnapshot]]) -> str | None:
    """The emulated GPU that holds the load pods (their time-sliced replicas)."""
    if "one" not in by_phase or parts.podresources_file is None:
        return None
    for row in json.loads(parts.podresources_file.read_text()):
        if row["pod"] == "load-one":
            return str(row["device_ids"][0]).split("::", 1)[0]
    return None
