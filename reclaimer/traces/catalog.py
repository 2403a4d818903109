"""The public traces `simulate` replays: where each file is published, at which commit, its sha256.

Pure data, no I/O. Every file is fetched from its publisher's repository at a pinned commit and
checked twice: the bytes downloaded against `sha256` (what the publisher serves), then the CSV it
unpacks to against `content_sha256` (what is stored). The traces are not redistributed with this
project: Alibaba publishes its traces for "research or study purpose" (alibaba/clusterdata
README.md at commit 7a6c496e), so each user fetches them from the publisher and reads its terms.

Stored layout (under the cache folder), one folder a trace:

    alibaba-openb/openb_pod_list_default.csv      pods of a 6,212-GPU cluster (as published)
    alibaba-openb/openb_node_list_gpu_node.csv    its GPU nodes (as published)
    alibaba-gentd26/pod_gpu_duty_cycle.csv.gz     per-pod GPU utilization (the CSV of the
                                                  publisher's .tar.gz, gzip-compressed)
    alibaba-gentd26/pod_gpu_memory_used_bytes.csv.gz   per-pod GPU memory, same pods
    alibaba-gentd26/basemodel_update_latency_anon.csv.gz   base-model load times (cold starts)
    helios-philly/philly_node_sequence.csv.gz     busy nodes per minute (gzip of the CSV)

A local mirror in that same layout (a folder the tests and CI hold) is copied instead of
downloaded. Its files must unpack to the publisher's content, with one named exception: the
GenTD26 subset some mirrors hold (the publisher's rows filtered to 106 pods), which is accepted by
its own sha256 and reported as a subset.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

ALIBABA = "alibaba/clusterdata"
ALIBABA_COMMIT = "7a6c496e4f4b6ce6150be8f881cb051bf2abff42"
HELIOS = "S-Lab-System-Group/HeliosArtifact"
HELIOS_COMMIT = "bdaae109c21f8038a2331e6a23a582d5ae78ab5b"
DEFAULT_SOURCE_URL = "https://raw.githubusercontent.com"


class Packing(enum.StrEnum):
    """How a published file becomes the stored one."""

    AS_IS = "as-is"  # the published CSV, stored unchanged
    GZIP = "gzip"  # the published CSV, stored gzip-compressed
    TAR_MEMBER_GZIP = "tar-member-gzip"  # the one CSV inside a published .tar.gz, gzip-compressed


@dataclass(frozen=True)
class TraceFile:
    """One stored file and the published file it comes from."""

    stored: str  # path under the cache folder
    repo: str
    commit: str
    path: str  # in the publisher's repository
    sha256: str  # of the published bytes
    size: int  # of the published bytes
    packing: Packing
    content_sha256: str  # of the CSV stored (uncompressed)
    member: str = ""  # the CSV inside the archive (TAR_MEMBER_GZIP)

    def url(self, source_url: str = DEFAULT_SOURCE_URL) -> str:
        quoted = self.path.replace(" ", "%20")
        return f"{source_url.rstrip('/')}/{self.repo}/{self.commit}/{quoted}"


@dataclass(frozen=True)
class Trace:
    """A published trace: its files, the paper to cite, the publisher's terms."""

    name: str
    title: str
    files: tuple[TraceFile, ...]
    cite: str
    terms: str
    optional: bool = False  # fetched only with --variants


def openb_file(name: str, sha256: str, size: int) -> TraceFile:
    return TraceFile(
        stored=f"alibaba-openb/{name}",
        repo=ALIBABA,
        commit=ALIBABA_COMMIT,
        path=f"cluster-trace-gpu-v2023/csv/{name}",
        sha256=sha256,
        size=size,
        packing=Packing.AS_IS,
        content_sha256=sha256,
    )


def _gentd26(name: str, sha256: str, size: int, content_sha256: str) -> TraceFile:
    return TraceFile(
        stored=f"alibaba-gentd26/{name}.csv.gz",
        repo=ALIBABA,
        commit=ALIBABA_COMMIT,
        path=f"cluster-trace-v2026-GenAI/{name}_anon.tar.gz",
        sha256=sha256,
        size=size,
        packing=Packing.TAR_MEMBER_GZIP,
        content_sha256=content_sha256,
        member=f"{name}_anon.csv",
    )


