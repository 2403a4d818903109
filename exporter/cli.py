"""`gpu-exporter` (also `python -m exporter`): parse flags, build a backend, serve until signalled.

The imperative shell of the exporter. Flags are read as strings and validated all at once by
`config.load_config`; a usage or value error prints a clear message and returns 2. The backend
factories (`exporter.nvml.source`, `exporter.sim.backend`, `exporter.sim.replay`) are imported
only for the backend in use, so a sim run never loads NVML and a real node never loads the
simulator. SIGTERM and
SIGINT stop the collect loop and the HTTP server cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

from exporter.config import Backend, ConfigError, ExporterConfig, LogLevel, load_config
from exporter.counters import CountersError, parse_counters
from exporter.cycle import AttributionSources, CollectLoop
from exporter.flags import PROG, UsageError, build_parser
from exporter.node.apiserver import ApiEndpoint, in_cluster_endpoint
from exporter.node.podresources import AllocationsFile, PodResourcesClient
from exporter.node.pods import KubernetesPods, PodsFile, PodSource
from exporter.node.resourceslices import KubernetesResourceSlices
from exporter.server import PROBES, make_app
from exporter.sources import BackendParts
from webconfig.flags import WebFlagError, web_settings
from webconfig.live import LiveWebConfig
from webconfig.model import Limits
from webconfig.server import serve as serve_web

log = logging.getLogger("exporter")
SWITCH_INTERVAL_S = 0.0005


def _usage_error(parser: argparse.ArgumentParser, messages: Sequence[str]) -> int:
    parser.print_usage(sys.stderr)
    for message in messages:
        print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def _resolve_backend(config: ExporterConfig) -> Backend | str:
    """The backend to run, or an error message when the default (nvml) cannot load."""
    if config.backend is not None:
        return config.backend
    from exporter.nvml import library  # noqa: PLC0415

    if library.nvml_available():
        return Backend.NVML
    return (
        "NVML could not be loaded (no NVIDIA driver on this machine?); "
        "pass --backend sim for a simulated node, or --backend replay --replay.file CSV"
    )


def _build_parts(config: ExporterConfig, backend: Backend, fixture_dir: Path) -> BackendParts:
    if backend is Backend.NVML:
        from exporter.nvml.source import build_nvml_backend  # noqa: PLC0415 (lazy, see docstring)

        return build_nvml_backend(proc_root=config.procfs)
    if backend is Backend.SIM:
        from exporter.sim.backend import sim_backend_for  # noqa: PLC0415

        return sim_backend_for(config, fixture_dir)[0]
    from exporter.sim.replay import build_replay_backend  # noqa: PLC0415 (pandas: replay only)

    assert config.replay_file is not None  # load_config guarantees it
    parts, _node = build_replay_backend(
        file=config.replay_file,
        speed=config.replay_speed,
        seed=config.sim_seed,
        fixture_dir=fixture_dir,
        node_name=config.node_name,
        clock=time.time,
    )
    return parts


def api_endpoint(config: ExporterConfig, env: Mapping[str, str]) -> ApiEndpoint | None:
    """Pure: the explicit `--kubernetes.api-url`, else the in-cluster API server, else None."""
    if config.kubernetes_api_url is None:
        return in_cluster_endpoint(env)
    return ApiEndpoint(
        config.kubernetes_api_url,
        config.kubernetes_token_file,
        config.kubernetes_ca_file,
        config.kubernetes_insecure_skip_tls_verify,
    )


def attribution_sources(
    config: ExporterConfig, parts: BackendParts, stack: ExitStack
) -> AttributionSources | None:
    """Fixture files when the backend wrote them, the kubelet and the API server otherwise."""
    if not config.collector_pods:
        return None
    allocations = (
        AllocationsFile(parts.podresources_file)
        if parts.podresources_file is not None
        else PodResourcesClient(config.pod_resources_socket)
    )
    stack.callback(allocations.close)
    pods: PodSource | None = None
    slices: KubernetesResourceSlices | None = None
    if parts.pods_file is not None:
        pods = PodsFile(parts.pods_file)
    elif config.collector_kubernetes:
        endpoint = api_endpoint(config, os.environ)
        pods = KubernetesPods(config.node_name, endpoint)
        stack.callback(pods.close)
        slices = KubernetesResourceSlices(config.node_name, endpoint)  # lists once DRA is met
        stack.callback(slices.close)
    return AttributionSources(allocations, pods, parts.proc_root, slices)


async def serve(
    config: ExporterConfig,
    backend: Backend,
    web: Web | None = None,
    families: frozenset[str] | None = None,
) -> int:
    """Build the backend's parts, then serve them until SIGTERM/SIGINT."""
    with tempfile.TemporaryDirectory(prefix="gpu-exporter-") as fixture_dir:
        try:
            parts = _build_parts(config, backend, Path(fixture_dir))
        except (ValueError, OSError) as exc:  # e.g. pods that do not fit, an unreadable trace
            print(f"{PROG}: error: cannot start the {backend} backend: {exc}", file=sys.stderr)
            return 2
        return await serve_parts(config, parts, label=str(backend), web=web, families=families)


