"""dcgm-exporter's device families as gpu-exporter serves them, and the ones it leaves out.

Names, types and HELP texts are those of dcgm-exporter's `etc/default-counters.csv` (release
4.5.3-4.8.2; `tests/fixtures/dcgm-exporter/default-counters.csv` is a copy, and a test holds this
module to it). Labels are dcgm-exporter's: `gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`,
`Hostname`, `DCGM_FI_DRIVER_VERSION`, plus `GPU_I_PROFILE`, `GPU_I_ID` on a MIG instance's series.

Whole GPU or MIG instance: a series without `GPU_I_ID` is a whole GPU; one with `GPU_I_ID` is one
MIG instance of the GPU its `gpu` / `UUID` name (dcgm-exporter labels an instance with its
parent's UUID). `MigScope` says, per family, which of the two carry it on a MIG-enabled GPU, so
that a `sum()` over a node counts each byte once: the framebuffer is on the instances only; board
sensors (power, temperature, clocks, PCIe, NVLink) are on the GPU only; activity ratios on both.
"""

from __future__ import annotations

from enum import StrEnum


class MigScope(StrEnum):
    """Which series carry a family on a MIG-enabled GPU (a GPU without MIG carries them all)."""

    GPU = "GPU"  # the whole GPU's series only
    INSTANCES = "instances"  # each MIG instance's series only
    BOTH = "GPU and instances"  # the GPU's own value, and each instance's
    NEITHER = "neither"  # NVML does not answer under MIG


# (name, type, unit, help, MIG scope), in the CSV's order. HELP texts are dcgm-exporter's.
DCGM_FAMILIES: tuple[tuple[str, str, str, str, MigScope], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "%", "GPU utilization (in %).", MigScope.NEITHER),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "%", "Memory utilization (in %).", MigScope.NEITHER),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "%", "Encoder utilization (in %).", MigScope.GPU),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "%", "Decoder utilization (in %).", MigScope.GPU),
    (
        "DCGM_FI_DEV_FB_FREE",
        "gauge",
        "MiB",
        "Framebuffer memory free (in MiB).",
        MigScope.INSTANCES,
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        "gauge",
        "MiB",
        "Framebuffer memory used (in MiB).",
        MigScope.INSTANCES,
    ),
    (
        "DCGM_FI_DEV_FB_RESERVED",
        "gauge",
        "MiB",
        "Framebuffer memory reserved (in MiB).",
        MigScope.INSTANCES,
    ),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "C", "GPU temperature (in C).", MigScope.GPU),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "C", "Memory temperature (in C).", MigScope.GPU),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "W", "Power draw (in W).", MigScope.GPU),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "counter",
        "mJ",
        "Total energy consumption since boot (in mJ).",
        MigScope.GPU,
    ),
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "MHz", "SM clock frequency (in MHz).", MigScope.GPU),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "MHz", "Memory clock frequency (in MHz).", MigScope.GPU),
    (
        "DCGM_FI_DEV_XID_ERRORS",
        "gauge",
        "",
        "Value of the last XID error encountered.",
        MigScope.BOTH,
    ),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "counter",
        "",
        "Total number of PCIe retries.",
        MigScope.GPU,
    ),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "gauge",
        "B/s",
        "The rate of data transmitted over the PCIe bus - including both protocol headers and "
        "data payloads - in bytes per second.",
        MigScope.GPU,
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "gauge",
        "B/s",
        "The rate of data received over the PCIe bus - including both protocol headers and data "
        "payloads - in bytes per second.",
        MigScope.GPU,
    ),
    (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "MiB/s",
        "Total number of NVLink bandwidth counters for all lanes.",
        MigScope.GPU,
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "",
        "Number of remapped rows for uncorrectable errors",
        MigScope.NEITHER,
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "",
        "Number of remapped rows for correctable errors",
        MigScope.NEITHER,
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "gauge",
        "",
        "Whether remapping of rows has failed",
        MigScope.NEITHER,
    ),
    (
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gauge",
        "ratio",
        "Ratio of time the graphics engine is active.",
        MigScope.BOTH,
    ),
    (
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gauge",
        "ratio",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        MigScope.BOTH,
    ),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "ratio",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        MigScope.BOTH,
    ),
)

# dcgm-exporter's default fields that gpu-exporter does not serve as a family, and why.
LEFT_OUT: dict[str, str] = {
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS": (
        "vGPU guests only: NVML reports a vGPU license inside a virtual machine running a vGPU; "
        "on the bare-metal and passthrough GPUs gpu-exporter runs on there is none to report"
    ),
    "DCGM_FI_DRIVER_VERSION": "a label on every device series (dcgm-exporter's `label` type)",
}

# Types a counters CSV line may give (dcgm-exporter: gauge, counter, label, histogram...).
LABEL_TYPE = "label"
