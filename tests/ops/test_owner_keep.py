"""deploy/examples/owner-keep: an owner may keep their own warned job and do nothing more.

The warned job is the one the reclaimer's own code writes (`reclaimer_flows`: a Notebook of
team-a warned through `kube.forewarn` against the fake API server); the owner's requests are
built from it as kube-apiserver hands them to admission (`admission.admission_request`) and run
through the example's ValidatingAdmissionPolicy with cel-python (`admission.admit`). RBAC is
evaluated as kube-apiserver's RBAC authorizer does (kubernetes/kubernetes,
pkg/registry/rbac/validation/rule.go: a RoleBinding grants its Role's rules in its own
namespace only, a Group subject applies to users in that group; pkg/apis/rbac/v1/
evaluation_helpers.go: verbs, API groups, resources and resourceNames match exactly or by `*`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from functools import cache

import pytest
from admission import Obj, Write, admission_request, admit, policies_of
from manifests import DEPLOY, render, schema_errors
from reclaimer_flows import FLOWS, run_flow

from reclaimer.kube.objects import kinds
from reclaimer.kube.objects import resources as r

POLICY = "gpu-reclaim-owner-keep"
OWNER = "alice@example.com"
TEAM = ("team-a-members", "system:authenticated")
DENIED = (POLICY, "only gpu-reclaim.io/keep-until may be set by a job's owner")


@cache
def objects() -> tuple[Obj, ...]:
    return tuple(render(DEPLOY / "examples" / "owner-keep"))


def policies() -> dict[str, Obj]:
    return policies_of(objects())


@cache
def warned() -> Obj:
    """team-a's Notebook as the stored object after the reclaimer's warning patch."""
    write = run_flow("Notebook-warn-withdraw")[0]
    assert write.object is not None and r.RECLAIM_AFTER in write.object["metadata"]["annotations"]
    return write.object


def owner_patch(change: Callable[[dict[str, str]], None], who: str = OWNER) -> Write:
    """The owner's patch of the warned Notebook's annotations, as admission sees it."""
    old = warned()
    new = copy.deepcopy(old)
    change(new["metadata"]["annotations"])
    meta = old["metadata"]
    request = admission_request(
        "UPDATE",
        group="kubeflow.org",
        version="v1",
        resource="notebooks",
        kind="Notebook",
        namespace=meta["namespace"],
        name=meta["name"],
        username=who,
        options={"kind": "PatchOptions", "apiVersion": "meta.k8s.io/v1"},
    )
    return Write(request, new, old)


def setting(key: str, value: str) -> Callable[[dict[str, str]], None]:
    return lambda notes: notes.__setitem__(key, value)


def removing(key: str) -> Callable[[dict[str, str]], None]:
    return lambda notes: notes.pop(key)


# --- RBAC ------------------------------------------------------------------------------------
def authorized(
    user: str, groups: Iterable[str], verb: str, group: str, resource: str, namespace: str
) -> bool:
    """Whether the example's RBAC lets `user` (in `groups`) do `verb` on a named object."""
    roles = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects()
    }
    for b in objects():
        if b["kind"] == "RoleBinding" and b["metadata"]["namespace"] != namespace:
            continue
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(
            (s["kind"] == "User" and s["name"] == user)
            or (s["kind"] == "Group" and s["name"] in groups)
            for s in b.get("subjects", [])
        ):
            continue
        ref = b["roleRef"]
        ns = b["metadata"].get("namespace", "") if ref["kind"] == "Role" else ""
        for rule in roles[ref["kind"], ns, ref["name"]]["rules"]:
            if (
                {verb, "*"} & set(rule["verbs"])
                and {group, "*"} & set(rule["apiGroups"])
                and {resource, "*"} & set(rule["resources"])
            ):
                return True
    return False


def warned_resources() -> set[tuple[str, str]]:
    """(group, plural) of every object the reclaimer writes a warning on (`kube.forewarn`)."""
    return {(w.resource.group, w.resource.plural) for w in kinds.WORKLOADS} | {("", "pods")}


