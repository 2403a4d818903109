"""The three gpu-reclaim dashboards as code; `python grafana/dashboards.py` rewrites the JSON.

- gpu-fleet: utilization over time, GPUs by 20% utilization bucket, idle GPU-hours per tenant,
  memory, power, temperature, profiling ratios, exporter health.
- gpu-tenants: per-namespace and per-queue utilization, per-pod utilization (shared GPUs apart),
  pod memory and processes, idle pods.
- gpu-reclaimer: dry-run and leader state, cycles, planned vs applied vs failed actions by reason,
  reclaimed GPU-hours, forecast outcomes and accuracy.

tests/ops/test_dashboards.py checks the JSON files equal `render()` and runs every expression on a
real Prometheus. Metric and recorded-rule names are the ones of gpu_contract and rules/.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fleet_board import fleet
from reclaimer_board import reclaimer
from tenants_board import tenants

HERE = Path(__file__).resolve().parent


def render() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    boards = {
        "gpu-fleet.json": fleet(),
        "gpu-tenants.json": tenants(),
        "gpu-reclaimer.json": reclaimer(),
    }
    return {
        name: json.dumps(board, indent=2, sort_keys=True) + "\n" for name, board in boards.items()
    }


def main() -> int:
    for name, text in render().items():
        (HERE / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
