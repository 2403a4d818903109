"""The public GPU cluster traces the backtest replays: where each is published, and fetching it."""
