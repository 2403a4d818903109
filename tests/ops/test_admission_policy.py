"""The reclaimer's admission policies, evaluated with cel-python as the API server would.

Every write the reclaimer's own code sends (`reclaimer_flows.FLOWS`: each suspendable kind
stopped and resumed, a Volcano abort/resume and its rollback, an eviction, a reshape and its
cleanup, an Event, its Lease) is allowed. Each forbidden request (`admission_cases.CASES`: one of
those writes with one thing added, as a stolen token would send it, or a request the reclaimer
never makes) is denied by exactly the one rule named, so removing any rule fails its cases, and
`test_every_rule_has_a_denial_case` makes sure no rule goes untested. Requests of anyone else are
not matched at all.
"""

from __future__ import annotations

import dataclasses
from functools import cache

import pytest
from admission import Obj, Write, admit, evaluate, policies_of
from admission_cases import CASES, Tamper
from kubewrites import RECLAIMER
from manifests import DEPLOY, OVERLAYS, render
from reclaimer_flows import FLOWS, WORKLOAD_FILES, run_flow

from reclaimer.kube.objects import kinds

NAMES = (
    "device-plugin-config",
    "kueue-workloads",
    "node-labels",
    "requests",
    "volcano-commands",
    "workloads",
)


@cache
def policies(overlay: str = "enforce") -> dict[str, Obj]:
    return policies_of(render(DEPLOY / "overlays" / overlay))


def message(policy: str, start: str) -> tuple[str, str]:
    """(policy name, message) of the one validation whose message starts with `start`."""
    name = f"gpu-reclaimer-{policy}"
    validations = policies()[name]["spec"]["validations"]
    found = [v["message"] for v in validations if v["message"].startswith(start)]
    assert len(found) == 1, f"{name}: {start!r} matches {found}"
    return name, found[0]


@cache
def flow_writes(flow: str) -> tuple[Write, ...]:
    return tuple(run_flow(flow))


def forbidden(where: tuple[str, int], tamper: Tamper) -> Write:
    flow, index = where
    return tamper(flow_writes(flow)[index])


# --- structure -------------------------------------------------------------------------------
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_has_the_same_policies_in_force(overlay: str) -> None:
    assert policies(overlay) == policies("enforce")
    assert sorted(policies(overlay)) == [f"gpu-reclaimer-{n}" for n in NAMES]


def test_every_policy_fails_closed_and_matches_only_the_reclaimer() -> None:
    for name, policy in policies().items():
        spec = policy["spec"]
        assert spec["failurePolicy"] == "Fail", name
        (condition,) = spec["matchConditions"]
        assert RECLAIMER in condition["expression"], name
        messages = [v["message"] for v in spec["validations"]]
        assert len(set(messages)) == len(messages), name
        # 422: the reclaimer reports a 403 in dry-run as withheld by RBAC, not as a failure
        assert all(v["reason"] == "Invalid" for v in spec["validations"]), name


def test_every_suspendable_kind_has_a_flow_and_a_rule() -> None:
    assert set(WORKLOAD_FILES) == {w.job_kind for w in kinds.SUSPENDABLE}
    rules = policies()["gpu-reclaimer-workloads"]["spec"]["matchConstraints"]["resourceRules"]
    covered = {(g, res) for rule in rules for g in rule["apiGroups"] for res in rule["resources"]}
    assert {(w.resource.group, w.resource.plural) for w in kinds.WORKLOADS} <= covered


# --- what the reclaimer sends ----------------------------------------------------------------
def expected_policies(write: Write) -> set[str]:
    """The catch-all, and the policy for the fields of what it writes (none for an eviction, an
    Event or its Lease)."""
    res, sub = write.request["resource"], write.request.get("subResource")
    special = {"commands": "volcano-commands", "configmaps": "device-plugin-config"}
    special |= {"nodes": "node-labels", "pods": "workloads", "workloads": "kueue-workloads"}
    names = {"requests"}
    if res["resource"] in special and not sub:
        names.add(special[res["resource"]])
    elif res["group"] in {w.resource.group for w in kinds.WORKLOADS}:
        names.add("workloads")
    return {f"gpu-reclaimer-{n}" for n in names}


@pytest.mark.parametrize("flow", sorted(FLOWS))
def test_the_reclaimers_own_writes_are_allowed(flow: str) -> None:
    for write in flow_writes(flow):
        outcome = admit(policies(), write)
        assert outcome.allowed, f"{write}: {outcome.denials}"
        assert set(outcome.matched) == expected_policies(write), str(write)


# --- forbidden -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("where", "tamper", "rule"), [pytest.param(*c[1:], id=c[0]) for c in CASES]
)
def test_a_forbidden_request_is_denied_by_its_rule(
    where: tuple[str, int], tamper: Tamper, rule: tuple[str, str]
) -> None:
    write = forbidden(where, tamper)
    assert admit(policies(), write).denials == {message(*rule)}, str(write)


def test_every_rule_has_a_denial_case() -> None:
    tested = {message(*rule) for *_, rule in CASES}
    rules = {(n, v["message"]) for n, p in policies().items() for v in p["spec"]["validations"]}
    assert rules == tested, f"untested: {sorted(rules - tested)}"


OTHERS = [
    "system:serviceaccount:team-a:default",
    "system:serviceaccount:gpu-reclaim:gpu-exporter",
    "system:serviceaccount:gpu-reclaim:gpu-reclaimer-2",
    "system:serviceaccount:gpu-reclaimx:gpu-reclaimer",
    "alice@example.com",
    "",  # no username at all: no error, no match
]
SOME_CASES = [
    pytest.param(*c[1:3], id=c[0])
    for c in CASES
    if c[0] in ("PyTorchJob-image", "node-taint-removed", "delete-pod", "command-RestartJob")
]


@pytest.mark.parametrize("username", OTHERS)
@pytest.mark.parametrize(("where", "tamper"), SOME_CASES)
def test_requests_of_anyone_else_are_not_matched(
    username: str, where: tuple[str, int], tamper: Tamper
) -> None:
    write = forbidden(where, tamper)
    user = {"username": username, "groups": ["system:authenticated"]} if username else {}
    write = dataclasses.replace(write, request={**write.request, "userInfo": user})
    assert admit(policies(), write).matched == ()
    for policy in policies().values():  # the conditions evaluate (no error), to false
        assert evaluate(policy["spec"], write) is None
