"""The command-line programs: run, simulate, forecast-eval (file reads live here)."""
