"""The backtest replay: a trace replayed through the controller's forecast and plan."""