Web = tuple[LiveWebConfig | None, Limits]
"""The web config (None: plain HTTP, no auth) and the bounded server's limits."""


async def serve_parts(
    config: ExporterConfig,
    parts: BackendParts,
    *,
    label: str,
    web: Web | None = None,
    families: frozenset[str] | None = None,
) -> int:
    """Collect from `parts` and serve HTTP until SIGTERM/SIGINT; close everything on the way out."""
    # The collect cycle runs Python in a worker thread; with the default 5 ms GIL switch
    # interval every scrape that lands during a cycle waits several of those. 0.5 ms keeps
    # scrape latency low at a negligible cost to the (short) cycle.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    stop = asyncio.Event()
    event_loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        event_loop.add_signal_handler(sig, stop.set)
    with ExitStack() as stack:
        stack.callback(parts.devices.close)
        loop = CollectLoop(
            parts.devices,
            attribution_sources(config, parts, stack),
            hostname=config.node_name,
            interval=config.collect_interval,
            families=families,
        )
        live, limits = web or (None, Limits())
        host, port = config.listen_host, config.listen_port
        try:
            server = await serve_web(
                make_app(loop), host, port, config=live, open_paths=PROBES, limits=limits
            )
        except OSError as exc:
            print(f"{PROG}: error: cannot listen on {host or ''}:{port}: {exc}", file=sys.stderr)
            return 2
        log.info("serving %s backend on %s:%d", label, host or "*", server.port)
        try:
            await loop.run(stop)
        finally:
            await server.stop()
    log.info("stopped")
    return 0


_LEVELS = {
    LogLevel.DEBUG: logging.DEBUG,
    LogLevel.INFO: logging.INFO,
    LogLevel.WARN: logging.WARNING,
    LogLevel.ERROR: logging.ERROR,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        return _usage_error(parser, [str(exc)])
    try:
        config = load_config(vars(args), os.environ, socket.gethostname())
    except ConfigError as exc:
        return _usage_error(parser, exc.errors)
    logging.basicConfig(
        level=_LEVELS[config.log_level],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    families = _chosen_families(config)
    if not isinstance(families, frozenset | None):
        return _usage_error(parser, families)
    backend = _resolve_backend(config)
    if not isinstance(backend, Backend):
        return _usage_error(parser, [backend])
    try:
        web = web_settings(args)
    except WebFlagError as exc:
        return _usage_error(parser, [str(exc)])
    return asyncio.run(serve(config, backend, web, families))


def _chosen_families(config: ExporterConfig) -> frozenset[str] | list[str] | None:
    """The DCGM families `--collectors` chooses (None: all), or the errors that exit 2."""
    path = config.collectors_file
    if path is None:
        return None
    try:
        choice = parse_counters(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return [f"--collectors={path}: cannot read it: {exc}"]
    except CountersError as exc:
        return [f"--collectors={path}: {error}" for error in exc.errors]
    for reason in choice.skipped:
        log.info("--collectors: skipping %s", reason)
    return choice.families
