"""Which parts `gpu-reclaimer run` plugs into the controller, chosen from the command line.

- Cluster: a `--cluster-file` dump (read again every cycle, never acted on), or the API server
  through `reclaimer.kube` (credentials from `--kubeconfig`, in-cluster, or ~/.kube/config).
- Forecaster: `reclaimer.forecast.forecaster.forecast` with the policy's horizon, threshold and
  confidence. Planner: `reclaimer.plan.planner.plan`. Actuator:
  `reclaimer.runtime.actuator.Actuator`, dry-run unless `--apply`; none in cluster-file mode.
- Leader election (`--leader-elect`): `reclaimer.kube.lease.LeaderElector` renews a Lease
  (gpu-reclaim/gpu-reclaimer, identity = `<host name>_<random UUID>`, unique per process even
  where replicas share a host name) beside the loop. Every replica
  plans and serves `/plan`; only the leader acts (the controller and the actuator both ask
  `is_leader()`). On SIGTERM the cycle in flight finishes first, then the Lease is released.
  With `--once` the Lease is taken before the cycle (and renewed during it) or the run exits 2
  saying who holds it: a one-shot `--apply` never silently plans without acting.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from reclaimer.forecast.forecaster import forecast
from reclaimer.forecast.history import History
from reclaimer.forecast.params import for_policy
from reclaimer.kube.client import KubeApi, KubeConfigError, KubeError, build_api, call
from reclaimer.kube.dumps import ClusterFileError, load_cluster_file
from reclaimer.kube.lease import LeaderElector, LeaseConfig, process_identity
from reclaimer.kube.read import read_cluster_sync
from reclaimer.kube.write import event_body
from reclaimer.model import ClusterView, Forecast
from reclaimer.plan.planner import plan
from reclaimer.policy.settings import Policy
from reclaimer.runtime.actuator import Actuator
from reclaimer.runtime.controller import Applier, Controller, ControllerConfig, Forecaster, Planner
from reclaimer.runtime.notify import DEFAULT_SECRET_DIR, Notifier

log = logging.getLogger("gpu_reclaimer.run")


class UsageError(Exception):
    """A command line or configuration the reclaimer refuses to start with (exit 2)."""


RunLoop = Callable[[Controller, float, asyncio.Event], Awaitable[None]]


@dataclass(frozen=True)
class Wiring:
    read_cluster: Callable[[], ClusterView]
    forecaster: Forecaster
    planner: Planner
    actuator: Applier | None
    is_leader: Callable[[], bool]
    run_loop: RunLoop
    close: Callable[[], None]
    elector: LeaderElector | None = None  # with --leader-elect
    # a reloaded policy, for the actuator and the cluster reads
    use_policy: Callable[[Policy], None] = lambda _: None
    policy_rejected: Callable[[str], None] = lambda _: None  # a Warning Event on our own Pod
    notifier: Notifier | None = None  # the warnings' webhooks (`runtime.notify`)


def policy_forecaster(history: History, policy: Policy, now: float) -> Mapping[str, Forecast]:
    return forecast(history, for_policy(policy), now)


def _elected_loop(elector: LeaderElector) -> RunLoop:
    """Run the controller while the elector renews; release only after the last cycle ends."""

    async def loop(controller: Controller, interval: float, stop: asyncio.Event) -> None:
        lease_stop = asyncio.Event()
        renewer = asyncio.create_task(elector.run(lease_stop))
        try:
            await controller.run(interval, stop)
        finally:
            lease_stop.set()
            await renewer  # releases the Lease

    return loop


def _always() -> bool:
    return True


async def _plain_loop(controller: Controller, interval: float, stop: asyncio.Event) -> None:
    await controller.run(interval, stop)


def wire(
    args: argparse.Namespace,
    policy: Policy,
    config: ControllerConfig,
    clock: Callable[[], float],
    env: Mapping[str, str],
) -> Wiring:
    if args.cluster_file:
        return _file_wiring(args.cluster_file, policy, clock)
    return _live_wiring(args, policy, config, clock, own_pod(env))


@dataclass
class _InForce:
    """The policy in force, for the cluster reads: which DRA devices are GPUs follows a reload."""

    policy: Policy


def _file_wiring(path: str, policy: Policy, clock: Callable[[], float]) -> Wiring:
    held = _InForce(policy)
    try:
        load_cluster_file(path, clock(), gpu_classes=policy.dra)  # fail fast, with its message
    except ClusterFileError as err:
        raise UsageError(f"--cluster-file: {err}") from err
    return Wiring(
        read_cluster=lambda: load_cluster_file(path, clock(), gpu_classes=held.policy.dra),
        forecaster=policy_forecaster,
        planner=plan,
        actuator=None,
        is_leader=_always,
        run_loop=_plain_loop,
        close=lambda: None,
        use_policy=partial(setattr, held, "policy"),
    )


def _live_wiring(
    args: argparse.Namespace,
    policy: Policy,
    config: ControllerConfig,
    clock: Callable[[], float],
    pod: Mapping[str, str] | None,
) -> Wiring:
    try:
        api = build_api(args.kubeconfig)
    except KubeConfigError as err:
        raise UsageError(str(err)) from err
    is_leader: Callable[[], bool] = _always
    run_loop: RunLoop = _plain_loop
    elector: LeaderElector | None = None
    if args.leader_elect:
        identity = process_identity(socket.gethostname(), uuid.uuid4())
        elector = LeaderElector(
            api, LeaseConfig(identity=identity), wall=clock, monotonic=time.monotonic
        )
        is_leader, run_loop = elector.is_leader, _elected_loop(elector)
    notifier = Notifier(Path(getattr(args, "webhook_secret_dir", DEFAULT_SECRET_DIR)))
    actuator = Actuator(
        api,
        clock=clock,
        dry_run=config.dry_run,
        policy=policy,
        may_write=is_leader,
        notifier=notifier,
    )
    held = _InForce(policy)

    def use_policy(new: Policy) -> None:
        actuator.policy = held.policy = new

    return Wiring(
        read_cluster=lambda: read_cluster_sync(api, clock(), gpu_classes=held.policy.dra),
        forecaster=policy_forecaster,
        planner=plan,
        actuator=actuator,
        is_leader=is_leader,
        run_loop=run_loop,
        close=api.close,
        elector=elector if args.leader_elect else None,
        use_policy=use_policy,
        policy_rejected=partial(_policy_event, api, pod, clock),
        notifier=notifier,
    )


POLICY_REJECTED = "GpuReclaimPolicyRejected"


def own_pod(env: Mapping[str, str]) -> dict[str, str] | None:
    """The controller's own Pod as an Event's involvedObject, from the downward API's env
    (POD_NAME, POD_NAMESPACE, POD_UID: `kubectl describe pod` matches Events by uid); pure."""
    name, namespace = env.get("POD_NAME", ""), env.get("POD_NAMESPACE", "")
    if not name or not namespace:
        return None
    ref = {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace}
    return {**ref, "uid": env.get("POD_UID", "")}


def _policy_event(
    api: KubeApi, pod: Mapping[str, str] | None, clock: Callable[[], float], why: str
) -> None:
    """A Warning Event on our own Pod saying the policy file was refused. Written for real even
    in dry-run, and by every replica (each reads its own copy), like the Lease: it describes the
    controller, not an action on the cluster's workloads. Never raises."""
    if pod is None:
        log.warning("no %s Event: POD_NAME and POD_NAMESPACE are not set", POLICY_REJECTED)
        return
    message = f"{why}\nkeeping the policy in force until the file changes"
    body = event_body(pod, POLICY_REJECTED, message, clock(), instance=pod["name"], warning=True)
    try:
        call(api, api.core.create_namespaced_event, pod["namespace"], body)
    except KubeError as err:
        log.warning("%s Event not recorded: %s", POLICY_REJECTED, err)
