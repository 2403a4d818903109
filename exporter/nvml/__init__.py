"""The NVML path of a real node: one sweep of every GPU and MIG instance through NVML.

`library` is the only module that imports `pynvml`; `source` sweeps the devices through an
injected library object; `calls` gives every call the exporter's error semantics; `readings`
declares the device readings as data; `processes`, `process_activity`, `gpm` and `events` read
per-process activity, GPM activity and XID events. Nothing here imports the emulator
(`exporter.sim.nvml`), which stands in for `pynvml` only through the sim backend's wiring.
"""
