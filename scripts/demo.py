"""The one-command demo: a simulated GPU fleet, a local Prometheus with days of history, the
reclaimer planning in dry-run against the example cluster of deploy/examples.

Steps (each child process in the work directory's logs, all stopped on exit or Ctrl-C):
1. one `gpu-exporter --backend sim` per node of deploy/examples/sim/cluster-state.yaml, its pods
   named after the example jobs (deploy/examples/sim/<node>.workloads.yaml);
2. `--days` of history for the same simulated pods (`python -m exporter.sim.backfill`), loaded with
   `promtool tsdb create-blocks-from openmetrics`;
3. Prometheus (temp data dir, free loopback port) scraping the exporters with rules/ loaded; the
   recording rules' history is backfilled too (`promtool tsdb create-blocks-from rules`), then
   Prometheus restarts on the completed data;
4. `gpu-reclaimer run --once` in dry-run against Prometheus and the example cluster (examples +
   runtime state): what it would do and why; then the fleet's utilization summary;
5. unless `--once`: the reclaimer keeps running (`/metrics`, `/plan`, the status page `/`),
   scraped by Prometheus, until Ctrl-C; the URLs are printed.
Progress goes to stderr, reports to stdout (`--json` prints the reclaimer's plan as JSON).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from demo_stack import (
    POLICY,
    PROMETHEUS,
    PROMTOOL,
    Children,
    DemoError,
    add_target_labels,
    backfill_args,
    cluster_file,
    demo_rules,
    exporter_args,
    free_port,
    http_get,
    prom_query,
    prometheus_args,
    prometheus_config,
    reclaimer_rules,
    run,
    sim_nodes,
    wait_for,
)
from demo_summary import fleet_summary


class Demo:
    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.children = Children(workdir)
        self.t0 = time.monotonic()
        self.nodes = sim_nodes()
        self.exporters = {node: f"127.0.0.1:{free_port()}" for node in self.nodes}
        self.reclaimer = f"127.0.0.1:{free_port()}"
        self.prom_port = free_port()
        self.prom = f"http://127.0.0.1:{self.prom_port}"
        self.data = workdir / "tsdb"
        self.config = prometheus_config(
            workdir, list(self.exporters.values()), self.reclaimer, demo_rules(workdir)
        )

    def say(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    def start_exporters(self) -> None:
        for node, addr in self.exporters.items():
            port = int(addr.rsplit(":", 1)[1])
            self.children.start(f"exporter-{node}", exporter_args(node, self.nodes[node], port))

    def backfill(self, end: float) -> None:
        days = self.args.days
        raw = {node: self.workdir / f"{node}.exporter.txt" for node in self.nodes}
        procs = [
            self.children.start(
                f"backfill-{node}", backfill_args(node, self.nodes[node], days, end, raw[node])
            )
            for node in self.nodes
        ]
        for proc in procs:
            if proc.wait() != 0:
                raise DemoError(f"exporter.sim.backfill failed: see {self.workdir}/backfill-*.log")
            self.children.stop(proc)
        for node, path in raw.items():
            labelled = path.with_suffix(".om")
            add_target_labels(
                path, labelled, {"job": "gpu-exporter", "instance": self.exporters[node]}
            )
            cmd = [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics"]
            run([*cmd, "--max-block-duration=96h", str(labelled), str(self.data)], "promtool")
            path.unlink()
            labelled.unlink()

    def start_prometheus(self) -> None:
        self.prometheus = self.children.start(
            "prometheus", prometheus_args(self.config, self.data, self.prom_port)
        )
        wait_for("prometheus", lambda: http_get(f"{self.prom}/-/ready") != b"", self.children, 60)

    def backfill_rules(self, start: float, end: float) -> None:
        out = self.workdir / "rule-blocks"
        rules = reclaimer_rules(self.workdir)
        run(
            [PROMTOOL, "tsdb", "create-blocks-from", "rules", f"--start={start:.0f}",
             f"--end={end:.0f}", f"--url={self.prom}", f"--output-dir={out}",
             "--eval-interval=60s", "--quiet", str(rules)],
            "promtool create-blocks-from rules", timeout=300,
        )  # fmt: skip
        self.say("restarting Prometheus with the recorded history")
        self.children.stop(self.prometheus)
        for block in out.iterdir():
            if block.is_dir():
                block.rename(self.data / block.name)
        self.start_prometheus()

    def wait_live(self) -> None:
        fresh = (
            "time() - max(timestamp(gpu_pod_allocated)) < 15"
            " and time() - max(timestamp(namespace_pod:gpu_pod_utilization_ratio:avg5m)) < 30"
        )
        targets = len(self.exporters)
        wait_for(
            "live scrapes and recording rules",
            lambda: (
                len(prom_query(self.prom, 'up{job="gpu-exporter"} == 1')) == targets
                and bool(prom_query(self.prom, fresh))
            ),
            self.children,
            90,
        )

    def reclaimer_args(self, cluster: Path) -> list[str]:
        return [
            sys.executable, "-m", "reclaimer", "run", f"--prometheus-url={self.prom}",
            f"--cluster-file={cluster}", f"--policy-file={POLICY}",
            f"--web.listen-address={self.reclaimer}", f"--history-window={self.args.window}",
        ]  # fmt: skip

    def first_report(self, cluster: Path) -> None:
        cmd = [*self.reclaimer_args(cluster), "--once"] + (["--json"] if self.args.json else [])
        self.say("gpu-reclaimer run --once (dry-run)")
        out = run(cmd, "gpu-reclaimer run --once", timeout=180)
        if not self.args.json:
            print("\n=== What the reclaimer would do (dry-run) ===")
        print(out.rstrip(), flush=True)
        if not self.args.json:
            print("\n=== Fleet utilization ===")
            print(fleet_summary(self.prom, self.args.days), flush=True)

    def serve(self, cluster: Path) -> None:
        self.children.start("reclaimer", [*self.reclaimer_args(cluster), "--interval=30s"])
        wait_for(
            "reclaimer",
            lambda: bool(http_get(f"http://{self.reclaimer}/healthz")),
            self.children,
            60,
        )
        urls = [f"  exporter {n} /metrics:  http://{a}/metrics" for n, a in self.exporters.items()]
        urls += [
            f"  Prometheus:             {self.prom}",
            f"  reclaimer /metrics:     http://{self.reclaimer}/metrics",
            f"  reclaimer /plan:        http://{self.reclaimer}/plan",
            f"  status page:            http://{self.reclaimer}/",
        ]
        print("\n=== Running (Ctrl-C to stop) ===\n" + "\n".join(urls), flush=True)
        while True:
            self.children.check()
            time.sleep(1)

    def run(self) -> int:
        for tool in (PROMETHEUS, PROMTOOL):
            if not Path(tool).exists():
                raise DemoError(f"{tool} not found: run `make deps` (Debian package prometheus)")
        self.say(f"work directory {self.workdir}")
        self.start_exporters()
        end = time.time()
        self.say(f"backfilling {self.args.days:g} days of history for {len(self.nodes)} nodes")
        self.backfill(end)
        started = time.time()
        self.start_prometheus()
        self.say("backfilling the history of the recording rules the reclaimer reads")
        self.backfill_rules(end - self.args.days * 86400, started)
        self.wait_live()
        self.say("Prometheus has history and live data")
        cluster = cluster_file(self.workdir)
        self.first_report(cluster)
        self.say("first report done")
        if not self.args.once:
            self.serve(cluster)
        return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--once", action="store_true", help="exit after the first report")
    p.add_argument("--json", action="store_true", help="print the plan as JSON (with --once)")
    p.add_argument("--days", type=float, default=3.0, help="history to backfill (default 3)")
    p.add_argument("--window", default="24h", help="reclaimer history window (default 24h)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    return p.parse_args(argv)


def _terminate(signum: int, _frame: object) -> None:
    """The first SIGTERM stops the demo; later ones (a supervisor such as make or timeout often
    sends the group another) are ignored, so they cannot cut the children's shutdown short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    workdir = Path(tempfile.mkdtemp(prefix="gpu-reclaim-demo-"))
    demo = Demo(args, workdir)
    try:
        return demo.run()
    except DemoError as err:
        print(f"demo failed: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopping", file=sys.stderr)
        return 0
    finally:
        demo.children.stop_all()
        if args.keep:
            print(f"work directory kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
