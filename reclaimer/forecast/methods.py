"""Names a forecast's `method` takes when the forecaster declines to judge a job.

Kept apart from the forecaster so that readers of forecasts (the planner's wording, the
controller's counters) know them without importing the numerical code.
"""

from __future__ import annotations

INSUFFICIENT_HISTORY = "insufficient-history"
SILENT = "no-recent-samples"
# Forecast methods that mean "could not decide": no estimate, a rule's 0.
UNDECIDED_METHODS = frozenset({INSUFFICIENT_HISTORY, SILENT})
