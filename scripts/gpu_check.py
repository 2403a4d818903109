"""One-command check of the exporter's NVML path on a real GPU machine (or the emulator).

    .venv/bin/python scripts/gpu_check.py [--lib pynvml|sim] [--seconds 24] [--out DIR]
    python3 scripts/gpu_check.py --out "$OUT"          # a bare GPU box, without the .venv

First, on whatever Python runs it, the environment: the Python version and every module the
check and the exporter import (`gpu_check_env`, standard library only); when that fails, the
JSON report still says what is missing. Then, through the exporter's own code
(`gpu_check_run`): the collect loop over a known load (one busy process, then two; torch on a GPU
box, scripted pods on the emulator), the readings checked against each other and against
nvidia-smi (`gpu_check_quant`, `gpu_check_served`), and the served exporter against the metric
contract. Then an experiment (`gpu_check_window`): what `nvmlDeviceGetProcessUtilization`'s
smUtil averages over, asked with several lastSeenTimeStamp values about a process with a known
busy/idle pattern; the answer is recorded for the exporter's reading to be checked against.
Writes gpu_check.json and the scrapes to --out, prints PASS/FAIL/SKIP per check, exits
0 only if no check failed (a skipped check, e.g. no nvidia-smi, is not a failure).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gpu_check_env import Check, environment_checks, write_report  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--lib", choices=("pynvml", "sim"), default="pynvml")
    p.add_argument("--seconds", type=float, default=24.0, help="collection length (both phases)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between cycles (>= 1)")
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu-check-out"))
    p.add_argument("--nvidia-smi", default=shutil.which("nvidia-smi"), help="path; default PATH")
    p.add_argument(
        "--load",
        choices=("auto", "torch", "none"),
        default="auto",
        help="one then two busy processes during the check (auto: torch with pynvml; "
        "scripted pods with --lib sim)",
    )
    p.add_argument("--sim.mig", dest="sim_mig", type=int, default=0, help="MIG-enabled sim GPUs")
    p.add_argument("--sim.inject", dest="inject", action="append", default=[], metavar="CALL=CODE")
    args = p.parse_args(argv)
    if args.interval < 1.0:
        p.error("--interval must be at least 1 s (NVML samples processes about once a second)")
    if args.lib == "sim" and args.load == "torch":
        p.error("--load torch needs --lib pynvml")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report: dict[str, Any] = {"lib": args.lib, "started_at": time.time()}
    checks = environment_checks(args.lib)
    if all(c.ok for c in checks):
        try:
            from gpu_check_run import run_check  # noqa: PLC0415 (after the imports are known)

            checks += run_check(args, report)
            from gpu_check_load import wants_load  # noqa: PLC0415
            from gpu_check_window_run import window_check  # noqa: PLC0415

            checks.append(window_check(args, report, wants_load(args.load, args.lib)))
        except Exception as exc:  # report what broke instead of a bare traceback on the device
            checks.append(Check("run", False, f"{type(exc).__name__}: {exc}"))
            report["traceback"] = traceback.format_exc()
    return 0 if write_report(args.out, report, checks) else 1


if __name__ == "__main__":
    sys.exit(main())
