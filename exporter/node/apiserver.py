"""The node's pods and ResourceSlices from the Kubernetes API server, standard library only.

The exporter needs a handful of fields per pod of its own node, so instead of the `kubernetes`
client (about 40 MiB of resident memory, and by house rule reserved to the reclaimer's Kubernetes
modules) it issues `GET /api/v1/pods?fieldSelector=spec.nodeName%3D<node>&limit=N` itself with
`urllib.request` (the same for the node's ResourceSlices under `/apis/resource.k8s.io/...`) and
follows `metadata.continue` page by page; each page is decoded and handed
to the caller before the next is fetched, so memory stays at one page.

An `ApiEndpoint` says where and how: in-cluster (`KUBERNETES_SERVICE_HOST`/`_PORT`, the
service-account token and CA) or an explicit URL with an optional token file and CA file. The
bearer token is re-read from its file for every request, because projected service-account
tokens rotate. Proxies from the environment are ignored and redirects are refused, so the token
goes to the API server and nowhere else. Every failure (HTTP status, timeout, unreachable,
unreadable token, a body that is not a JSON object) raises `ApiServerError` with a short reason.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
PODS_PATH = "/api/v1/pods"
PAGE_LIMIT = 500
MAX_PAGES = 10_000  # a guard against a server that never stops handing out continue tokens
_ERROR_BODY_BYTES = 4096


@dataclass(frozen=True)
class ApiEndpoint:
    base_url: str  # scheme://host[:port][/prefix], no trailing slash
    token_file: Path | None = None
    ca_file: Path | None = None  # None: the system trust store
    insecure_skip_tls_verify: bool = False  # tests and development only


class ApiServerError(Exception):
    """A list call failed; the message says why in a few words, `status` the HTTP status when
    the server answered one (404: the server does not serve that resource or version)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def in_cluster_endpoint(
    env: Mapping[str, str], sa_dir: Path = IN_CLUSTER_DIR
) -> ApiEndpoint | None:
    """Pure: the API server as seen from a pod, or None when not running in a cluster."""
    host = env.get("KUBERNETES_SERVICE_HOST", "")
    port = env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        return None
    if ":" in host:  # an IPv6 service address
        host = f"[{host}]"
    return ApiEndpoint(f"https://{host}:{port}", sa_dir / "token", sa_dir / "ca.crt")


def node_list_url(
    base_url: str, path: str, node: str, limit: int, continue_token: str | None
) -> str:
    """Pure: the URL of one page of the objects at `path` whose `spec.nodeName` is `node`
    (query values percent-encoded)."""
    query: dict[str, str | int] = {"fieldSelector": f"spec.nodeName={node}", "limit": limit}
    if continue_token:
        query["continue"] = continue_token
    return f"{base_url.rstrip('/')}{path}?{urlencode(query)}"


def pods_url(base_url: str, node: str, limit: int, continue_token: str | None) -> str:
    """Pure: the URL of one page of the node's pods (query values percent-encoded)."""
    return node_list_url(base_url, PODS_PATH, node, limit, continue_token)


def list_pod_pages(
    endpoint: ApiEndpoint, node: str, *, timeout: float, page_limit: int = PAGE_LIMIT
) -> Iterator[Mapping[str, Any]]:
    """Blocking: yield each decoded `PodList` page of the node's pods, first to last."""
    return list_node_pages(endpoint, PODS_PATH, node, timeout=timeout, page_limit=page_limit)


def list_node_pages(
    endpoint: ApiEndpoint,
    path: str,
    node: str,
    *,
    timeout: float,
    page_limit: int = PAGE_LIMIT,
) -> Iterator[Mapping[str, Any]]:
    """Blocking: yield each decoded page of the list at `path` (`/api/v1/pods`, a group's
    `/apis/<group>/<version>/<resource>`) selected by `spec.nodeName`, first to last."""
    opener = _opener(endpoint)
    token: str | None = None
    for _ in range(MAX_PAGES):
        url = node_list_url(endpoint.base_url, path, node, page_limit, token)
        page = _get_json(opener, url, endpoint.token_file, timeout)
        yield page
        meta = page.get("metadata")
        token = meta.get("continue") if isinstance(meta, dict) else None
        if not token:
            return
    raise ApiServerError(f"more than {MAX_PAGES} pages")


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the bearer token elsewhere; the API server never sends one."""

    def redirect_request(self, *_args: Any, **_kwargs: Any) -> None:
        return None  # urllib then raises HTTPError with the 3xx status


def _ssl_context(endpoint: ApiEndpoint) -> ssl.SSLContext:
    if endpoint.insecure_skip_tls_verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    cafile = str(endpoint.ca_file) if endpoint.ca_file is not None else None
    try:
        return ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise ApiServerError(f"cannot load CA file {endpoint.ca_file}: {exc}") from exc


def _opener(endpoint: ApiEndpoint) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = [
        urllib.request.ProxyHandler({}),
        _RefuseRedirects(),
    ]
    if endpoint.base_url.startswith("https:"):
        handlers.append(urllib.request.HTTPSHandler(context=_ssl_context(endpoint)))
    return urllib.request.build_opener(*handlers)


def _headers(token_file: Path | None) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if token_file is not None:
        try:
            token = token_file.read_text().strip()
        except OSError as exc:
            raise ApiServerError(f"cannot read token file {token_file}: {exc}") from exc
        if not token:
            raise ApiServerError(f"token file {token_file} is empty")
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _get_json(
    opener: urllib.request.OpenerDirector, url: str, token_file: Path | None, timeout: float
) -> Mapping[str, Any]:
    request = urllib.request.Request(url, headers=_headers(token_file))
    try:
        with opener.open(request, timeout=timeout) as response:
            data = json.load(response)
    except urllib.error.HTTPError as exc:
        with exc:
            raise ApiServerError(f"HTTP {exc.code}: {_status_message(exc)}", exc.code) from exc
    except urllib.error.URLError as exc:
        raise ApiServerError(f"cannot reach the API server: {exc.reason}") from exc
    except TimeoutError as exc:
        raise ApiServerError(f"no answer within {timeout:g} s") from exc
    except (OSError, http.client.HTTPException) as exc:
        raise ApiServerError(f"connection failed: {exc!r}") from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ApiServerError(f"the answer is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ApiServerError(f"the answer is a JSON {type(data).__name__}, not an object")
    return data


def _status_message(exc: urllib.error.HTTPError) -> str:
    """The `message` of a Kubernetes `Status` body when there is one, else the HTTP reason."""
    try:
        body = json.loads(exc.read(_ERROR_BODY_BYTES))
        message = body.get("message") if isinstance(body, dict) else None
    except (OSError, ValueError, http.client.HTTPException):
        message = None
    return str(message or exc.reason)
