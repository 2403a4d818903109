"""The asyncio protocol that stands in front of aiohttp on every connection.

aiohttp has no timeout for reading a request head and no connection cap, so one client could hold
thousands of half-sent requests forever. Each accepted connection gets a `GuardedConnection`:

1. It takes a slot (`slots.Slots`: at the cap the oldest pending connection is evicted) and starts
   one deadline, `header_timeout`, covering the TLS handshake and the request head.
2. With TLS it runs the handshake itself (`loop.start_tls`, public asyncio API) with the context
   the live config holds *now*, so a rotated certificate serves the next handshake, and a
   handshaking connection is counted and timed like any other (asyncio's own `ssl=` server would
   hide it from both until the handshake is done).
3. It feeds the bytes to `head.HeadScanner`. A refused head gets a fixed short answer (400, 431 or
   501, never an echo), one debug log line without the client's bytes, and the connection lingers
   a moment reading and discarding (so the answer is not lost to a reset) before it is closed.
4. A complete head is handed to a fresh aiohttp `RequestHandler` (from `web.Server`, a public
   protocol factory): `connection_made(transport)`, then `data_received(head)`. The guard stays
   the transport's protocol and forwards the events aiohttp needs (flow control, EOF, the loss of
   the connection), so it always knows when the connection ends (to free the slot) and can enforce
   `request_timeout` until the close. Bytes after the head are dropped: no body is accepted (see
   `head`), and a pipelined second request would be parsed by aiohttp without the guard.

The server answers one request per connection (`server.py` marks responses `Connection: close`),
so every request passes steps 1-4; aiohttp's own keep-alive parsing, which has no head timeout,
is never reached.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from enum import Enum

from webconfig.head import HeadScanner, Verdict
from webconfig.model import Limits
from webconfig.slots import Slots

LOG = logging.getLogger("webconfig")
LINGER_SECONDS = 1.0  # after a refusal: long enough for the client to read it, too short to hold


def _fixed_response(status: str, body: bytes) -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode("ascii") + body


ANSWERS = {
    Verdict.MALFORMED: ("malformed", _fixed_response("400 Bad Request", b"bad request\n")),
    Verdict.TOO_LARGE: (
        "too_large",
        _fixed_response(
            "431 Request Header Fields Too Large", b"request header fields too large\n"
        ),
    ),
    Verdict.UNKNOWN_METHOD: (
        "malformed",
        _fixed_response("501 Not Implemented", b"method not implemented\n"),
    ),
}


class _State(Enum):
    HANDSHAKE = "handshake"
    HEAD = "head"
    REFUSED = "refused"  # answered by the guard; lingering before the close
    SERVING = "serving"  # aiohttp has it
    CLOSED = "closed"


class Shared:
    """What every connection of one listener needs."""

    def __init__(
        self,
        limits: Limits,
        slots: Slots,
        handler_factory: Callable[[], asyncio.Protocol],
        ssl_context: Callable[[], ssl.SSLContext | None],
    ) -> None:
        self.limits = limits
        self.slots = slots
        self.handler_factory = handler_factory
        self.ssl_context = ssl_context


class GuardedConnection(asyncio.Protocol):
    __slots__ = (
        "_deadline",
        "_handler",
        "_handshake",
        "_scanner",
        "_shared",
        "_state",
        "_transport",
    )

    def __init__(self, shared: Shared) -> None:
        self._shared = shared
        self._state = _State.HEAD
        self._transport: asyncio.Transport | None = None
        self._scanner: HeadScanner | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._handler: asyncio.Protocol | None = None
        self._handshake: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        shared = self._shared
        if not shared.slots.admit(self):
            self._state = _State.CLOSED
            transport.abort()
            return
        limits = shared.limits
        self._scanner = HeadScanner(limits.max_header_bytes, limits.max_header_lines)
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(limits.header_timeout, self._head_timed_out)
        context = shared.ssl_context()
        if context is not None:
            self._state = _State.HANDSHAKE
            transport.pause_reading()  # the ClientHello is for the TLS layer, not for us
            self._handshake = loop.create_task(self._start_tls(transport, context))

    async def _start_tls(self, raw: asyncio.Transport, context: ssl.SSLContext) -> None:
        if self._state is not _State.HANDSHAKE:  # evicted before this task first ran
            return
        loop = asyncio.get_running_loop()
        timeout = self._shared.limits.header_timeout
        try:
            tls = await loop.start_tls(
                raw, self, context, server_side=True, ssl_handshake_timeout=timeout
            )
        except OSError as exc:  # ssl.SSLError, resets, asyncio's own handshake timeout
            if self._state is _State.HANDSHAKE:
                self._shared.slots.counts["tls_failures"] += 1
                LOG.debug("TLS handshake from %s failed: %s", _peer(raw), type(exc).__name__)
            self._close(raw)
            return
        if tls is None or self._state is not _State.HANDSHAKE:  # lost, evicted or timed out
            self._close(tls or raw)
            return
        self._transport = tls
        self._state = _State.HEAD
        assert self._scanner is not None
        # Application data can arrive between the handshake and this line: act on it now.
        self._act(self._scanner.verdict)

    def data_received(self, data: bytes) -> None:
        if self._state in (_State.HEAD, _State.HANDSHAKE):
            assert self._scanner is not None
            verdict = self._scanner.feed(data)
            if self._state is _State.HEAD:
                self._act(verdict)

    def eof_received(self) -> bool | None:
        if self._state is _State.SERVING:
            assert self._handler is not None
            return self._handler.eof_received()
        return None  # a head cut short never completes: let the transport close

    def pause_writing(self) -> None:
        if self._handler is not None:
            self._handler.pause_writing()

    def resume_writing(self) -> None:
        if self._handler is not None:
            self._handler.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._close(None)
        handler, self._handler = self._handler, None
        if handler is not None:
            handler.connection_lost(exc)

    def evict(self) -> None:
        """Called by `Slots` (which has already freed the slot) to make room."""
        self._close(self._transport)

    def _act(self, verdict: Verdict) -> None:
        if verdict is Verdict.COMPLETE:
            self._hand_off()
        elif verdict is not Verdict.INCOMPLETE:
            self._refuse(verdict)

    def _refuse(self, verdict: Verdict) -> None:
        transport, scanner = self._transport, self._scanner
        assert transport is not None and scanner is not None
        counter, answer = ANSWERS[verdict]
        self._shared.slots.counts[counter] += 1
        LOG.debug("refused a request from %s: %s", _peer(transport), scanner.reason)
        self._state = _State.REFUSED
        transport.write(answer)
        if transport.can_write_eof():
            transport.write_eof()
        # Read and discard a moment: closing with unread input sends a reset, which can destroy
        # the answer before the client reads it. The slot stays pending, so it can be evicted.
        linger = min(LINGER_SECONDS, self._shared.limits.header_timeout)
        self._rearm(linger, lambda: self._close(self._transport))

    def _hand_off(self) -> None:
        transport, scanner = self._transport, self._scanner
        assert transport is not None and scanner is not None
        self._state = _State.SERVING
        self._shared.slots.activate(self)
        self._rearm(self._shared.limits.request_timeout, self._request_timed_out)
        handler = self._handler = self._shared.handler_factory()
        handler.connection_made(transport)
        handler.data_received(scanner.take())
        self._scanner = None

    def _rearm(self, delay: float, callback: Callable[[], None]) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = asyncio.get_running_loop().call_later(delay, callback)

    def _head_timed_out(self) -> None:
        if self._state in (_State.HANDSHAKE, _State.HEAD):
            self._shared.slots.counts["header_timeouts"] += 1
            self._close(self._transport)

    def _request_timed_out(self) -> None:
        if self._state is _State.SERVING:
            self._shared.slots.counts["request_timeouts"] += 1
            self._close(self._transport)

    def _close(self, transport: asyncio.Transport | None) -> None:
        """Free the slot and stop the timer; abort `transport` if given. Safe to repeat."""
        self._state = _State.CLOSED
        self._shared.slots.release(self)
        self._scanner = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if transport is not None:
            transport.abort()


def _peer(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "unknown"
