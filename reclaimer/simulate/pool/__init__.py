"""The time-sliced pool of a running replay: its nodes, replicas, GPUs, OOM kills and reshapes.

`members` chooses the pool's nodes and `tuned` their starting replicas; `timeslice` prices the
pods sharing each GPU and kills on OOM (`crashes`); `reshaping` shows the pool to the planner and
applies its reshapes. They act on the replay's state (`sim_jobs.Replay`) with the models of
`sim_sharing`, and the replay's loop (`sim_replay`, `sim_ticks`) calls them.
"""
