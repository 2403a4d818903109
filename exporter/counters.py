"""`--collectors FILE`: which DCGM families to serve, in dcgm-exporter's counters CSV format.

A line is `DCGM field, Prometheus type, help` (spaces around the commas ignored); a line that
starts with `#` is a comment, blank lines are skipped, as dcgm-exporter's `ReadCSVFile` /
`ExtractCounters` read it. Each DCGM family the exporter serves (`gpu_contract.DEVICE_METRICS`)
may be chosen with its own type (a family is a gauge or a counter by its meaning, so another type
is an error); the HELP served stays dcgm-exporter's default. dcgm-exporter's `label` type names a
field carried as a label: `DCGM_FI_DRIVER_VERSION` is one on every device series already. A
default field gpu-exporter leaves out (`gpu_contract.LEFT_OUT`) is skipped with its reason, so
dcgm-exporter's own default file works unchanged. Any other field, a line without three fields,
or an unknown type is an error; every error is reported at once (the CLI exits 2). The per-pod,
XID-event and self families are not DCGM's and are always served. The choice also trims what is
read: the NVML source makes no call whose every family is left out (`NvmlSource.watch`).

Pure: `parse_counters(text)` takes the file's text; the CLI reads the file.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from gpu_contract import BY_NAME, DCGM_NAMES, LEFT_OUT
from gpu_contract.dcgm import LABEL_TYPE

PROM_TYPES = ("gauge", "counter", "histogram", "summary", LABEL_TYPE)  # dcgm-exporter's


@dataclass(frozen=True)
class CounterChoice:
    families: frozenset[str]  # the DCGM families to serve
    skipped: tuple[str, ...]  # "FIELD: why", for fields left out or carried as labels


class CountersError(ValueError):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def parse_counters(text: str) -> CounterChoice:
    """Pure: the families a counters CSV chooses, or CountersError listing every bad line."""
    families: set[str] = set()
    skipped: list[str] = []
    errors: list[str] = []
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    for n, line in lines:
        if line.startswith("#"):
            continue
        row = [cell.strip() for cell in next(csv.reader([line], skipinitialspace=True), [])]
        error = _row_error(row)
        if error is not None:
            errors.append(f"line {n}: {error}")
        elif row[0] in DCGM_NAMES:
            families.add(row[0])
        else:
            skipped.append(f"{row[0]}: {LEFT_OUT[row[0]]}")
    if errors:
        raise CountersError(errors)
    return CounterChoice(frozenset(families), tuple(skipped))


def _row_error(row: list[str]) -> str | None:
    """Why a record cannot be taken, or None."""
    if len(row) != 3:
        return f"expected `DCGM field, type, help` (3 fields), got {len(row)}: {row!r}"
    name, kind = row[0], row[1]
    if kind not in PROM_TYPES:
        return f"{name}: unknown Prometheus type {kind!r} (one of {', '.join(PROM_TYPES)})"
    if name in LEFT_OUT:
        return None
    if name not in DCGM_NAMES:
        return f"{name} is not a DCGM field gpu-exporter serves (see docs/metrics.md)"
    served = str(BY_NAME[name].kind)
    if kind != served:
        return f"{name} is a {served} here, not a {kind}"
    return None
