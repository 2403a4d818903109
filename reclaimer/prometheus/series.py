"""What a Prometheus query answers, as plain data: series of (time, value) points. Pure.

The client (`prometheus.client`) builds these from the HTTP API's JSON; everything that reads
history works on them without importing the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Series:
    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]  # (unix seconds, value); NaN kept as NaN


@dataclass(frozen=True)
class QueryResult:
    query: str
    result_type: str
    series: tuple[Series, ...]
    warnings: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        return bool(self.warnings)
