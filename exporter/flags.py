"""`gpu-exporter`'s command-line flags: the parser only (values are checked by `exporter.config`).

Flags follow exporter conventions (`--web.listen-address`, `--collector.<name>`); dcgm-exporter's
`--collectors FILE` keeps its name. A usage error raises `UsageError` instead of exiting, so the
CLI prints every problem the same way and returns 2.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from webconfig.flags import add_web_arguments
from webconfig.version import add_version_argument

PROG = "gpu-exporter"


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="DCGM-compatible GPU metrics with per-pod attribution.")
    add = p.add_argument
    add("--web.listen-address", dest="listen", metavar="ADDR", help="default :9400")
    add("--backend", dest="backend", metavar="{nvml,sim,replay}", help="default nvml")
    add("--collect-interval", dest="collect_interval", metavar="SECONDS", help="default 1")
    add("--node-name", dest="node_name", metavar="NAME", help="default $NODE_NAME, else hostname")
    add("--sim.gpus", dest="sim_gpus", metavar="N")
    add(
        "--sim.mig",
        dest="sim_mig",
        nargs="?",
        const="half",
        metavar="N",
        help="MIG-enable N simulated GPUs (alone: half of them), 7 instances each",
    )
    add("--sim.pods", dest="sim_pods", metavar="N")
    add("--sim.seed", dest="sim_seed", metavar="N")
    add("--sim.workloads", dest="sim_workloads", metavar="FILE")
    add(
        "--sim.fault",
        dest="sim_faults",
        action="append",
        metavar="CALL:GPU[:ERROR]",
        help="make the emulated NVML fail CALL (a pynvml function name) on GPU, with ERROR "
        "(an NVML error name such as GpuIsLost, or hang; default Unknown); lost:GPU: the GPU "
        "falls off the bus after the first cycle. Repeatable",
    )
    add(
        "--collectors",
        dest="collectors_file",
        metavar="FILE",
        help="dcgm-exporter counters CSV (`DCGM_FI_..., type, help`) choosing the DCGM families "
        "served (default all; per-pod families are always served)",
    )
    add("--replay.file", dest="replay_file", metavar="CSV")
    add("--replay.speed", dest="replay_speed", metavar="X")
    add("--path.procfs", dest="procfs", metavar="DIR", help="default /proc")
    add("--kubelet.pod-resources-socket", dest="pod_resources_socket", metavar="PATH")
    add(
        "--collector.pods",
        dest="collector_pods",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="per-pod series from kubelet PodResources and /proc (default on)",
    )
    add(
        "--collector.kubernetes",
        dest="collector_kubernetes",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pod UID -> name from the API server (default on)",
    )
    add(
        "--kubernetes.api-url",
        dest="kubernetes_api_url",
        metavar="URL",
        help="API server to list this node's pods from (default: in-cluster service account)",
    )
    add(
        "--kubernetes.token-file", dest="kubernetes_token_file", metavar="FILE", help="bearer token"
    )
    add("--kubernetes.ca-file", dest="kubernetes_ca_file", metavar="FILE", help="CA bundle (PEM)")
    add(
        "--kubernetes.insecure-skip-tls-verify",
        dest="kubernetes_insecure_skip_tls_verify",
        action="store_true",
        default=None,
        help="do not verify the API server's certificate (tests and development only)",
    )
    add("--log.level", dest="log_level", metavar="{debug,info,warn,error}")
    add_web_arguments(p)
    add_version_argument(p, PROG)
    return p
