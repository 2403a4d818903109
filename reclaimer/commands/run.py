"""`gpu-reclaimer run`: the imperative shell that wires the controller to the world.

Everything that touches the wall clock, signals, the network listener, files and credentials is
here; the controller below it only gets callables and an injected clock. Dry-run is the default:
without `--apply` the actuator sends server-side dry-runs and the cluster does not change.
`--once` runs one cycle, prints the fleet summary and the plan (a table on a terminal, JSON with
`--json`) and exits 0, or 1 when the cycle could not plan on trustworthy data (Prometheus
unreachable, stale or partial data, cluster unreadable). Exit 2 is a usage error: a malformed
policy at startup (every error listed, before anything is contacted; the loop re-reads the file
when it changes and keeps its last good policy when a new version is invalid, never exiting),
`--apply` with `--cluster-file`, a bad flag value, or `--leader-elect` when another replica holds
the Lease.
SIGTERM/SIGINT in the loop: the cycle in flight (and its actions) finishes, the lease is released,
exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from reclaimer.commands.prometheus_flags import add_prometheus_arguments, prometheus_credentials
from reclaimer.policy.settings import Policy
from reclaimer.prometheus.auth import CredentialError
from reclaimer.prometheus.client import PromClient
from reclaimer.prometheus.history import HistoryParams, MetricsSource
from reclaimer.report.cycle import CycleReport, CycleResult
from reclaimer.report.fleet import render as render_fleet
from reclaimer.report.plan_table import render_plan
from reclaimer.runtime.controller import Controller, ControllerConfig
from reclaimer.runtime.liveness import Liveness, liveness_bound
from reclaimer.runtime.notify import DEFAULT_SECRET_DIR
from reclaimer.runtime.policy_file import PolicyFeed, PolicyFile, PolicyFileError
from reclaimer.runtime.server import PROBES, make_app, report_dict
from reclaimer.runtime.telemetry import ReclaimerMetrics
from reclaimer.runtime.wiring import UsageError, Wiring, wire
from reclaimer.units import parse_duration
from webconfig.address import parse_listen_address
from webconfig.flags import WebFlagError, add_web_arguments, web_settings
from webconfig.server import serve

log = logging.getLogger("gpu_reclaimer")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_prometheus_arguments(p)
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube)")
    p.add_argument(
        "--policy-file",
        dest="policy_file",
        metavar="POLICY.yaml",
        help="reclaim policy YAML (default: built-in)",
    )
    p.add_argument("--apply", action="store_true", help="act on the cluster (default: dry-run)")
    p.add_argument("--once", action="store_true", help="run one cycle, print the plan, exit")
    p.add_argument(
        "--webhook-secret-dir",
        default=DEFAULT_SECRET_DIR,
        help="where the webhook Secret is mounted: a file per policy warning.webhooks secretKey",
    )
    p.add_argument("--interval", default="60s", help="time between cycles (default 60s)")
    p.add_argument(
        "--cycle-timeout",
        default="5m",
        help="deadline for one cycle's cluster and Prometheus reads (default 5m); /healthz fails "
        "once no cycle has finished for --interval + 2 x --cycle-timeout",
    )
    p.add_argument("--web.listen-address", dest="listen", default=":9401")
    add_web_arguments(p)
    p.add_argument(
        "--metrics-source",
        choices=[s.value for s in MetricsSource],
        default=MetricsSource.GPU_RECLAIM.value,
        help="gpu-reclaim exporter's per-pod metrics, or dcgm-exporter's pod-labelled GPU_UTIL",
    )
    p.add_argument("--cluster-file", metavar="DUMP.yaml", help="plan from a kubectl dump")
    p.add_argument("--json", action="store_true", help="with --once: print JSON, not a table")
    p.add_argument("--leader-elect", action="store_true", help="hold a Lease before acting")
    p.add_argument("--history-window", default="24h", help="utilization history kept")
    p.add_argument("--step", default="60s", help="history resolution")
    p.add_argument(
        "--log.level",
        dest="log_level",
        default="info",
        choices=["debug", "info", "warn", "warning", "error"],
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level="WARNING" if args.log_level == "warn" else args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        policy, config, interval = _settings(args)
        credentials = prometheus_credentials(args)
        wiring = wire(args, policy, config, time.time, os.environ)
    except (UsageError, CredentialError) as err:
        print(f"gpu-reclaimer run: {err}", file=sys.stderr)
        return 2
    args.prom_credentials = credentials
    if args.once:
        return asyncio.run(_once(args, policy, config, wiring))
    return asyncio.run(_serve(args, policy, config, interval, wiring))


def _settings(args: argparse.Namespace) -> tuple[Policy, ControllerConfig, float]:
    if args.apply and args.cluster_file:
        raise UsageError(
            "--apply cannot be used with --cluster-file: a dump is a copy of the cluster, there "
            "is nothing to act on. Drop --apply to plan offline, or drop --cluster-file."
        )
    policy = Policy()
    args.policy_watch = None
    if args.policy_file:
        try:
            args.policy_watch = PolicyFile(Path(args.policy_file))
        except PolicyFileError as err:
            raise UsageError(str(err)) from err
        policy = args.policy_watch.policy
    try:
        interval = parse_duration(args.interval)
        cycle_timeout = parse_duration(args.cycle_timeout)
        window = parse_duration(args.history_window)
        step = parse_duration(args.step)
        parse_listen_address(args.listen)
    except ValueError as err:
        raise UsageError(str(err)) from err
    try:
        args.web_config, args.web_limits = web_settings(args)
    except WebFlagError as err:
        raise UsageError(str(err)) from err
    if interval <= 0 or step <= 0 or window < step:
        raise UsageError("--interval and --step must be > 0 and --history-window >= --step")
    if cycle_timeout <= 0:
        raise UsageError(f"--cycle-timeout must be > 0, got {args.cycle_timeout}")
    config = ControllerConfig(
        source=MetricsSource(args.metrics_source),
        history=HistoryParams(
            window=window,
            step=step,
            max_age=policy.max_data_age_seconds,
            horizon=policy.horizon_seconds,
        ),
        dry_run=not args.apply,
        cycle_timeout=cycle_timeout,
    )
    return policy, config, interval


def _controller(
    *,
    policy: Policy,
    config: ControllerConfig,
    wiring: Wiring,
    prom: PromClient,
    metrics: ReclaimerMetrics,
    liveness: Liveness | None = None,
    policy_file: PolicyFile | None = None,
) -> Controller:
    if wiring.notifier is not None:
        wiring.notifier.record = lambda result: metrics.notifications.labels(result=result).inc()
    feed = None
    if policy_file is not None:
        feed = PolicyFeed(policy_file.check, wiring.policy_rejected, wiring.use_policy)
    return Controller(
        read_cluster=wiring.read_cluster,
        prom=prom,
        policy=policy,
        forecaster=wiring.forecaster,
        planner=wiring.planner,
        actuator=wiring.actuator,
        metrics=metrics,
        clock=time.time,
        config=config,
        is_leader=wiring.is_leader,
        heartbeat=liveness.beat if liveness is not None else lambda: None,
        policy_feed=feed,
    )


async def _once(
    args: argparse.Namespace, policy: Policy, config: ControllerConfig, wiring: Wiring
) -> int:
    metrics = ReclaimerMetrics()
    async with PromClient(args.prometheus_url, credentials=args.prom_credentials) as prom:
        try:
            async with _leading(wiring) as refused:
                if refused:
                    print(
                        f"gpu-reclaimer run: --leader-elect: not the leader ({refused}); nothing "
                        "planned or acted on. Run again once the Lease is free, or without "
                        "--leader-elect if no other replica runs.",
                        file=sys.stderr,
                    )
                    return 2
                report = await _controller(
                    policy=policy, config=config, wiring=wiring, prom=prom, metrics=metrics
                ).cycle()
                if wiring.notifier is not None:  # the warnings' webhooks, each try bounded
                    await asyncio.to_thread(wiring.notifier.drain)
        finally:
            wiring.close()
    if args.json:
        print(json.dumps(report_dict(report, config.dry_run), indent=2, allow_nan=False))
    else:
        print(render_report(report, config.dry_run))
    if report.result is CycleResult.SUCCESS:
        return 0
    print(f"gpu-reclaimer run: cycle {report.result}: {report.message}", file=sys.stderr)
    return 1


@contextlib.asynccontextmanager
async def _leading(wiring: Wiring) -> AsyncIterator[str]:
    """With --leader-elect, for a one-shot run: take the Lease and renew it while the body runs,
    releasing it after. Yields "" while this process leads, or why it does not."""
    elector = wiring.elector
    if elector is None:
        yield ""
        return
    if not await asyncio.to_thread(elector.try_acquire_or_renew):
        yield elector.problem or "the Lease could not be taken"
        return
    stop = asyncio.Event()
    renewer = asyncio.create_task(elector.run(stop))
    try:
        yield ""
    finally:
        stop.set()
        await renewer  # releases the Lease


def render_report(report: CycleReport, dry_run: bool) -> str:
    """The human view of one cycle: result line, fleet summary, the plan table."""
    mode = "dry-run" if dry_run else "apply"
    lines = [f"Cycle {report.result} ({mode}): {report.message}"]
    if report.quality is not None and report.quality.problems:
        lines += [f"  data: {p}" for p in report.quality.problems]
    if report.summary is not None:
        lines.append(render_fleet(report.summary))
    if report.plan is not None:
        lines.append(render_plan(report.plan))
    return "\n".join(lines)


async def _serve(
    args: argparse.Namespace,
    policy: Policy,
    config: ControllerConfig,
    interval: float,
    wiring: Wiring,
) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    metrics = ReclaimerMetrics()
    host, port = parse_listen_address(args.listen)
    liveness = Liveness(liveness_bound(interval, config.cycle_timeout), time.monotonic)
    async with PromClient(args.prometheus_url, credentials=args.prom_credentials) as prom:
        controller = _controller(
            policy=policy,
            config=config,
            wiring=wiring,
            prom=prom,
            metrics=metrics,
            liveness=liveness,
            policy_file=args.policy_watch,
        )
        app = make_app(controller, metrics, config.dry_run, liveness)
        try:
            server = await serve(
                app, host, port, config=args.web_config, open_paths=PROBES, limits=args.web_limits
            )
        except OSError as err:
            wiring.close()
            print(f"gpu-reclaimer run: cannot listen on {args.listen}: {err}", file=sys.stderr)
            return 2
        log.info(
            "serving / /metrics /plan /healthz /readyz (%s)",
            "dry-run" if config.dry_run else "APPLY",
        )
        try:
            await wiring.run_loop(controller, interval, stop)
        finally:
            wiring.close()
            await server.stop()
    log.info("stopped cleanly")
    return 0
