"""The backtest replay: a trace replayed through the controller's forecast and plan.

Read top down: `timeline`, `sweep`, `export` and `planning` are what the commands call; `replay`
runs the event loop and `ticks` the control ticks; `pool/` is the time-sliced pool and `devices`
the planner's views of a tick; `jobs` holds one replay's state, over its `settings`,
`scheduler`, `results` and `strategies`; `sharing/` models load, memory and contention; `trace`
reads the input. Docstrings name modules by their path under this package, `sim_<path>`
(`sim_pool.timeslice` is `reclaimer.simulate.pool.timeslice`).
"""