ALIBABA_TERMS = (
    'Alibaba Cluster Trace Program: "You may use trace however you want as long as it is for '
    'reseach or study purpose" (alibaba/clusterdata README.md). Not redistributed here.'
)
OPENB_CITE = (
    'Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation '
    'Gradient Descent", USENIX ATC 2023'
)
OPENB = Trace(
    name="alibaba-openb",
    title="pods and GPU nodes of a 6,212-GPU Kubernetes cluster (cluster-trace-gpu-v2023)",
    files=(
        openb_file(
            "openb_pod_list_default.csv",
            "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8",
            575468,
        ),
        openb_file(
            "openb_node_list_gpu_node.csv",
            "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5",
            42353,
        ),
    ),
    cite=OPENB_CITE,
    terms=ALIBABA_TERMS,
)
GENTD26 = Trace(
    name="alibaba-gentd26",
    title="per-pod GPU utilization and memory, and model load times, of a production GPU "
    "service (GenTD26)",
    files=(
        _gentd26(
            "pod_gpu_duty_cycle",
            "c4070218189b2811995c30dd9fefb8a793a83a54dccebe7b41cab2d123916855",
            832148,
            "b3a91d9bd9141156e66da6b8d34520602246ee043ac60b0d2172e689a3919f99",
        ),
        _gentd26(
            "pod_gpu_memory_used_bytes",
            "662be431f2d24a003c3a0b28383155fccceefb7e83dea14f912166edc9129132",
            1144101,
            "0edc1ad35284b6b7236bdd2e69795052bedc302d7b295a1a32c5bb9ff4579596",
        ),
        replace(  # stored under the publisher's own name, as CI's mirror holds it
            _gentd26(
                "basemodel_update_latency",
                "4a0cfd5537dc0e7e19340cc8cfc49c26d6aef0ffd85f3ed68db1f4e157811e9d",
                57327,
                "06d1d39fea0e702dbeb209494fbb3ceec8ded62ade30dfa5b294b9adfbe27da7",
            ),
            stored="alibaba-gentd26/basemodel_update_latency_anon.csv.gz",
        ),
    ),
    cite=(
        'Lin et al., "Understanding Diffusion Model Serving in Production: A Top-Down Analysis '
        'of Workload, Scheduling, and Resource Efficiency", SoCC 2025'
    ),
    terms=ALIBABA_TERMS,
)
HELIOS_PHILLY = Trace(
    name="helios-philly",
    title="busy nodes per minute of a GPU cluster for 73 days (HeliosArtifact, from Philly)",
    files=(
        TraceFile(
            stored="helios-philly/philly_node_sequence.csv.gz",
            repo=HELIOS,
            commit=HELIOS_COMMIT,
            path="framework/CES Service/data/philly_node_sequence.csv",
            sha256="4d430364b7d4e18e180b4ab116f36bace689baf9ca05bffa9b257dc6bdc794ac",
            size=2955757,
            packing=Packing.GZIP,
            content_sha256="4d430364b7d4e18e180b4ab116f36bace689baf9ca05bffa9b257dc6bdc794ac",
        ),
    ),
    cite=(
        'Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale '
        'GPU Datacenters", SC 2021'
    ),
    terms="MIT License, Copyright (c) 2021-present NTU S-Lab (HeliosArtifact LICENSE.txt).",
)

# The GenTD26 subset a mirror may hold instead of the publisher's whole file: the publisher's rows
# filtered to 106 pods (the rest held out for acceptance checks), otherwise unchanged.
MIRROR_SUBSETS: Mapping[str, str] = {
    "a2f1d6ef28f26e964a7adb9bc472ef1505cf2338e0bdf0ad80f2a3aedc0da2ba": "106-pod subset",
    "430ea8613a15a2bd7ef38f490f65e1f1cea5b9267a841928022b8e634ab62097": "106-pod subset",
}


class Role(enum.StrEnum):
    """The files `simulate` reads when no path is given."""

    PODS = "alibaba-openb/openb_pod_list_default.csv"
    NODES = "alibaba-openb/openb_node_list_gpu_node.csv"
    UTILIZATION = "alibaba-gentd26/pod_gpu_duty_cycle.csv.gz"
    MEMORY = "alibaba-gentd26/pod_gpu_memory_used_bytes.csv.gz"
    COLD_START = "alibaba-gentd26/basemodel_update_latency_anon.csv.gz"
    NODE_SEQUENCE = "helios-philly/philly_node_sequence.csv.gz"


def default_cache_dir(env: Mapping[str, str], home: Path) -> Path:
    """`$GPU_RECLAIM_TRACES`, else `$XDG_CACHE_HOME/gpu-reclaim/traces`, else ~/.cache/..."""
    if explicit := env.get("GPU_RECLAIM_TRACES"):
        return Path(explicit)
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else home / ".cache"
    return base / "gpu-reclaim" / "traces"
