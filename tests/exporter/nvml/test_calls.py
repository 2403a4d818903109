"""One NVML call's outcome, as the exporter classifies it: a value, idle, disabled or failed, and
what a lost GPU or a lost NVML state does to the calls after it. Table-driven, on a scripted
library whose functions raise NVML's error codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from exporter.nvml.calls import (
    NVML_ERROR_FUNCTION_NOT_FOUND,
    NVML_ERROR_NO_PERMISSION,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_TIMEOUT,
    DeviceCalls,
)


class NvmlError(Exception):
    """What pynvml raises: an exception carrying NVML's return code in `.value`."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


class NVMLLibraryMismatchError(Exception):
    """pynvml's error for a missing versioned symbol: no `.value` (pynvml.py)."""


class Lib:
    """A library whose `nvmlGet` does what `behaviour` says, counting the calls made."""

    def __init__(self, behaviour: Callable[[], Any]) -> None:
        self.behaviour = behaviour
        self.made = 0

    def nvmlGet(self, *_args: Any) -> Any:
        self.made += 1
        return self.behaviour()

    def nvmlOther(self, *_args: Any) -> int:
        self.made += 1
        return 7


def raises(exc: Exception) -> Callable[[], Any]:
    def behaviour() -> Any:
        raise exc

    return behaviour


def gpu(lib: Lib) -> DeviceCalls:
    node = DeviceCalls(lib, None, {}, {})
    return node.child(("GPU-0", False))


# (what the call does, ok, idle, disabled, failed, errors counted)
CASES = [
    pytest.param(lambda: 42, True, False, False, False, {}, id="value"),
    pytest.param(raises(NvmlError(6)), False, True, False, False, {}, id="not-found-is-idle"),
    pytest.param(raises(NvmlError(3)), False, False, True, False, {}, id="not-supported"),
    pytest.param(raises(NvmlError(13)), False, False, True, False, {}, id="function-not-found"),
    pytest.param(raises(NvmlError(4)), False, False, True, False, {}, id="no-permission"),
    pytest.param(
        raises(NVMLLibraryMismatchError()), False, False, True, False, {}, id="library-mismatch"
    ),
    pytest.param(
        raises(NvmlError(999)), False, False, False, True, {"nvmlGet": 1}, id="unknown-fails"
    ),
    pytest.param(
        raises(RuntimeError("binding")), False, False, False, True, {"nvmlGet": 1}, id="not-nvml"
    ),
]


@pytest.mark.parametrize(("behaviour", "ok", "idle", "disabled", "failed", "errors"), CASES)
def test_an_outcome_is_a_value_idle_disabled_or_failed(
    behaviour: Callable[[], Any],
    ok: bool,
    idle: bool,
    disabled: bool,
    failed: bool,
    errors: dict[str, int],
) -> None:
    lib = Lib(behaviour)
    calls = gpu(lib)
    out = calls.call("memory", "nvmlGet")
    assert (out.ok, out.idle, out.disabled) == (ok, idle, disabled)
    assert out.value == (42 if ok else None)
    assert (calls.failed == {"memory"}) is failed and (calls.sweep_failed == calls.failed)
    assert calls.errors == errors
    calls.call("memory", "nvmlGet")
    assert lib.made == (1 if disabled else 2)  # a disabled call is not made again


@pytest.mark.parametrize(
    ("code", "denied"),
    [(NVML_ERROR_NO_PERMISSION, True), (NVML_ERROR_NOT_SUPPORTED, False)],
    ids=["no-permission", "not-supported"],
)
def test_disabling_is_per_device_key_and_remembers_the_code(code: int, denied: bool) -> None:
    lib = Lib(raises(NvmlError(code)))
    calls = gpu(lib)
    calls.call("memory", "nvmlGet", tag="(v2)")
    assert calls.is_disabled("nvmlGet", "(v2)") and not calls.is_disabled("nvmlGet")
    assert calls.denied("nvmlGet", "(v2)") is denied
    assert calls.disabled == {(("GPU-0", False), "nvmlGet(v2)"): code}
    other = calls.child(("GPU-1", False))  # another GPU asks for itself
    other.call("memory", "nvmlGet", tag="(v2)")
    assert lib.made == 2


def test_a_function_the_binding_lacks_is_disabled_without_a_call() -> None:
    calls = gpu(Lib(lambda: 1))
    out = calls.call("thermal", "nvmlDeviceGetTemperatureV")
    assert out.disabled and not calls.failed
    assert calls.disabled == {
        (("GPU-0", False), "nvmlDeviceGetTemperatureV"): NVML_ERROR_FUNCTION_NOT_FOUND
    }


def test_idle_codes_are_the_callers_to_choose() -> None:
    calls = gpu(Lib(raises(NvmlError(NVML_ERROR_TIMEOUT))))
    assert calls.call("xid", "nvmlGet", idle_codes=(NVML_ERROR_TIMEOUT,)).idle
    assert not calls.failed
    assert not calls.call("xid", "nvmlGet").idle  # by default a timeout is a failure
    assert calls.failed == {"xid"}


def test_a_lost_gpu_skips_its_remaining_calls_and_its_instances_but_not_other_gpus() -> None:
    lib = Lib(raises(NvmlError(15)))  # GpuIsLost
    node = DeviceCalls(lib, None, {}, {})
    lost = node.child(("GPU-0", False))
    instance = lost.instance("MIG-0")
    lost.call("memory", "nvmlGet")
    assert not lost.call("power", "nvmlOther").ok  # skipped, and its collector failed
    assert not instance.call("mig", "nvmlOther").ok
    assert lost.failed == {"memory", "power"} and instance.failed == {"mig"}
    assert node.child(("GPU-1", False)).call("power", "nvmlOther").value == 7
    assert lib.made == 2 and lost.errors == {"nvmlGet": 1}
    assert not lost.restart[0]


@pytest.mark.parametrize("code", [1, 9, 18], ids=["uninitialized", "not-loaded", "version"])
def test_lost_nvml_state_ends_the_sweep_for_every_device(code: int) -> None:
    lib = Lib(raises(NvmlError(code)))
    node = DeviceCalls(lib, None, {}, {})
    node.child(("GPU-0", False)).call("memory", "nvmlGet")
    later = node.child(("GPU-1", False))
    assert not later.call("power", "nvmlOther").ok
    assert node.restart[0] and later.failed == {"power"} and lib.made == 1
    assert node.sweep_failed == {"memory", "power"}
