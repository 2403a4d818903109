"""What the fake API server refuses on create, as the real one (and Volcano) would.

Three layers, each answering like the API server does:
- request checks (400): a body whose `metadata.namespace` differs from the URL's.
- object-meta validation (422): every `ownerReferences` entry needs apiVersion, kind, name and
  uid, and at most one may be the controller.
- the `commands.bus.volcano.sh` CRD schema (volcano-sh/volcano config/crd/volcano/bases/
  bus.volcano.sh_commands.yaml, 422): `action`, `reason`, `message` are strings; `target`, when
  present, is an OwnerReference with apiVersion, kind, name and uid required.
The real API server stores a Command without a target, or one whose target or action no Volcano
controller handles; Volcano's job and queue controllers then silently ignore it, and nothing is
ever aborted. The fake is deliberately stricter there and answers 422 with a message saying so,
so a test catches a Command that would do nothing on a real cluster.
"""

from __future__ import annotations

from typing import Any

from fakeapi.errors import ApiError

Obj = dict[str, Any]
Res = tuple[str, str, str]

COMMANDS: Res = ("bus.volcano.sh", "v1alpha1", "commands")
_OWNER_REQUIRED = ("apiVersion", "kind", "name", "uid")
# what each Volcano controller accepts in a Command's target and action (bus/v1alpha1 actions.go;
# the internal actions SyncJob, EnqueueJob and SyncQueue are not for users)
_HANDLED = {
    ("batch.volcano.sh/v1alpha1", "Job"): frozenset(
        {
            "AbortJob",
            "ResumeJob",
            "RestartJob",
            "RestartTask",
            "RestartPod",
            "RestartPartition",
            "TerminateJob",
            "CompleteJob",
        }
    ),
    ("scheduling.volcano.sh/v1beta1", "Queue"): frozenset({"OpenQueue", "CloseQueue"}),
}


def _invalid(kind: str, name: str, problems: list[str]) -> ApiError:
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {", ".join(problems)}')


def owner_reference_problems(refs: object, path: str) -> list[str]:
    if refs is None:
        return []
    if not isinstance(refs, list) or not all(isinstance(x, dict) for x in refs):
        return [f"{path}: Invalid value: must be a list of objects"]
    problems = [
        f'{path}[{i}].{key}: Invalid value: "": {key} must not be empty'
        for i, ref in enumerate(refs)
        for key in _OWNER_REQUIRED
        if not ref.get(key)
    ]
    if sum(1 for ref in refs if ref.get("controller") is True) > 1:
        problems.append(
            f"{path}: Invalid value: Only one reference can have Controller set to true"
        )
    return problems


def _schema_problems(obj: Obj) -> list[str]:
    """The Command CRD's structural schema: types, and the target's required fields."""
    problems = [
        f"{key}: Invalid value: must be of type string"
        for key in ("action", "reason", "message")
        if key in obj and not isinstance(obj[key], str)
    ]
    target = obj.get("target")
    if target is None:
        return problems
    if not isinstance(target, dict):
        return [*problems, "target: Invalid value: must be of type object"]
    problems += [f"target.{key}: Required value" for key in _OWNER_REQUIRED if key not in target]
    problems += [
        f"target.{key}: Invalid value: must be of type boolean"
        for key in ("controller", "blockOwnerDeletion")
        if key in target and not isinstance(target[key], bool)
    ]
    return problems


def _volcano_problems(obj: Obj) -> list[str]:
    """Stricter than the API server: a Command no Volcano controller would act on."""
    target = obj.get("target")
    if not isinstance(target, dict):
        return ["target: Required value (fake: Volcano ignores a Command without a target)"]
    actions = _HANDLED.get((str(target.get("apiVersion")), str(target.get("kind"))))
    if actions is None:
        handled = ", ".join(f"{a} {k}" for a, k in _HANDLED)
        return [
            f"target: Unsupported value: {target.get('apiVersion')} {target.get('kind')} "
            f"(fake: Volcano only handles a target that is a {handled})"
        ]
    if obj.get("action") not in actions:
        return [
            f'action: Unsupported value: "{obj.get("action")}": supported values: '
            f"{', '.join(sorted(actions))} (fake: Volcano ignores any other)"
        ]
    return []


def check_create(res: Res, kind: str, ns: str, obj: Obj) -> None:
    """Raise the API server's answer to creating `obj` in namespace `ns`, if it is a refusal."""
    meta = obj.get("metadata") or {}
    if ns and meta.get("namespace") not in (None, "", ns):
        raise ApiError(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
        )
    name = str(meta.get("name") or meta.get("generateName") or "")
    problems = owner_reference_problems(meta.get("ownerReferences"), "metadata.ownerReferences")
    if res == COMMANDS:
        problems += _schema_problems(obj)
        problems = problems or _volcano_problems(obj)
    if problems:
        raise _invalid(f"{kind}.{res[0]}" if res[0] else kind, name, problems)
