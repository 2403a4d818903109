"""The API server's ValidatingAdmissionPolicy evaluation, in Python, for the deploy tests.

`admit(policies, write)` does what the API server does with one write request: select the
policies whose `matchConstraints.resourceRules` match (apiGroups, apiVersions, resources with
subresources as `pods/eviction`, `*` and `*/*`, operations), evaluate their `matchConditions`
(any false: the policy is skipped), then their `variables` in order and their `validations`; it
returns, per matching policy, the messages of the validations that came out false. Expressions are
evaluated by cel-python (`celpy`), never re-implemented here.

The inputs are shaped as the API server hands them to CEL: `object` / `oldObject` are the JSON
of the objects (fields that JSON omits are absent, so `has()` matters), `oldObject` is null on
CREATE and `object` null on DELETE, and `request` is the AdmissionRequest's JSON (`subResource`,
`namespace`, `name`, `dryRun` absent when empty). `variables.<name>` is a map holding each
variable's value.

Two differences from the API server, both on the strict side: variables are evaluated eagerly
(the API server evaluates one only when an expression uses it), and an expression that errors
raises `AdmissionError` instead of being handled by `failurePolicy` (which is Fail, that is a
denial, in every policy here): the tests want each denial to come from a rule that says false.
cel-python has no heterogeneous equality (`1 == 'a'` is an error where cel-go says false); the
policies never compare values of different types.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import celpy
from celpy import celtypes

Obj = dict[str, Any]

VAP = "ValidatingAdmissionPolicy"
BINDING = "ValidatingAdmissionPolicyBinding"


class AdmissionError(Exception):
    """An expression failed to compile or to evaluate."""


@dataclass(frozen=True)
class Write:
    """One request as admission sees it: AdmissionRequest JSON, the new and the stored object."""

    request: Obj
    object: Obj | None
    old: Obj | None = None

    def __str__(self) -> str:
        r = self.request
        res = r["resource"]
        sub = f"/{r['subResource']}" if r.get("subResource") else ""
        where = "/".join(p for p in (r.get("namespace"), r.get("name")) if p)
        return f"{r['operation']} {res['group'] or 'core'}/{res['resource']}{sub} {where}"


@dataclass(frozen=True)
class Outcome:
    """Per policy that matched the request: the messages of its failed validations."""

    failed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def matched(self) -> tuple[str, ...]:
        return tuple(sorted(self.failed))

    @property
    def allowed(self) -> bool:
        return not any(self.failed.values())

    @property
    def denials(self) -> set[tuple[str, str]]:
        return {(p, m) for p, messages in self.failed.items() for m in messages}


def admission_request(
    operation: str,
    *,
    group: str,
    version: str,
    resource: str,
    kind: str,
    namespace: str = "",
    name: str = "",
    sub_resource: str = "",
    username: str,
    dry_run: bool = False,
    options: Obj | None = None,
) -> Obj:
    """An AdmissionRequest as JSON (what `request` is in CEL): empty omitempty fields absent."""
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    request: Obj = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "operation": operation,
        "userInfo": {"username": username, "groups": _groups(username)},
        "options": options or {},
    }
    optional = {
        "subResource": sub_resource,
        "requestSubResource": sub_resource,
        "namespace": namespace,
        "name": name,
        "dryRun": dry_run,
    }
    request.update({k: v for k, v in optional.items() if v})
    return request


def _groups(username: str) -> list[str]:
    parts = username.split(":")
    if parts[:2] == ["system", "serviceaccount"] and len(parts) == 4:
        return [
            "system:serviceaccounts",
            f"system:serviceaccounts:{parts[2]}",
            "system:authenticated",
        ]
    return ["system:authenticated"]


def policies_of(objects: Iterable[Obj]) -> dict[str, Obj]:
    """The policies that a binding with validationActions [Deny] puts in force, by name."""
    objects = list(objects)
    denying = {
        o["spec"]["policyName"]
        for o in objects
        if o["kind"] == BINDING and "Deny" in o["spec"].get("validationActions", [])
    }
    return {
        o["metadata"]["name"]: o
        for o in objects
        if o["kind"] == VAP and o["metadata"]["name"] in denying
    }


def admit(policies: Mapping[str, Obj], write: Write) -> Outcome:
    failed: dict[str, tuple[str, ...]] = {}
    for name, policy in sorted(policies.items()):
        if not rules_match(policy["spec"]["matchConstraints"]["resourceRules"], write.request):
            continue
        result = evaluate(policy["spec"], write)
        if result is not None:
            failed[name] = result
    return Outcome(failed)


def rules_match(rules: Iterable[Mapping[str, Any]], request: Mapping[str, Any]) -> bool:
    """resourceRules as the API server matches them (rules.Matcher in k8s.io/apiserver)."""
    res = request["resource"]
    sub = request.get("subResource", "")
    for rule in rules:
        ops = rule.get("operations", [])
        if "*" not in ops and request["operation"] not in ops:
            continue
        if not _any(rule.get("apiGroups", []), res["group"]):
            continue
        if not _any(rule.get("apiVersions", []), res["version"]):
            continue
        for pattern in rule.get("resources", []):
            want_res, _, want_sub = pattern.partition("/")
            if want_res in ("*", res["resource"]) and want_sub in ("*", sub):
                return True
    return False


def _any(patterns: Iterable[str], value: str) -> bool:
    return any(p in ("*", value) for p in patterns)


def evaluate(spec: Mapping[str, Any], write: Write) -> tuple[str, ...] | None:
    """None when a matchCondition is false; else the messages of the failed validations."""
    activation: dict[str, Any] = {
        "object": to_cel(write.object),
        "oldObject": to_cel(write.old),
        "request": to_cel(write.request),
        "params": None,
        "namespaceObject": None,
    }
    for condition in spec.get("matchConditions", []):
        if not _boolean(condition["expression"], activation):
            return None
    variables: dict[celtypes.StringType, Any] = {}
    activation["variables"] = celtypes.MapType(variables)
    for variable in spec.get("variables", []):
        value = _run(variable["expression"], activation)
        variables[celtypes.StringType(variable["name"])] = _listed(value)
        activation["variables"] = celtypes.MapType(variables)
    failed = []
    for validation in spec.get("validations", []):
        if _boolean(validation["expression"], activation):
            continue
        if "messageExpression" in validation:  # the API server shows it: it must work
            shown = _run(validation["messageExpression"], activation)
            if not isinstance(shown, str):  # a StringType is a str
                raise AdmissionError(f"messageExpression gave {shown!r}")
        failed.append(validation["message"])
    return tuple(failed)


def to_cel(value: Any) -> Any:
    """JSON (as the API server serializes the objects) to cel-python values."""
    if value is None:
        return None
    return celpy.json_to_cel(json.loads(json.dumps(value)))


def _listed(value: Any) -> Any:
    # cel-python gives list concatenation back as a Python list; macros want its ListType
    return celtypes.ListType(value) if isinstance(value, list) else value


@cache
def compiled(expression: str) -> Any:
    env = celpy.Environment()
    try:
        return env.program(env.compile(expression))
    except celpy.CELParseError as exc:
        raise AdmissionError(f"cannot compile {expression!r}: {exc}") from exc


def _run(expression: str, activation: Mapping[str, Any]) -> Any:
    try:
        return compiled(expression).evaluate(dict(activation))
    except celpy.CELEvalError as exc:
        raise AdmissionError(f"{expression!r} failed: {exc.args[0]}") from exc


def _boolean(expression: str, activation: Mapping[str, Any]) -> bool:
    result = _run(expression, activation)
    if not isinstance(result, celtypes.BoolType):
        raise AdmissionError(f"{expression!r} gave {result!r}, not a bool")
    return bool(result)
