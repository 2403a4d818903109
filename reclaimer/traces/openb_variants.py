"""The openb trace's published variants (`--variants`): the same cluster, other workload mixes.

The publisher derives each from the default pod list (alibaba/clusterdata
cluster-trace-gpu-v2023/README.md): `gpushareNN` makes NN% of GPU pods share GPUs, `multigpuNN`
makes NN% ask for several GPUs. They let a backtest be checked on traces it was not built on.
"""

from __future__ import annotations

from reclaimer.traces.catalog import ALIBABA_TERMS, OPENB_CITE, Trace, openb_file

_PUBLISHED = (
    (
        "openb_pod_list_gpushare20.csv",
        "9be2d0efb52e242c32e23dd184cc5fcc1983478c6c9c02cbb6b4b62925c0ffcd",
        574603,
    ),
    (
        "openb_pod_list_gpushare40.csv",
        "d83ce79a4eb6987524bedbb0c65e41aed3a36bf6c1b78b86234c3687a07e1d40",
        572662,
    ),
    (
        "openb_pod_list_gpushare60.csv",
        "d31809628128a1f24491086eda4af3e23882b9213d3ef57a56ee2d1af69492fe",
        566361,
    ),
    (
        "openb_pod_list_gpushare80.csv",
        "88b6649369ced40d0fde287d2498ea61ff4b05fccba8bdc95daf6042f2f8431e",
        563740,
    ),
    (
        "openb_pod_list_gpushare100.csv",
        "12dbc07d6a49bf8641e2275a2ff5bf7be74b5df7d148d531e135b140b95f9a3d",
        561220,
    ),
    (
        "openb_pod_list_multigpu20.csv",
        "d9ec6f6c74fb980cc0b81239470c6353fceea077ea9abd610003b604c7cc2b01",
        271530,
    ),
    (
        "openb_pod_list_multigpu30.csv",
        "a5e479c6444b1d83eef848159cf00c3cfa13441b2d1e2c113c391b91f1cc5b11",
        277920,
    ),
    (
        "openb_pod_list_multigpu40.csv",
        "32c9e8731ca07ef96108aa65f2a289bb9aacb47f642ed9e3789f99b242df60eb",
        286202,
    ),
    (
        "openb_pod_list_multigpu50.csv",
        "206f2f5959db30ecb7c44e7f13197c8ec50b7a35558ad3777cc3662ef0fe5373",
        297219,
    ),
)

OPENB_VARIANTS = Trace(
    name="alibaba-openb-variants",
    title="the openb pod list's published variants (GPU sharing and multi-GPU mixes)",
    files=tuple(openb_file(name, sha256, size) for name, sha256, size in _PUBLISHED),
    cite=OPENB_CITE,
    terms=ALIBABA_TERMS,
    optional=True,
)
