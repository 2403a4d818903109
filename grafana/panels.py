"""Small builders for Grafana dashboard JSON (schema 39): panels, targets, template variables.

Dashboards are plain dicts so the checked-in JSON is exactly what `json.dumps` writes. Every
panel queries the `${datasource}` Prometheus; every expression filters with the `$cluster`,
`$node` and `$namespace` variables where its series carry the label (see `SEL`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Json = dict[str, Any]

DATASOURCE: Json = {"type": "prometheus", "uid": "${datasource}"}
PCT = (0.0, 100.0)  # min/max of percent panels
RATIO = (0.0, 1.0)  # min/max of ratio panels

# Label selectors, substituted into expressions with str.format(**SEL).
SEL = {
    "dev": 'cluster=~"$cluster", Hostname=~"$node"',
    "pod": 'cluster=~"$cluster", Hostname=~"$node", namespace=~"$namespace"',
    "ns": 'cluster=~"$cluster", namespace=~"$namespace"',
    "cl": 'cluster=~"$cluster"',
}


def target(expr: str, legend: str = "", ref: str = "A", *, instant: bool = False) -> Json:
    t: Json = {
        "datasource": DATASOURCE,
        "expr": expr.format(**SEL),
        "legendFormat": legend or "__auto",
        "refId": ref,
        "range": not instant,
        "instant": instant,
    }
    return t


def targets(*pairs: tuple[str, str], instant: bool = False) -> list[Json]:
    return [
        target(expr, legend, chr(ord("A") + i), instant=instant)
        for i, (expr, legend) in enumerate(pairs)
    ]


def panel(
    kind: str,
    title: str,
    tgts: Sequence[Json],
    grid: tuple[int, int, int, int],
    *,
    unit: str = "short",
    description: str = "",
    minmax: tuple[float | None, float | None] = (None, None),
    options: Json | None = None,
    custom: Json | None = None,
    mappings: Sequence[Json] = (),
) -> Json:
    x, y, w, h = grid
    defaults: Json = {"unit": unit, "mappings": list(mappings)}
    if minmax[0] is not None:
        defaults["min"] = minmax[0]
    if minmax[1] is not None:
        defaults["max"] = minmax[1]
    if custom:
        defaults["custom"] = custom
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "targets": list(tgts),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": options or {},
    }


STACKED: Json = {"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 60}


def row(title: str, y: int) -> Json:
    return {
        "type": "row",
        "title": title,
        "collapsed": False,
        "gridPos": {"x": 0, "y": y, "w": 24, "h": 1},
        "panels": [],
    }


def query_var(name: str, label: str, query: str, *, multi: bool = True) -> Json:
    return {
        "type": "query",
        "name": name,
        "label": label,
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": f"{name}-var"},
        "refresh": 2,
        "includeAll": True,
        "allValue": ".*",
        "multi": multi,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "sort": 1,
        "hide": 0,
    }


def datasource_var() -> Json:
    return {
        "type": "datasource",
        "name": "datasource",
        "label": "Prometheus",
        "query": "prometheus",
        "current": {},
        "hide": 0,
        "refresh": 1,
    }


CLUSTER_VAR = query_var(
    "cluster", "Cluster", "label_values(DCGM_FI_DEV_GPU_UTIL, cluster)", multi=False
)
NODE_VAR = query_var(
    "node", "Node", 'label_values(DCGM_FI_DEV_GPU_UTIL{cluster=~"$cluster"}, Hostname)'
)
NAMESPACE_VAR = query_var(
    "namespace",
    "Namespace",
    'label_values(gpu_pod_allocated{cluster=~"$cluster", Hostname=~"$node"}, namespace)',
)


def dashboard(uid: str, title: str, description: str, panels: Sequence[Json]) -> Json:
    numbered = [dict(p, id=i + 1) for i, p in enumerate(panels)]
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["gpu", "gpu-reclaim"],
        "editable": True,
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-24h", "to": "now"},
        "refresh": "1m",
        "timezone": "browser",
        "graphTooltip": 1,
        "templating": {"list": [datasource_var(), CLUSTER_VAR, NODE_VAR, NAMESPACE_VAR]},
        "annotations": {"list": []},
        "links": [
            {"type": "dashboards", "tags": ["gpu-reclaim"], "asDropdown": True, "title": "GPU"}
        ],
        "panels": numbered,
    }
