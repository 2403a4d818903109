"""The exporter's configuration: one frozen dataclass, loaded by one pure function.

`load_config` takes the raw flag strings (None = not given), the environment and the hostname,
and returns an `ExporterConfig` or raises `ConfigError` listing every invalid field at once.
Defaults live in the dataclass only. `backend` None means "nvml if NVML loads": probing the
library is I/O, so the CLI resolves it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from exporter.node.podresources import DEFAULT_SOCKET
from webconfig.address import parse_listen_address

T = TypeVar("T")


class Backend(StrEnum):
    NVML = "nvml"
    SIM = "sim"
    REPLAY = "replay"


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARN = "warn"
    ERROR = "error"


@dataclass(frozen=True)
class SimFault:
    """`--sim.fault CALL:GPU[:ERROR]`: make the emulated NVML fail `call` on GPU `gpu`."""

    call: str  # a pynvml function name, or "lost" (the GPU falls off the bus)
    gpu: int
    error: str | None = None  # an NVMLError_<error> name, or "hang"; None: Unknown


LOST = "lost"
_CALL = re.compile(r"nvml[A-Za-z0-9_]+")
_ERROR = re.compile(r"[A-Za-z]+")


def parse_fault(text: str, gpus: int) -> SimFault:
    """`CALL:GPU[:ERROR]` -> SimFault, or ValueError saying what is wrong. Whether the emulator
    has CALL and ERROR is checked when the sim backend is built."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError("expected CALL:GPU or CALL:GPU:ERROR, e.g. nvmlDeviceGetPowerUsage:0")
    call, gpu_text = parts[0], parts[1]
    if call != LOST and not _CALL.fullmatch(call):
        raise ValueError(f"{call!r} is neither a pynvml function name (nvml...) nor {LOST!r}")
    try:
        gpu = int(gpu_text)
    except ValueError:
        raise ValueError(f"GPU {gpu_text!r} is not a GPU index") from None
    if not 0 <= gpu < gpus:
        raise ValueError(f"GPU {gpu} does not exist (--sim.gpus is {gpus})")
    error = parts[2] if len(parts) == 3 else None
    if error is not None and (call == LOST or not _ERROR.fullmatch(error)):
        raise ValueError(f"{error!r}: ERROR is an NVML error name such as GpuIsLost, or hang")
    return SimFault(call, gpu, error)


@dataclass(frozen=True)
class ExporterConfig:
    node_name: str
    listen_host: str | None = None  # None: every interface
    listen_port: int = 9400
    backend: Backend | None = None
    collect_interval: float = 1.0
    sim_gpus: int = 4
    sim_mig: int = 0  # how many of the GPUs are MIG-enabled (7 instances each)
    sim_pods: int = 12
    sim_seed: int = 0
    sim_workloads: Path | None = None
    sim_faults: tuple[SimFault, ...] = ()
    replay_file: Path | None = None
    collectors_file: Path | None = None  # dcgm-exporter counters CSV; None: every DCGM family
    replay_speed: float = 1.0
    procfs: Path = Path("/proc")
    pod_resources_socket: Path = DEFAULT_SOCKET
    collector_pods: bool = True  # per-pod attribution (PodResources + /proc)
    collector_kubernetes: bool = True  # pod UID -> name from the API server
    kubernetes_api_url: str | None = None  # None: in-cluster (service env + service account)
    kubernetes_token_file: Path | None = None
    kubernetes_ca_file: Path | None = None
    kubernetes_insecure_skip_tls_verify: bool = False  # tests and development only
    log_level: LogLevel = LogLevel.INFO


_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(ExporterConfig)}


class ConfigError(ValueError):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


MIN_COLLECT_INTERVAL = 0.1
"""Below this a collect cycle (NVML sweep, /proc reads, rendering) cannot finish in time."""


def _collect_interval(text: str) -> float:
    value = _positive_float(text)
    if value < MIN_COLLECT_INTERVAL:
        raise ValueError(f"must be at least {MIN_COLLECT_INTERVAL:g} seconds")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError("must be a positive number")
    return value


def _int_in(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"must be between {low} and {high}")
        return value

    return parse


