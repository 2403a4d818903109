"""What the replay's jobs do with their GPUs, and what sharing one costs them: pure models.

Load (`usage`, `load`), memory (`memory`, `share_memory`), contention and OOM (`contention`),
a neighbour's busy time (`cobusy`), the kubelet's restarts (`restarts`), and what the controller
reads of them from Prometheus (`peaklog`, `loadlog`). Each works on trace arrays and holds no
replay state, so the replay's state (`sim_jobs`) and settings (`sim_settings`) are built on them;
`sim_pool` applies them to the time-sliced GPUs of a running replay.
"""
