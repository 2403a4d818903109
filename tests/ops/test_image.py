"""The image the manifests deploy starts: its wheel, built from exactly what the Dockerfile copies.

No Docker daemon runs here, so the test does what the Dockerfile's build stage does: it lays out
the files the Dockerfile's COPY lines take from the build context that .dockerignore leaves
(`dockerbuild`), builds the wheel from them, installs it into a fresh virtual environment with
only the runtime dependencies (as the final stage does), and then, from a folder outside the
checkout: imports every module of the wheel and resolves every module they import
(`image_check.py`), starts `gpu-exporter --backend sim` until it serves /metrics, runs
`gpu-reclaimer run` until it serves /healthz and /metrics, and prints `--version`. The manifests'
commands must be the wheel's console scripts. test_image_cycle.py plans a cycle with it.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from imagebuild import clean_env
from promserver import free_port
from repo_paths import FIXTURES, REPO

pytestmark = pytest.mark.slow
ROOTS = ("exporter", "reclaimer", "gpu_contract", "webconfig")
OPTIONAL = {"matplotlib": {"reclaimer.report.figures"}}  # the `report` extra, imported lazily


def test_the_wheel_holds_every_package_and_module_the_code_imports(
    image: Path, tmp_path: Path
) -> None:
    argv = [str(image / "python"), "-I", str(REPO / "tests" / "image_check.py"), ",".join(ROOTS)]
    done = subprocess.run(
        argv,
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["unimportable"] == {}
    missing = {name: set(users) for name, users in report["missing"].items()}
    optional = {n: u for n, u in missing.items() if n.split(".")[0] in OPTIONAL}
    assert {n: u for n, u in missing.items() if n not in optional} == {}
    assert all(u <= OPTIONAL[n.split(".")[0]] for n, u in optional.items())


def test_the_wheel_ships_our_packages_only(image: Path) -> None:
    (wheel,) = image.parent.parent.glob("w/gpu_reclaim-*.whl")  # beside the environment
    tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist()}
    assert tops == {*ROOTS, "gpu_reclaim-0.1.0.dist-info"}


@pytest.fixture
def exporter(image: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    argv = [
        str(image / "gpu-exporter"),
        "--backend",
        "sim",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    with _serving(argv, tmp_path) as proc:
        yield _get_when_up(f"http://127.0.0.1:{port}/metrics", proc)


@pytest.fixture
def reclaimer(image: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    port = free_port()
    argv = [str(image / "gpu-reclaimer"), "run", "--interval", "1h", "--cluster-file",
            str(FIXTURES / "cluster" / "cluster.yaml"),
            "--prometheus-url", f"http://127.0.0.1:{free_port()}",
            f"--web.listen-address=127.0.0.1:{port}"]  # fmt: skip
    with _serving(argv, tmp_path) as proc:
        health = _get_when_up(f"http://127.0.0.1:{port}/healthz", proc)
        yield health, _get_when_up(f"http://127.0.0.1:{port}/metrics", proc)


class _serving:
    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.argv, self.cwd = argv, cwd

    def __enter__(self) -> subprocess.Popen[str]:
        self.log = open(self.cwd / "log.txt", "w+")
        self.proc = subprocess.Popen(
            self.argv, cwd=self.cwd, env=clean_env(), stdout=self.log, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        return self.proc

    def __exit__(self, *_: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def _get_when_up(url: str, proc: subprocess.Popen[str]) -> str:
    import time  # noqa: PLC0415

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{url}: the process exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return str(answer.read().decode())
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"{url}: not served within 120 s")


def test_the_exporter_serves_from_the_image(exporter: str) -> None:
    assert "DCGM_FI_DEV_GPU_UTIL{" in exporter
    assert "gpu_pod_utilization_ratio" in exporter or "pod" in exporter


def test_the_reclaimer_serves_from_the_image(reclaimer: tuple[str, str]) -> None:
    health, metrics = reclaimer
    assert health.strip()
    assert "gpu_reclaimer_dry_run 1.0" in metrics


def test_version_from_the_image(image: Path, tmp_path: Path) -> None:
    env = clean_env() | {"GPU_RECLAIM_REVISION": "0a1b2c3"}
    for prog in ("gpu-exporter", "gpu-reclaimer"):
        done = subprocess.run(
            [str(image / prog), "--version"], cwd=tmp_path, env=env, capture_output=True,
            text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.stdout.startswith(f"{prog}, version 0.1.0 (revision: 0a1b2c3)")


def test_the_manifests_run_the_wheels_commands(image: Path) -> None:
    commands = set()
    for path in (REPO / "deploy" / "base").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            spec = (doc or {}).get("spec", {}).get("template", {}).get("spec", {})
            for container in spec.get("containers", []):
                if container.get("image") == "gpu-reclaim":
                    commands.add(container["command"][0])
    assert commands == {"gpu-exporter", "gpu-reclaimer"}
    assert all((image / c).is_file() for c in commands)
