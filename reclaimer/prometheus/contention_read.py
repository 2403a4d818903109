"""Read the pods' contention (`prometheus.contention`) from Prometheus: three instant queries at
the cycle's time, sent together. Any failure or partial answer gives a `Contention` that holds
no pods and says why, never part of the fleet: the contention rule reads it as unknown.
"""

from __future__ import annotations

import asyncio

from reclaimer.model import CONTENTION_WINDOW, Contention
from reclaimer.prometheus.client import PromClient, PromError
from reclaimer.prometheus.contention import contention, contention_queries
from reclaimer.prometheus.series import QueryResult


async def read_contention(client: PromClient, at: float) -> Contention:
    """Each pod's present, busy and co-busy seconds over the day before `at`."""
    queries = contention_queries()
    answers = await asyncio.gather(
        *(client.query(q, at=at) for q in queries.values()), return_exceptions=True
    )
    for a in answers:
        if isinstance(a, BaseException) and not isinstance(a, PromError):
            raise a  # not Prometheus' answer (cancellation, a bug): not this read's to hide
    errs = [str(a) for a in answers if isinstance(a, PromError)]
    if errs:
        return Contention(CONTENTION_WINDOW, error=f"query failed: {'; '.join(errs)}")
    results = {k: a for k, a in zip(queries, answers, strict=True) if isinstance(a, QueryResult)}
    return contention(results)
