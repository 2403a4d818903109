"""A real Prometheus for tests: /usr/bin/prometheus on a free loopback port with a temp data dir.

`start_prometheus()` writes a config (optional scrape targets and rule files), optionally backfills
history first (`promtool tsdb create-blocks-from openmetrics` on OpenMetrics text the test writes
from a known pattern), starts the server, waits for `/-/ready`, and always stops it.
Backfilled samples must be younger than the retention (15 d) and older than ~2 h to land in
blocks cleanly; `history_base()` gives a suitable aligned start time.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from livehistory import last_values, serving

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

Sample = tuple[float, float]  # (unix seconds, value)
SeriesSpec = tuple[str, Mapping[str, str], Sequence[Sample]]  # (metric, labels, samples)


@dataclass(frozen=True)
class PromServer:
    url: str
    data_dir: Path
    port: int
    process: subprocess.Popen[bytes]


def require_prometheus() -> None:
    if not (Path(PROMETHEUS).exists() and Path(PROMTOOL).exists()):
        pytest.fail("prometheus/promtool not installed: run `make deps`", pytrace=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def history_base(hours_back: float = 30.0, step: float = 3600.0) -> float:
    """An hour-aligned time `hours_back` ago: old enough to backfill, young enough to keep."""
    return math.floor((time.time() - hours_back * 3600) / step) * step


def openmetrics(series: Iterable[SeriesSpec], types: Mapping[str, str] | None = None) -> str:
    """OpenMetrics text for promtool: samples grouped by family, sorted by time, `# EOF`."""
    by_family: dict[str, list[str]] = {}
    for name, labels, samples in series:
        lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        lines = by_family.setdefault(name, [])
        lines += [f"{name}{{{lab}}} {v!r} {t:.3f}" for t, v in samples]
    out = []
    for name, lines in by_family.items():
        out.append(f"# TYPE {name} {(types or {}).get(name, 'gauge')}")
        out += lines
    return "\n".join(out) + "\n# EOF\n"


def backfill(text: str, data_dir: Path) -> None:
    src = data_dir.parent / "backfill.om"
    src.write_text(text, encoding="utf-8")
    data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(src), str(data_dir)],
        check=True,
        capture_output=True,
        timeout=120,
    )


def stop_process(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited after `grace` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_until(url: str, proc: subprocess.Popen[bytes], promql: str, what: str) -> None:
    """Until `promql` answers something; the deadline only gives up on a Prometheus that never
    does."""
    deadline = time.monotonic() + 300.0
    query = urllib.parse.urlencode({"query": promql})
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with {proc.returncode}")
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=30) as r:
            if json.loads(r.read())["data"]["result"]:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"prometheus: gave up waiting for {what}")
        time.sleep(0.2)


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 300.0) -> None:
    """Until Prometheus says it is ready; `timeout` only gives up on one that never is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/-/ready", timeout=30) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("prometheus did not become ready in time")


@contextmanager
def start_prometheus(
    workdir: Path,
    *,
    history: str | None = None,
    carry_on: bool = False,
    scrape_targets: Sequence[str] = (),
    scrape_interval: str = "1s",
    rule_files: Sequence[Path] = (),
    target_labels: Mapping[str, str] | None = None,
    flags: Sequence[str] = (),
) -> Iterator[PromServer]:
    """Run Prometheus until the block exits; `history` is OpenMetrics text to backfill first.

    With `carry_on`, the history goes on live (`livehistory`): each series' last value is
    scraped too, so the data stays fresh however long the block lasts. `target_labels` are added
    to every scraped series of `scrape_targets` (a static_configs `labels` block); `flags` are
    extra command-line flags (e.g. `--query.max-samples=1000`).
    """
    require_prometheus()
    data_dir = workdir / "tsdb"
    if history is not None:
        backfill(history, data_dir)
    with ExitStack() as stack:
        live = stack.enter_context(serving(last_values(history))) if history and carry_on else None
        jobs = _scrape_jobs(scrape_targets, target_labels, live)
        config = {
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": jobs,
        }
        cfg = workdir / "prometheus.yml"
        cfg.write_text(yaml.safe_dump(config), encoding="utf-8")
        port = free_port()
        log = stack.enter_context((workdir / "prometheus.log").open("wb"))
        proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={cfg}",
                f"--storage.tsdb.path={data_dir}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=30d",
                "--log.level=warn",
                *flags,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(stop_process, proc)
        url = f"http://127.0.0.1:{port}"
        _wait_ready(url, proc)
        if live is not None:  # target discovery lags a few seconds behind readiness
            _wait_until(url, proc, 'up{job="history"} == 1', "the live history scraped")
        yield PromServer(url, data_dir, port, proc)


def _scrape_jobs(
    targets: Sequence[str], labels: Mapping[str, str] | None, live: str | None
) -> list[dict[str, object]]:
    jobs: list[dict[str, object]] = []
    if targets:
        static: dict[str, object] = {"targets": list(targets)}
        if labels:
            static["labels"] = dict(labels)
        jobs.append({"job_name": "gpu-exporter", "static_configs": [static]})
    if live is not None:  # the scraped samples continue the backfilled series, labels and all
        drop = {"action": "labeldrop", "regex": "job|instance"}
        jobs.append(
            {
                "job_name": "history",
                "static_configs": [{"targets": [live]}],
                "metric_relabel_configs": [drop],
            }
        )
    return jobs
