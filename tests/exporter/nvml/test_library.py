"""The pynvml door: the default library is the `pynvml` module, and whether NVML is usable here."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from exporter_fakes import busy_gpus

from exporter.nvml.library import nvml_available
from exporter.nvml.source import build_nvml_backend
from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import h100


@pytest.fixture
def pynvml_is_the_emulator() -> Iterator[simnvml.SimNvml]:
    lib = simnvml.SimNvml(busy_gpus(2))
    simnvml.install(lib)
    saved = sys.modules.get("pynvml")
    sys.modules["pynvml"] = simnvml
    try:
        yield lib
    finally:
        simnvml.install(None)
        if saved is None:
            del sys.modules["pynvml"]
        else:
            sys.modules["pynvml"] = saved


def test_default_lib_is_the_pynvml_module(
    pynvml_is_the_emulator: simnvml.SimNvml, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    assert nvml_available()
    parts = build_nvml_backend(proc_root=tmp_path)
    assert parts.podresources_file is None and parts.pods_file is None
    sweep = parts.devices.read()
    parts.devices.close()
    assert [d.index for d in sweep.devices] == [0, 1]
    assert pynvml_is_the_emulator.calls["nvmlInit"] == 2


@pytest.mark.parametrize(
    "code",
    [
        simnvml.NVML_ERROR_LIBRARY_NOT_FOUND,
        simnvml.NVML_ERROR_DRIVER_NOT_LOADED,
        simnvml.NVML_ERROR_NO_PERMISSION,
    ],
    ids=["library-not-found", "driver-not-loaded", "no-permission"],
)
def test_nvml_unavailable(code: int) -> None:
    lib = simnvml.SimNvml([h100(0)])
    lib.inject("nvmlInit", code)
    assert nvml_available(lib) is False


def test_nvml_unavailable_without_gpus() -> None:
    assert nvml_available(simnvml.SimNvml([])) is False
