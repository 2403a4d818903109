"""The simulated node: the `sim` and `replay` backends, for demos, benchmarks and tests.

`backend` builds a `SimNode` (pods placed by `layout` on emulated GPUs, each doing what its
`workloads` shape says at the emulator's clock), writes the attribution `fixtures`, and hands the
collect loop the production `NvmlSource` over the NVML emulator (`sim.nvml`). `replay` drives the
same node from a GenTD26 utilization trace; `backfill` writes its history for Prometheus. This
package may import the production packages; they never import it (the CLI's backend choice
aside).
"""
