"""The exporter's only door to the NVIDIA library: the one module that imports `pynvml`.

`pynvml` (nvidia-ml-py) is imported lazily, on the first NVML call of a real node, so that the
package imports and the `sim`/`replay` backends run on machines without the NVIDIA driver. Every
other module takes the library as an injected object with pynvml's names (the real module, or the
emulator `exporter.sim.nvml.library`); an import-linter contract keeps it that way.
"""

from __future__ import annotations

import contextlib
from typing import Any


def load_pynvml() -> Any:
    import pynvml  # noqa: PLC0415 - lazy: the package works without the NVIDIA library

    return pynvml


def nvml_available(lib: Any = None) -> bool:
    """True when NVML loads, initializes and sees at least one GPU."""
    try:
        lib = lib if lib is not None else load_pynvml()
        lib.nvmlInit()
    except Exception:  # ImportError, NVMLError_LibraryNotFound, DriverNotLoaded, OSError ...
        return False
    try:
        return int(lib.nvmlDeviceGetCount()) > 0
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            lib.nvmlShutdown()
