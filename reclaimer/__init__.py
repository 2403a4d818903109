"""gpu-reclaim reclaimer: forecasts idle GPU windows and plans reclaim actions."""
