"""Forecasting idle windows: features, the learned model, baselines, backtest."""
