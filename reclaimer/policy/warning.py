"""How long an owner is warned before the reclaimer stops their job, and how long they may keep it.

The `warning:` section of the policy. A job the planner picks to stop is first *warned*: the
stop is scheduled `warnBefore` later (a Warning Event, the `gpu-reclaim.io/reclaim-after`
annotation), and only a cycle at or after that time stops it (`reclaimer.plan.warning`). The
period is looked up per job: its queue in `byQueue`, else its kind in `byKind`, else
`warnBefore`. The default warns Notebooks 10 minutes ahead (a person's kernel state is what a stop
loses) and stops every other kind at once (`docs/warnings.md` says why). An owner may keep a
warned job longer with `gpu-reclaim.io/keep-until`, honoured up to `maxKeep` after the scheduled
stop. `webhooks` tell a namespace's or a queue's owners too (`reclaimer.runtime.notify`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from reclaimer.model import JobKind
from reclaimer.policy.fields import CrossCheck, as_duration, as_string, setting

NOTEBOOK_WARNING_S = 600.0
"""A Notebook's default warning: long enough to come back from a coffee, save and close."""


@dataclass(frozen=True)
class Webhook:
    """Where the owners of a namespace's or a queue's jobs are told of warnings: a webhook whose
    URL is the file `secretKey` of the mounted webhook Secret (`--webhook-secret-dir`), so the
    URL never sits in the policy, a log line or an Event."""

    namespace: str = setting("", as_string, "namespace")
    queue: str = setting("", as_string, "queue")
    secret_key: str = setting("", as_string, "secretKey")

    def matches(self, namespace: str, queue: str) -> bool:
        return self.namespace == namespace if self.namespace else self.queue == queue


@dataclass(frozen=True)
class WarningPolicy:
    """The warning period before a stop, per queue and per workload kind, and the keep cap."""

    warn_before_seconds: float = setting(0.0, as_duration, "warnBefore")
    by_kind: Mapping[str, float] = setting(
        MappingProxyType({JobKind.NOTEBOOK.value: NOTEBOOK_WARNING_S}),
        None,
        "byKind",
        values=as_duration,
    )
    by_queue: Mapping[str, float] = setting(
        MappingProxyType({}), None, "byQueue", values=as_duration
    )
    # An owner's keep-until is honoured up to this long after the scheduled stop: the starved
    # queue waits for it, so a keep cannot hold GPUs for longer than an afternoon.
    max_keep_seconds: float = setting(4 * 3600.0, as_duration, "maxKeep")
    webhooks: tuple[Webhook, ...] = setting((), None, "webhooks", items=Webhook)

    def before(self, kind: JobKind | str, queue: str) -> float:
        """Seconds of warning before a job of `kind` in `queue` is stopped (0: no warning)."""
        if queue in self.by_queue:
            return self.by_queue[queue]
        return self.by_kind.get(str(kind), self.warn_before_seconds)

    def problems(self) -> list[CrossCheck]:
        known = {k.value for k in JobKind}
        why = f"unknown workload kind (known: {', '.join(sorted(known))})"
        out: list[CrossCheck] = [
            ((f"byKind.{name}", "byKind"), why) for name in sorted(set(self.by_kind) - known)
        ]
        for i, hook in enumerate(self.webhooks):
            if bool(hook.namespace) == bool(hook.queue):
                out.append(((f"webhooks[{i}]", "webhooks"), "set one of namespace and queue"))
            if not hook.secret_key or "/" in hook.secret_key or hook.secret_key.startswith("."):
                why = "a key of the webhook Secret (a file name) is required"
                out.append(((f"webhooks[{i}].secretKey", "webhooks"), why))
        return out
