"""Joining kube-state-metrics' answers per pod: creations, and the pending GPU demand whose
first and last pending steps and requested GPUs come from three separate instant queries."""

from __future__ import annotations

from reclaimer.prometheus.arrivals import (
    GPU_RESOURCE,
    Pending,
    arrivals,
    created_query,
    pending_queries,
    per_pod,
)
from reclaimer.prometheus.series import QueryResult, Series

T0 = 1.7e9


def _vector(values: dict[tuple[str, str], float], *extra: Series) -> QueryResult:
    series = tuple(
        Series({"namespace": ns, "pod": pod}, ((T0, v),)) for (ns, pod), v in values.items()
    )
    return QueryResult("q", "vector", series + extra)


NO_POD = Series({"namespace": "a"}, ((T0, 5.0),))


def test_per_pod_keys_values_by_namespace_and_pod_and_skips_series_without_a_pod():
    assert per_pod(_vector({("a", "p"): 3.0}, NO_POD)) == {("a", "p"): 3.0}


def test_pending_demand_joins_gpus_first_and_last_per_pod():
    came = arrivals(
        T0,
        T0 + 3600,
        created=_vector({("a", "p"): T0 + 60, ("a", "q"): T0 - 600}),
        gpus=_vector({("a", "p"): 2.0, ("a", "q"): 1.0, ("a", "gone"): 4.0}),
        first=_vector({("a", "p"): T0 + 120, ("a", "q"): T0}),
        last=_vector({("a", "p"): T0 + 1800, ("a", "q"): T0 + 3600}),
    )

    assert came.found and came.created == {("a", "p"): T0 + 60, ("a", "q"): T0 - 600}
    # a pod missing from one answer (it left between evaluations) is left out, not guessed
    assert came.pending == {
        ("a", "p"): Pending(2, T0 + 120, T0 + 1800),
        ("a", "q"): Pending(1, T0, T0 + 3600),
    }


def test_no_creations_means_no_kube_state_metrics():
    empty = QueryResult("q", "vector", ())

    came = arrivals(T0, T0 + 60, created=empty, gpus=empty, first=empty, last=empty)

    assert not came.found and came.pending == {}


def test_the_queries_read_the_sanitized_gpu_resource_on_the_step_grid_over_the_window():
    gpus, first, last = pending_queries(86400.0, 60.0)

    assert created_query(86400.0) == (
        "max by (namespace, pod) (max_over_time(kube_pod_created[86400s]))"
    )
    for query in (gpus, first, last):
        assert f'resource="{GPU_RESOURCE}"' in query and query.endswith("[86400s:60s]))")
        assert 'kube_pod_status_phase{phase="Pending"}' in query
    assert first.startswith("min by") and last.startswith("max by")
