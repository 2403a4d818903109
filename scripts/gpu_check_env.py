"""gpu_check's first step, on whatever Python the GPU box has: can the check run here at all?

Standard library only, and syntax Python 3.7 still runs (annotations are never evaluated), so
that on a bare box (a system python3 without the project's packages) the check still says what
is missing, in its JSON report, instead of dying on an import. `environment_checks` reports the
Python version (the exporter needs 3.11) and every module the chosen path imports: the
exporter's own packages and the third-party ones behind them (pynvml from nvidia-ml-py, aiohttp;
PyYAML for the emulator), each with the pip package that provides it. `Check` and
`write_report` are shared by every phase.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MIN_PYTHON = (3, 11)
# module -> the pip package that provides it
THIRD_PARTY = {"aiohttp": "aiohttp", "pynvml": "nvidia-ml-py", "yaml": "PyYAML"}
EXPORTER_MODULES = ("gpu_contract", "exporter.cli", "exporter.cycle", "exporter.nvml.source")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: skipped (nothing to check against here)
    detail: str


def needed_modules(lib: str) -> list[str]:
    """The third-party modules the check imports for `lib` (pynvml or sim)."""
    return ["aiohttp", "pynvml" if lib == "pynvml" else "yaml"]


def environment_checks(lib: str, version: Any = None) -> list[Check]:
    """Python version, then imports; the imports are only tried on a Python that can run them."""
    version = tuple(version or sys.version_info[:3])
    shown = ".".join(str(v) for v in version)
    python = Check(
        "python",
        version[:2] >= MIN_PYTHON,
        f"Python {shown} at {sys.executable} (needs {MIN_PYTHON[0]}.{MIN_PYTHON[1]}+)",
    )
    if not python.ok:
        return [python, Check("imports", None, "not tried: this Python is too old")]
    missing = []
    for module in needed_modules(lib):
        try:
            importlib.import_module(module)
        except Exception as exc:  # ImportError, or a broken install
            missing.append(f"{module} (pip install {THIRD_PARTY[module]}): {exc}")
    if not missing:
        for module in EXPORTER_MODULES:
            try:
                importlib.import_module(module)
            except Exception as exc:
                missing.append(f"{module}: {type(exc).__name__}: {exc}")
    detail = "; ".join(missing) if missing else "all found"
    if missing:
        detail += " -- install the project (make deps) or: pip install " + " ".join(
            sorted(THIRD_PARTY[m] for m in needed_modules(lib))
        )
    return [python, Check("imports", not missing, detail)]


def write_report(out: Path, report: dict[str, Any], checks: list[Check]) -> bool:
    """Write gpu_check.json, print one line per check, return whether nothing failed."""
    report["elapsed_s"] = round(time.time() - report["started_at"], 1)
    report["checks"] = [asdict(c) for c in checks]
    report["passed"] = all(c.ok is not False for c in checks)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    for c in checks:
        status = {True: "PASS", False: "FAIL", None: "SKIP"}[c.ok]
        print(f"{status} {c.name}: {c.detail[:300]}")
    verdict = "PASS" if report["passed"] else "FAIL"
    print(f"{verdict} in {report['elapsed_s']} s -> {out / 'gpu_check.json'}")
    return bool(report["passed"])
