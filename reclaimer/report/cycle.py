"""What one control cycle leaves behind for people to read: `/plan`, the status page, the logs.

The controller (`reclaimer.runtime.controller`) builds one `CycleReport` per cycle and keeps the
last; the HTTP handlers only ever read it. It carries the plan and, beside it, what the plan
was made from that an operator wants to see: the data quality, the fleet summary, every job's
forecast and its recent utilization (`usage`), and what the actuator answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from reclaimer.model import ActionResult, DataQuality, Forecast, Plan
from reclaimer.report.fleet import FleetSummary
from reclaimer.report.usage import JobUsage


class CycleResult(StrEnum):
    SUCCESS = "success"
    SKIPPED = "skipped"
    ERROR = "error"


@dataclass(frozen=True)
class CycleReport:
    result: CycleResult
    at: float
    duration: float
    message: str
    plan: Plan | None = None
    quality: DataQuality | None = None
    summary: FleetSummary | None = None
    forecasts: Mapping[str, Forecast] = field(default_factory=lambda: MappingProxyType({}))
    outcomes: tuple[ActionResult, ...] = ()  # the actuator's results, in plan order
    acted: bool = False  # the plan reached the actuator
    requests: int = 0  # Prometheus requests this cycle
    usage: Mapping[str, JobUsage] = field(default_factory=lambda: MappingProxyType({}))
    """Job key -> its recent utilization, for every job holding GPUs (`report.usage`)."""