def test_the_example_validates() -> None:
    assert {o["kind"] for o in objects()} == {
        "Role",
        "RoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    assert all(schema_errors(o) == "" for o in objects())
    assert not [o for o in objects() if o["kind"].startswith("Cluster")]


@pytest.mark.parametrize(("group", "resource"), sorted(warned_resources()))
def test_an_owner_may_read_and_patch_their_jobs_in_their_namespace_only(
    group: str, resource: str
) -> None:
    for verb in ("get", "patch"):
        assert authorized(OWNER, TEAM, verb, group, resource, "team-a")
        assert not authorized(OWNER, TEAM, verb, group, resource, "team-b")
        assert not authorized(OWNER, ("system:authenticated",), verb, group, resource, "team-a")
    for verb in ("create", "update", "delete", "list", "watch", "deletecollection"):
        assert not authorized(OWNER, TEAM, verb, group, resource, "team-a"), verb
    assert not authorized(OWNER, TEAM, "patch", group, f"{resource}/status", "team-a")


def test_the_role_grants_nothing_but_the_warned_kinds() -> None:
    (role,) = [o for o in objects() if o["kind"] == "Role"]
    granted = {
        (g, res) for rule in role["rules"] for g in rule["apiGroups"] for res in rule["resources"]
    }
    assert granted == warned_resources()
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"get", "patch"}


# --- admission -------------------------------------------------------------------------------
def test_the_policy_covers_every_kind_the_reclaimer_warns() -> None:
    (policy,) = policies().values()
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    covered = {(g, res) for rule in rules for g in rule["apiGroups"] for res in rule["resources"]}
    assert covered == warned_resources()
    assert {op for rule in rules for op in rule["operations"]} == {"UPDATE"}
    assert policy["spec"]["failurePolicy"] == "Fail"


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(setting(r.KEEP_UNTIL, "2030-01-15T18:00:00Z"), id="set-keep-until"),
        pytest.param(setting("example.com/note", "back at 3"), id="another-annotation"),
    ],
)
def test_an_owner_may_set_keep_until(change: Callable[[dict[str, str]], None]) -> None:
    outcome = admit(policies(), owner_patch(change))
    assert outcome.matched == (POLICY,)
    assert outcome.allowed, outcome.denials


def test_an_owner_may_take_their_keep_back() -> None:
    kept = owner_patch(setting(r.KEEP_UNTIL, "2030-01-15T18:00:00Z"))
    assert kept.object is not None
    taken_back = copy.deepcopy(kept.object)
    del taken_back["metadata"]["annotations"][r.KEEP_UNTIL]
    write = Write(kept.request, taken_back, kept.object)
    assert admit(policies(), write).allowed


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(setting(r.RECLAIM_AFTER, "2030-01-15T18:00:00Z"), id="move-the-stop"),
        pytest.param(removing(r.RECLAIM_AFTER), id="erase-the-stop"),
        pytest.param(removing(r.WARNED_AT), id="erase-warned-at"),
        pytest.param(setting(r.WARNED_FOR, "team-a/mine"), id="change-warned-for"),
        pytest.param(setting(r.PREFIX + "suspended-by", "gpu-reclaimer"), id="forge-suspended-by"),
        pytest.param(setting(r.PREFIX + "keep-until-x", "x"), id="a-lookalike-key"),
    ],
)
def test_an_owner_may_change_no_other_gpu_reclaim_annotation(
    change: Callable[[dict[str, str]], None],
) -> None:
    outcome = admit(policies(), owner_patch(change))
    assert outcome.denials == {DENIED}


def test_the_same_owner_patch_with_keep_until_is_still_denied() -> None:
    def both(notes: dict[str, str]) -> None:
        notes[r.KEEP_UNTIL] = "2030-01-15T18:00:00Z"
        notes[r.RECLAIM_AFTER] = "2030-01-15T18:00:00Z"

    assert admit(policies(), owner_patch(both)).denials == {DENIED}


@pytest.mark.parametrize("flow", sorted(FLOWS))
def test_the_reclaimers_own_writes_are_not_matched(flow: str) -> None:
    for write in run_flow(flow):
        assert admit(policies(), write).matched == (), str(write)
