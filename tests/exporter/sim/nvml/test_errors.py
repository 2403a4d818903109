"""The emulator's errors are pynvml's: the same codes, classes and code-to-class mapping."""

from __future__ import annotations

import re
import string

import pytest
from exporter_fakes import pynvml_source

from exporter.sim.nvml import library as simnvml

PYNVML_SOURCE = pynvml_source()


def _pynvml_error_codes() -> dict[str, int]:
    """NVML_ERROR_* constants as nvidia-ml-py defines them (read as text: no pynvml import)."""
    text = PYNVML_SOURCE.read_text()
    return {m[0]: int(m[1]) for m in re.findall(r"^(NVML_ERROR_\w+)\s*=\s*(\d+)", text, re.M)}


def _class_name(constant: str) -> str:
    # pynvml's own rule (_extractNVMLErrorsAsClasses)
    words = string.capwords(constant.replace("NVML_ERROR_", ""), "_")
    return "NVMLError_" + words.replace("_", "")


@pytest.mark.parametrize("constant", sorted(_pynvml_error_codes()))
def test_error_classes_match_pynvml(constant: str) -> None:
    code = _pynvml_error_codes()[constant]
    assert getattr(simnvml, constant) == code
    cls = getattr(simnvml, _class_name(constant))
    err = simnvml.NVMLError(code)
    assert type(err) is cls
    assert cls().value == code
    assert isinstance(err, simnvml.NVMLError)
