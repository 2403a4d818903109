"""Building the Kubernetes API client, and the one way every call goes through it.

`build_api()` loads a kubeconfig (a path, else in-cluster credentials, else the default
kubeconfig). `call()` runs one blocking request with a timeout, returns the decoded JSON as plain
dicts (no model objects: the converter wants the wire shape, and decoding 10,000 pods into
models is slow) and turns every failure into `KubeError` carrying the HTTP status (0 for
transport errors and timeouts) and the answer's `Retry-After`. Callers run these blocking calls
off the event loop; `KubeApi.sleep` is how they wait before sending a throttled call again.

The timeout urllib3 applies is per socket operation: an answer whose bytes trickle in (an
overloaded API server or proxy) would hold a call as long as the server keeps sending. So
`call()` reads a successful answer's body itself, a chunk of what has arrived at a time, and
gives up once `timeout` has passed since the request started (`KubeError` status 0, reason
`Timeout`; the connection is closed, never reused). A call thus lasts at most about twice
`timeout` (the deadline, plus one socket read already under way). Answers that stall before
their headers are left to the socket timeout and to the cycle's own deadline.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

DEFAULT_TIMEOUT_S = 10.0


class KubeError(Exception):
    """A failed API call: `status` is the HTTP code, 0 for timeouts and connection errors;
    `retry_after` the seconds of the answer's `Retry-After` header, when it had one."""

    def __init__(
        self, status: int, reason: str, message: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after


class KubeConfigError(Exception):
    """No usable credentials (bad kubeconfig path, not in a cluster)."""


@dataclass(frozen=True)
class KubeApi:
    """The typed API groups the reclaimer uses, sharing one client and one timeout."""

    client: Any  # kubernetes.client.ApiClient
    timeout: float = DEFAULT_TIMEOUT_S
    sleep: Callable[[float], None] = time.sleep  # waits before a throttled call is sent again

    @property
    def core(self) -> Any:
        return k8s.CoreV1Api(self.client)

    @property
    def custom(self) -> Any:
        return k8s.CustomObjectsApi(self.client)

    @property
    def policy(self) -> Any:
        return k8s.PolicyV1Api(self.client)

    @property
    def scheduling(self) -> Any:
        return k8s.SchedulingV1Api(self.client)

    def close(self) -> None:
        self.client.close()


def api_from_configuration(
    cfg: Any, timeout: float = DEFAULT_TIMEOUT_S, sleep: Callable[[float], None] = time.sleep
) -> KubeApi:
    """A `KubeApi` from a ready `kubernetes.client.Configuration` (tests pass host=http://...)."""
    cfg.retries = False  # one attempt per call: the cycle, not urllib3, decides about retrying
    return KubeApi(k8s.ApiClient(cfg), timeout, sleep)


def build_api(
    kubeconfig: str | None = None, context: str | None = None, timeout: float = DEFAULT_TIMEOUT_S
) -> KubeApi:
    """Credentials from `kubeconfig`, else in-cluster, else ~/.kube/config."""
    cfg = k8s.Configuration()
    try:
        if kubeconfig:
            k8s_config.load_kube_config(kubeconfig, context, client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            try:
                k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            except ConfigException:
                k8s_config.load_kube_config(None, context, client_configuration=cfg)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        raise KubeConfigError(f"no usable Kubernetes credentials: {exc}") from exc
    return api_from_configuration(cfg, timeout)


def call(api: KubeApi, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one API method with the timeout; decoded JSON body, or `KubeError`."""
    deadline = time.monotonic() + api.timeout
    try:
        response = method(*args, _request_timeout=api.timeout, _preload_content=False, **kwargs)
        data = read_body(response, deadline, api.timeout)
    except k8s.ApiException as exc:
        status, reason = exc.status or 0, str(exc.reason or "error")
        wait = _retry_after(exc.headers)
        raise KubeError(status, reason, _message(exc.body), wait) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise KubeError(0, type(exc).__name__, str(exc)) from exc
    if not data:
        return {}
    try:
        return json.loads(data)
    except ValueError as exc:
        raise KubeError(0, "BadResponse", f"response is not JSON: {exc}") from exc


CHUNK_BYTES = 1 << 16


def read_body(response: Any, deadline: float, timeout: float) -> bytes:
    """The body of a urllib3 response, read before `deadline` (monotonic) or `KubeError`."""
    chunks: list[bytes] = []
    received = 0
    try:
        while True:
            if time.monotonic() >= deadline:
                why = f"answer not complete within {timeout:g}s ({received} bytes received)"
                raise KubeError(0, "Timeout", why)
            chunk = response.read1(CHUNK_BYTES)  # what has arrived, up to one socket read
            if not chunk:
                break
            chunks.append(chunk)
            received += len(chunk)
    except BaseException:
        response.close()  # a half-read answer: the connection must not go back to the pool
        raise
    response.release_conn()
    return b"".join(chunks)


def _retry_after(headers: Any) -> float | None:
    """`Retry-After` in seconds; kube-apiserver's throttling filters (max-in-flight, priority
    and fairness: apiserver/pkg/server/filters) send whole seconds, as client-go reads it
    (rest/request.go `retryAfterSeconds`). A date or junk reads as none."""
    raw = headers.get("Retry-After") if headers is not None else None
    try:
        seconds = float(raw) if raw is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


def _message(body: object) -> str:
    if isinstance(body, bytes | str):
        try:
            decoded = json.loads(body)
        except ValueError:
            return str(body)[:200]
        if isinstance(decoded, dict):
            return str(decoded.get("message", ""))
    return ""