def _mig_count(gpus: int) -> Callable[[str], int]:
    """`--sim.mig N`: N of the GPUs are MIG-enabled. `--sim.mig` alone: half of them (at least
    one), so the default workload mix, whose training pods need whole GPUs, still fits."""

    def parse(text: str) -> int:
        return max(1, gpus // 2) if text == "half" else _int_in(0, gpus)(text)

    return parse


E = TypeVar("E", bound=StrEnum)


def parse_api_url(text: str) -> str:
    """`https://host[:port][/prefix]` -> the same without a trailing slash; no query or userinfo."""
    url = urlsplit(text)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    if url.query or url.fragment or url.username or url.password:
        raise ValueError("must not carry a query, fragment or credentials")
    _ = url.port  # raises ValueError for a port that is not a number in range
    return text.rstrip("/")


def _choice(enum: type[E]) -> Callable[[str], E]:
    def parse(text: str) -> E:
        try:
            return enum(text)
        except ValueError:
            raise ValueError("must be one of " + ", ".join(e.value for e in enum)) from None

    return parse


def load_config(
    raw: Mapping[str, str | bool | Sequence[str] | None], env: Mapping[str, str], hostname: str
) -> ExporterConfig:
    """Pure: validate every field and build the config, or raise ConfigError with all problems."""
    errors: list[str] = []

    def field(flag: str, key: str, parse: Callable[[str], T]) -> T:
        value = raw.get(key)
        if value is None:
            return _DEFAULTS[key]  # type: ignore[no-any-return]
        try:
            return parse(str(value))
        except ValueError as exc:
            errors.append(f"--{flag}={value}: {exc}")
            return _DEFAULTS[key]  # type: ignore[no-any-return]

    host, port = _DEFAULTS["listen_host"], _DEFAULTS["listen_port"]
    if raw.get("listen") is not None:
        try:
            host, port = parse_listen_address(str(raw["listen"]))
        except ValueError as exc:
            errors.append(f"--web.listen-address={raw['listen']}: {exc}")
    backend = field("backend", "backend", _choice(Backend))
    node_name = str(raw.get("node_name") or env.get("NODE_NAME") or hostname)
    values: dict[str, Any] = {
        "node_name": node_name,
        "listen_host": host,
        "listen_port": port,
        "backend": backend,
        "collect_interval": field("collect-interval", "collect_interval", _collect_interval),
        "sim_gpus": field("sim.gpus", "sim_gpus", _int_in(1, 64)),
        "sim_pods": field("sim.pods", "sim_pods", _int_in(0, 4096)),
        "sim_seed": field("sim.seed", "sim_seed", int),
        "sim_workloads": field("sim.workloads", "sim_workloads", Path),
        "replay_file": field("replay.file", "replay_file", Path),
        "collectors_file": field("collectors", "collectors_file", Path),
        "replay_speed": field("replay.speed", "replay_speed", _positive_float),
        "procfs": field("path.procfs", "procfs", Path),
        "pod_resources_socket": field("kubelet.pod-resources-socket", "pod_resources_socket", Path),
        "log_level": field("log.level", "log_level", _choice(LogLevel)),
    }
    values["sim_mig"] = field("sim.mig", "sim_mig", _mig_count(values["sim_gpus"]))
    values["sim_faults"] = _faults(raw.get("sim_faults"), values["sim_gpus"], backend, errors)
    for key in ("collector_pods", "collector_kubernetes"):
        flag = raw.get(key)
        values[key] = _DEFAULTS[key] if flag is None else bool(flag)
    errors.extend(_kubernetes_api(raw, values, field))
    if backend is Backend.REPLAY and values["replay_file"] is None:
        errors.append("--backend=replay needs --replay.file")
    if backend is not Backend.REPLAY and raw.get("replay_file") is not None:
        errors.append("--replay.file is only used with --backend=replay")
    if values["sim_workloads"] is not None and backend not in (Backend.SIM, Backend.REPLAY):
        errors.append("--sim.workloads is only used with --backend=sim or replay")
    if errors:
        raise ConfigError(errors)
    return ExporterConfig(**values)


def _faults(
    given: object, gpus: int, backend: Backend | None, errors: list[str]
) -> tuple[SimFault, ...]:
    texts = [str(t) for t in given] if isinstance(given, list | tuple) else []
    if texts and backend is not Backend.SIM:
        errors.append("--sim.fault is only used with --backend=sim")
    out = []
    for text in texts:
        try:
            out.append(parse_fault(text, gpus))
        except ValueError as exc:
            errors.append(f"--sim.fault={text}: {exc}")
    return tuple(out)


def _kubernetes_api(
    raw: Mapping[str, str | bool | Sequence[str] | None],
    values: dict[str, Any],
    field: Callable[[str, str, Callable[[str], Any]], Any],
) -> list[str]:
    """Fill the `--kubernetes.*` values; return the conflicts among them (`field` reports bad
    values itself)."""
    url = values["kubernetes_api_url"] = field(
        "kubernetes.api-url", "kubernetes_api_url", parse_api_url
    )
    values["kubernetes_token_file"] = field("kubernetes.token-file", "kubernetes_token_file", Path)
    values["kubernetes_ca_file"] = field("kubernetes.ca-file", "kubernetes_ca_file", Path)
    insecure = values["kubernetes_insecure_skip_tls_verify"] = bool(
        raw.get("kubernetes_insecure_skip_tls_verify")
    )
    given = raw.get("kubernetes_api_url") is not None
    errors = [
        f"--kubernetes.{flag} is only used with --kubernetes.api-url"
        for flag, key in (
            ("token-file", "kubernetes_token_file"),
            ("ca-file", "kubernetes_ca_file"),
            ("insecure-skip-tls-verify", "kubernetes_insecure_skip_tls_verify"),
        )
        if not given and raw.get(key)
    ]
    if url is not None and not url.startswith("https:"):
        errors.extend(
            f"--kubernetes.{flag} is only used with an https:// --kubernetes.api-url"
            for flag, key in (
                ("ca-file", "kubernetes_ca_file"),
                ("insecure-skip-tls-verify", "kubernetes_insecure_skip_tls_verify"),
            )
            if raw.get(key)
        )
    if insecure and raw.get("kubernetes_ca_file") is not None:
        errors.append("--kubernetes.insecure-skip-tls-verify contradicts --kubernetes.ca-file")
    return errors
