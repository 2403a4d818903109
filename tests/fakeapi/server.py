"""HTTP face of the fake API server: one catch-all aiohttp route, served from a thread.

Paths are parsed the way the API server lays them out (`/api/v1/...`, `/apis/GROUP/VERSION/...`,
optional `namespaces/NS/`, then PLURAL[/NAME[/SUBRESOURCE]]); the subresources served are a
pod's `eviction` and a GET of `scale` on the custom resources that declare one
(`fakeapi.scale`). Every request is recorded before it is answered, and the record completed with
the stored object it named and the answer; an injected fault answers instead of the store (after
an optional delay, which is how tests make the client time out), or trickles the answer's body a
byte at a time (a stalled answer that per-read socket timeouts never end), or answers after
carrying the request out (`store`: the write happened, the answer says not).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import threading
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

from fakeapi import scale
from fakeapi.errors import ApiError
from fakeapi.selectors import (
    EXPIRED,
    decode_continue,
    encode_continue,
    matches_fields,
    matches_labels,
    parse_field_selector,
    parse_label_selector,
)
from fakeapi.store import FakeCluster, Fault, Recorded

Res = tuple[str, str, str]


def _split(path: str) -> tuple[Res, str | None, str | None, str | None]:
    """(resource, namespace, name, subresource) of an API path."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    return (group, version, rest[0]), ns, name, sub


def _throttled(retry_after: str) -> web.Response:
    """kube-apiserver's answer to a request its max-in-flight or priority-and-fairness filter
    sheds (k8s.io/apiserver/pkg/server/filters, `tooManyRequests`): 429 with a `Retry-After`
    header ("1" there) and a plain-text body written by net/http's `http.Error`, not a Status."""
    return web.Response(
        status=429,
        text="Too many requests, please try again later.\n",
        content_type="text/plain",
        charset="utf-8",
        headers={"Retry-After": retry_after, "X-Content-Type-Options": "nosniff"},
    )


class FakeApiServer:
    """Serves a `FakeCluster` on 127.0.0.1:<free port> until `stop()`."""

    def __init__(self, cluster: FakeCluster | None = None) -> None:
        self.cluster = cluster or FakeCluster()
        self.lock = self.cluster.lock  # the store's: tests change it under the same lock
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeApiServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        async def _stop() -> None:
            self._stopping.set()
            if self._runner is not None:
                await self._runner.cleanup()

        try:
            asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    async def _handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        body: Any = json.loads(raw) if raw else None
        query = parse_qs(request.query_string)
        ctype = request.headers.get("Content-Type", "")
        rec = Recorded(request.method, request.path, query, body, ctype)
        with self.lock:
            self.cluster.requests.append(rec)
            fault = self.cluster.take_fault(request.method, request.path)
        if fault is not None:
            if fault.before is not None:
                fault.before()
            if fault.store:  # carried out, whatever the answer says
                with self.lock, contextlib.suppress(ApiError):
                    self._dispatch(request.method, request.path, query, body, ctype, rec)
            if fault.delay:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), fault.delay)
            if fault.retry_after is not None:
                return _throttled(fault.retry_after)
            if fault.status is not None:
                err = ApiError(fault.status, "Injected", f"injected fault {fault.status}")
                return await self._answer(request, err.status(), fault.status, fault)
        try:
            with self.lock:
                code, answer = self._dispatch(request.method, request.path, query, body, ctype, rec)
        except ApiError as err:
            rec.code, rec.answer = err.code, err.status()
            return await self._answer(request, err.status(), err.code, fault)
        rec.code = code
        if request.method != "GET":  # a write's answer, for tests that judge it (lists are big)
            rec.answer = copy.deepcopy(answer)
        return await self._answer(request, answer, code, fault)

    async def _answer(
        self, request: web.Request, payload: Any, code: int, fault: Fault | None
    ) -> web.StreamResponse:
        if fault is None or not fault.trickle:
            return web.json_response(payload, status=code)
        body = json.dumps(payload).encode()
        response = web.StreamResponse(status=code, headers={"Content-Type": "application/json"})
        response.content_length = len(body)
        await response.prepare(request)
        for i in range(len(body)):
            try:
                await response.write(body[i : i + 1])
            except ConnectionError:  # the client gave up on the answer: nothing more to send
                return response
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), fault.trickle)
            if self._stopping.is_set():
                break
        return response

    def _dispatch(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: Any,
        ctype: str,
        rec: Recorded,
    ) -> tuple[int, Any]:
        c = self.cluster
        res, ns, name, sub = _split(path)
        kind, namespaced = c.check_served(*res)
        scope = (ns or "") if namespaced else ""
        dry = rec.dry_run
        if name is not None and method in ("PUT", "PATCH", "DELETE"):
            rec.old = copy.deepcopy(c.objects.get(res, {}).get((scope, name)))
        strict = query.get("fieldValidation", [""])[0] == "Strict"
        if sub == "eviction" and res == ("", "v1", "pods") and method == "POST" and name:
            return 201, c.evict(scope, name, dry, body)
        if sub == "scale" and res in scale.CUSTOM and method == "GET" and name:
            return 200, scale.custom_scale(res, c.current(res, scope, name))
        if sub is not None:
            raise ApiError(404, "NotFound", f"subresource {sub} not served by the fake")
        if name is None:
            if method == "GET":
                return 200, self._list_page(res, kind, ns if namespaced else None, query)
            if method == "POST":
                return 201, c.create(res, scope, body, dry, strict)
            raise ApiError(405, "MethodNotAllowed", f"{method} on a collection")
        if method == "GET":
            return 200, c.read(res, scope, name)
        if method == "PUT":
            return 200, c.replace(res, scope, name, body, dry, strict)
        if method == "PATCH":
            return 200, c.patch(res, scope, name, body, ctype, dry, strict)
        if method == "DELETE":
            return 200, c.delete(res, scope, name, dry, body)
        raise ApiError(405, "MethodNotAllowed", method)

    def _list_page(
        self, res: Res, kind: str, ns: str | None, query: dict[str, list[str]]
    ) -> dict[str, Any]:
        """A list, filtered by `fieldSelector` / `labelSelector` and paged like the API server
        when `limit` is given; a `continue` token from before a compaction answers 410."""
        c = self.cluster
        fields = parse_field_selector(kind, query.get("fieldSelector", [""])[0])
        labels = parse_label_selector(query.get("labelSelector", [""])[0])
        items = [
            o for o in c.list(res, ns) if matches_fields(o, fields) and matches_labels(o, labels)
        ]
        issued, start = decode_continue(query.get("continue", [""])[0], c.version)
        if issued < c.compacted:
            raise ApiError(410, "Expired", EXPIRED)
        limit = int(query.get("limit", ["0"])[0] or 0)
        end = min(start + limit, len(items)) if limit else len(items)
        meta: dict[str, Any] = {"resourceVersion": str(c.version)}
        if end < len(items):
            meta["continue"] = encode_continue(issued, end)
            if c.compact_during == res[2]:
                c.compact_during = None
                c.compact()
        api = f"{res[0]}/{res[1]}" if res[0] else res[1]
        return {
            "kind": f"{kind}List",
            "apiVersion": api,
            "metadata": meta,
            "items": items[start:end],
        }
