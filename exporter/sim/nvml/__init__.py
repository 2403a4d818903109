"""The NVML emulator: a fake `pynvml` with NVML's semantics, built from nvml.h and pynvml.py.

`library` is the stand-in for the `pynvml` module (`SimNvml`, the constants and the error classes);
`api`, `processes`, `gpm` and `events` answer the calls, by pynvml's names, from the emulated
`device` state, whose per-process samples `sampling` buffers as the driver does; `errors` and
`structs` mirror pynvml's exceptions and return structures. Test and demo code only: production
code reaches it through the sim backend, never by importing it.
"""
