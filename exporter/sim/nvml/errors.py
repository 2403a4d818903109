"""NVML's return codes and exception hierarchy, as `pynvml` (nvidia-ml-py) defines them.

`NVMLError(code)` returns an instance of the matching `NVMLError_*` subclass and every instance
carries the code in `.value`, exactly like pynvml, so code written against pynvml catches the
emulator's errors unchanged. The subclasses are spelled out (pynvml generates them at import
time) so that mypy sees them.
"""

from __future__ import annotations

from typing import ClassVar

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_INSUFFICIENT_POWER = 8
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_IRQ_ISSUE = 11
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_OPERATING_SYSTEM = 17
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_IN_USE = 19
NVML_ERROR_MEMORY = 20
NVML_ERROR_NO_DATA = 21
NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22
NVML_ERROR_INSUFFICIENT_RESOURCES = 23
NVML_ERROR_FREQ_NOT_SUPPORTED = 24
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25
NVML_ERROR_DEPRECATED = 26
NVML_ERROR_NOT_READY = 27
NVML_ERROR_GPU_NOT_FOUND = 28
NVML_ERROR_INVALID_STATE = 29
NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30
NVML_ERROR_UNKNOWN = 999

_STRINGS: dict[int, str] = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_ALREADY_INITIALIZED: "Already Initialized",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    """Base class; `NVMLError(code)` maps the code to its subclass, as in pynvml."""

    _code: ClassVar[int | None] = None
    value: int

    def __new__(cls, value: int | None = None) -> NVMLError:
        target = _BY_CODE.get(value, cls) if cls is NVMLError and value is not None else cls
        obj = Exception.__new__(target)
        code = target._code if target._code is not None else value
        obj.value = NVML_ERROR_UNKNOWN if code is None else code
        return obj

    def __init__(self, value: int | None = None) -> None:
        super().__init__(*(() if value is None else (value,)))

    def __str__(self) -> str:
        return _STRINGS.get(self.value, f"NVML Error with code {self.value}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NVMLError) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


class NVMLError_Uninitialized(NVMLError):
    _code = NVML_ERROR_UNINITIALIZED


class NVMLError_InvalidArgument(NVMLError):
    _code = NVML_ERROR_INVALID_ARGUMENT


class NVMLError_NotSupported(NVMLError):
    _code = NVML_ERROR_NOT_SUPPORTED


class NVMLError_NoPermission(NVMLError):
    _code = NVML_ERROR_NO_PERMISSION


class NVMLError_AlreadyInitialized(NVMLError):
    _code = NVML_ERROR_ALREADY_INITIALIZED


class NVMLError_NotFound(NVMLError):
    _code = NVML_ERROR_NOT_FOUND


class NVMLError_InsufficientSize(NVMLError):
    _code = NVML_ERROR_INSUFFICIENT_SIZE


class NVMLError_InsufficientPower(NVMLError):
    _code = NVML_ERROR_INSUFFICIENT_POWER


class NVMLError_DriverNotLoaded(NVMLError):
    _code = NVML_ERROR_DRIVER_NOT_LOADED


class NVMLError_Timeout(NVMLError):
    _code = NVML_ERROR_TIMEOUT


class NVMLError_IrqIssue(NVMLError):
    _code = NVML_ERROR_IRQ_ISSUE


class NVMLError_LibraryNotFound(NVMLError):
    _code = NVML_ERROR_LIBRARY_NOT_FOUND


class NVMLError_FunctionNotFound(NVMLError):
    _code = NVML_ERROR_FUNCTION_NOT_FOUND


class NVMLError_CorruptedInforom(NVMLError):
    _code = NVML_ERROR_CORRUPTED_INFOROM


class NVMLError_GpuIsLost(NVMLError):
    _code = NVML_ERROR_GPU_IS_LOST


class NVMLError_ResetRequired(NVMLError):
    _code = NVML_ERROR_RESET_REQUIRED


class NVMLError_OperatingSystem(NVMLError):
    _code = NVML_ERROR_OPERATING_SYSTEM


class NVMLError_LibRmVersionMismatch(NVMLError):
    _code = NVML_ERROR_LIB_RM_VERSION_MISMATCH


class NVMLError_InUse(NVMLError):
    _code = NVML_ERROR_IN_USE


class NVMLError_Memory(NVMLError):
    _code = NVML_ERROR_MEMORY


class NVMLError_NoData(NVMLError):
    _code = NVML_ERROR_NO_DATA


class NVMLError_VgpuEccNotSupported(NVMLError):
    _code = NVML_ERROR_VGPU_ECC_NOT_SUPPORTED


class NVMLError_InsufficientResources(NVMLError):
    _code = NVML_ERROR_INSUFFICIENT_RESOURCES


class NVMLError_FreqNotSupported(NVMLError):
    _code = NVML_ERROR_FREQ_NOT_SUPPORTED


class NVMLError_ArgumentVersionMismatch(NVMLError):
    _code = NVML_ERROR_ARGUMENT_VERSION_MISMATCH


class NVMLError_Deprecated(NVMLError):
    _code = NVML_ERROR_DEPRECATED


class NVMLError_NotReady(NVMLError):
    _code = NVML_ERROR_NOT_READY


class NVMLError_GpuNotFound(NVMLError):
    _code = NVML_ERROR_GPU_NOT_FOUND


class NVMLError_InvalidState(NVMLError):
    _code = NVML_ERROR_INVALID_STATE


class NVMLError_ResetTypeNotSupported(NVMLError):
    _code = NVML_ERROR_RESET_TYPE_NOT_SUPPORTED


class NVMLError_Unknown(NVMLError):
    _code = NVML_ERROR_UNKNOWN


class NVMLLibraryMismatchError(Exception):
    """pynvml's error for an unversioned call whose versioned symbol the driver lacks: not an
    NVMLError, and without `.value` (pynvml.py, `throwOnVersionMismatch`)."""


# Every subclass above, by its code (a class added above is mapped without a second list).
_BY_CODE: dict[int, type[NVMLError]] = {
    c._code: c for c in NVMLError.__subclasses__() if c._code is not None
}
