"""The reclaimer's only door to Prometheus: `/api/v1/query` and `/api/v1/query_range` over aiohttp.

Every request is a form POST (long PromQL never hits URL limits) with a client-side timeout and the
same timeout passed to Prometheus. Transient failures (connection refused, timeouts, HTTP 429 and
5xx) are retried with exponential backoff, a bounded number of times; anything else fails at once.
Failures raise `PromError` carrying a `PromErrorKind`, so callers can tell "down" from "bad query".
A success that is not clean is never passed off as clean: Prometheus' `warnings` travel with the
`QueryResult` (callers treat them as partial data), and a result of the wrong type is an error.
`requests` counts HTTP requests sent, retries included, for tests and the request-budget report.
Credentials (`reclaimer.prometheus.auth.Credentials`) add their headers to every request, and every
error message is scrubbed of them; the base URL appears only redacted.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from reclaimer.prometheus.auth import CredentialError, Credentials, redact_url
from reclaimer.prometheus.series import QueryResult, Series


class PromErrorKind(StrEnum):
    UNREACHABLE = "unreachable"  # connection refused / reset / DNS
    TIMEOUT = "timeout"
    HTTP = "http"  # non-JSON HTTP error (proxy, 404, ...)
    API = "api"  # Prometheus said status=error (bad_data, execution, timeout, ...)
    BAD_RESPONSE = "bad_response"  # malformed JSON or unexpected resultType


class PromError(Exception):
    def __init__(self, kind: PromErrorKind, detail: str, status: int | None = None) -> None:
        super().__init__(f"prometheus {kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.status = status

    @property
    def too_many_samples(self) -> bool:
        """Prometheus refused the query as over its `--query.max-samples` (HTTP 422, "query
        processing would load too many samples into memory", promql.ErrTooManySamples): the
        same query over fewer series or a shorter range may pass."""
        return self.status == 422 and "too many samples" in self.detail


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3  # total tries per request
    base_delay: float = 0.5  # seconds before the first retry, doubled each time
    max_delay: float = 5.0
    timeout: float = 15.0  # seconds per try

    def delay(self, retry: int) -> float:
        return float(min(self.max_delay, self.base_delay * 2**retry))


_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
Sleep = Callable[[float], Awaitable[None]]


class PromClient:
    """Async Prometheus HTTP API client; use as `async with PromClient(url) as prom:`."""

    def __init__(
        self,
        base_url: str,
        retry: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        credentials: Credentials | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.shown_url = redact_url(self.base_url)
        self.credentials = credentials or Credentials()
        if self.credentials.url_password is None:
            self.credentials.url_password = urlsplit(self.base_url).password
            self.credentials.check()
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._session: aiohttp.ClientSession | None = None
        self.requests = 0

    async def __aenter__(self) -> PromClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def query(self, promql: str, at: float | None = None) -> QueryResult:
        form = {"query": promql}
        if at is not None:
            form["time"] = _fmt(at)
        return await self._call("/api/v1/query", form, {"vector", "scalar"})

    async def query_range(self, promql: str, start: float, end: float, step: float) -> QueryResult:
        form = {"query": promql, "start": _fmt(start), "end": _fmt(end), "step": _fmt(step)}
        return await self._call("/api/v1/query_range", form, {"matrix"})

    async def _call(self, path: str, form: dict[str, str], types: set[str]) -> QueryResult:
        form = {**form, "timeout": f"{self.retry.timeout:g}s"}
        last: PromError | None = None
        for attempt in range(self.retry.attempts):
            if attempt:
                await self._sleep(self.retry.delay(attempt - 1))
            try:
                body = await self._post(path, form)
            except PromError as err:
                last = self._scrubbed(err)
                if _retryable(err):
                    continue
                raise last from None
            return _parse(form["query"], body, types)
        assert last is not None
        raise last

    def _scrubbed(self, err: PromError) -> PromError:
        detail = self.credentials.scrub(err.detail.replace(self.base_url, self.shown_url))
        return PromError(err.kind, detail, err.status)

    async def _post(self, path: str, form: dict[str, str]) -> Any:
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=self.credentials.ssl_context())
            self._session = aiohttp.ClientSession(connector=connector)
        self.requests += 1
        timeout = aiohttp.ClientTimeout(total=self.retry.timeout)
        try:
            headers = self.credentials.request_headers()
        except CredentialError as err:
            raise PromError(PromErrorKind.UNREACHABLE, f"credentials: {err}") from err
        url = self.base_url + path
        try:
            async with self._session.post(url, data=form, timeout=timeout, headers=headers) as r:
                text = await r.text()
                status = r.status
        except TimeoutError as err:
            raise PromError(
                PromErrorKind.TIMEOUT, f"no answer within {self.retry.timeout:g}s"
            ) from err
        except aiohttp.ClientError as err:
            raise PromError(PromErrorKind.UNREACHABLE, f"{self.shown_url}: {err}") from err
        return _decode(text, status)


def _retryable(err: PromError) -> bool:
    if err.kind in (PromErrorKind.UNREACHABLE, PromErrorKind.TIMEOUT):
        return True
    return err.status in _RETRY_STATUS


def _decode(text: str, status: int) -> Any:
    try:
        body = json.loads(text)
    except ValueError as err:
        kind = PromErrorKind.HTTP if status >= 400 else PromErrorKind.BAD_RESPONSE
        raise PromError(kind, f"HTTP {status}: {text[:200]!r}", status) from err
    if not isinstance(body, dict):
        raise PromError(PromErrorKind.BAD_RESPONSE, f"HTTP {status}: not a JSON object", status)
    if body.get("status") != "success":
        what = f"{body.get('errorType', '?')}: {body.get('error', '')}"
        raise PromError(PromErrorKind.API, f"HTTP {status} {what}", status)
    if status >= 400:
        raise PromError(PromErrorKind.HTTP, f"HTTP {status} with a success body", status)
    return body


def _parse(query: str, body: Mapping[str, Any], types: set[str]) -> QueryResult:
    data = body.get("data")
    if not isinstance(data, dict):
        raise PromError(PromErrorKind.BAD_RESPONSE, "no data object")
    rtype = data.get("resultType")
    if rtype not in types:
        raise PromError(PromErrorKind.BAD_RESPONSE, f"resultType {rtype!r}, wanted {sorted(types)}")
    warnings = tuple(str(w) for w in body.get("warnings") or ())
    raw: Any = data.get("result")
    try:
        if rtype == "scalar":
            series: tuple[Series, ...] = (Series(MappingProxyType({}), (_point(raw),)),)
        elif rtype == "vector":
            series = tuple(_series(s["metric"], [s["value"]]) for s in raw)
        else:
            series = tuple(_series(s["metric"], s["values"]) for s in raw)
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise PromError(PromErrorKind.BAD_RESPONSE, f"malformed {rtype}: {err!r}") from err
    return QueryResult(query, str(rtype), series, warnings)


def _series(metric: Mapping[str, str], values: list[Any]) -> Series:
    labels = MappingProxyType({str(k): str(v) for k, v in metric.items()})
    return Series(labels, tuple(_point(v) for v in values))


def _point(raw: Any) -> tuple[float, float]:
    ts, value = raw
    return float(ts), float(value)  # float() reads "NaN", "+Inf", "-Inf"


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        raise ValueError(f"not a finite time/step: {x}")
    return f"{x:.3f}".rstrip("0").rstrip(".")
