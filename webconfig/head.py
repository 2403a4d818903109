"""Sans-I/O check of an HTTP/1.x request head as its bytes arrive, before aiohttp sees any.

`HeadScanner.feed(data)` returns a `Verdict`: INCOMPLETE until the blank line that ends the head,
then COMPLETE, or TOO_LARGE / MALFORMED / UNKNOWN_METHOD as soon as the bytes so far prove it (a
10 KB method is refused after its 33rd byte, not after 10 KB). The first final verdict sticks.
`take()` gives the complete head and nothing after it: with no body allowed and one request per
connection, later bytes could only be a pipelined request, which aiohttp would parse unguarded.
`reason` is a fixed phrase for a debug log: a verdict never carries the client's bytes, so nothing
the client sent is ever echoed or logged.

Everything accepted here is something aiohttp accepts too (tests pin it): aiohttp answers its own
parse errors with a message that quotes the request and logs a traceback, so the guard has to be
the stricter of the two. Hence: CRLF line endings only, origin-form targets of RFC 3986
characters, one `Host` on HTTP/1.1, no duplicated singleton header (aiohttp's list), and no
request body. The servers this guards only answer GET and HEAD (other methods are 501), and a body
is where aiohttp's remaining tracebacks live (bad chunk sizes, undecodable Content-Encoding), so
Content-Length must be 0 and Transfer-Encoding and Content-Encoding are refused.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Verdict(StrEnum):
    INCOMPLETE = "incomplete"
    COMPLETE = "complete"
    TOO_LARGE = "too large"
    MALFORMED = "malformed"
    UNKNOWN_METHOD = "unknown method"


METHODS = frozenset({b"GET", b"HEAD"})
MAX_METHOD = 32  # longer than any registered method; a longer token is refused at once
# Headers RFC 9110 allows once; aiohttp refuses duplicates of exactly these (lower case).
SINGLETON_HEADERS = frozenset(
    {
        b"content-length",
        b"content-location",
        b"content-range",
        b"content-type",
        b"etag",
        b"host",
        b"max-forwards",
        b"server",
        b"transfer-encoding",
        b"user-agent",
    }
)

_TCHAR = rb"!#$%&'*+\-.^_`|~0-9A-Za-z"
_METHOD_PREFIX = re.compile(rb"[%s]{0,%d}" % (_TCHAR, MAX_METHOD))
_REQUEST_LINE = re.compile(
    rb"([%s]{1,%d}) (/[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%%]*) HTTP/1\.([01])"
    % (_TCHAR, MAX_METHOD)
)
_HEADER = re.compile(rb"([%s]+):[ \t]*([\t\x20-\x7e\x80-\xff]*?)[ \t]*" % _TCHAR)
_ZERO = re.compile(rb"0{1,18}")
_BODY_HEADERS = frozenset({b"transfer-encoding", b"content-encoding"})


class HeadScanner:
    """One request head, fed as it arrives; see the module docstring."""

    def __init__(self, max_bytes: int, max_lines: int) -> None:
        self._max_bytes = max_bytes
        self._max_lines = max_lines
        self._buffer = bytearray()
        self._line_start = 0  # where the line being read begins
        self._lines = 0  # lines done, the request line included
        self._http11 = False
        self._seen: dict[bytes, bytes] = {}  # singleton header -> its value
        self.verdict = Verdict.INCOMPLETE
        self.reason = ""

    def feed(self, data: bytes) -> Verdict:
        if self.verdict is not Verdict.INCOMPLETE:
            return self.verdict
        search_from = max(self._line_start, len(self._buffer) - 1)  # a CR may end the last feed
        self._buffer += data
        while self.verdict is Verdict.INCOMPLETE:
            end = self._buffer.find(b"\r\n", search_from)
            if end < 0:
                self._check_partial()
                break
            if end + 2 > self._max_bytes:
                return self._final(Verdict.TOO_LARGE, "request head too large")
            line = bytes(self._buffer[self._line_start : end])
            self._line_start = search_from = end + 2
            self._lines += 1
            self._check_line(line)
        return self.verdict

    def take(self) -> bytes:
        """The complete head, once (nothing after it); the scanner keeps no bytes."""
        data, self._buffer = bytes(self._buffer), bytearray()
        return data

    def _final(self, verdict: Verdict, reason: str) -> Verdict:
        self.verdict, self.reason = verdict, reason
        self._buffer = bytearray()  # a refused head is never needed again
        return verdict

    def _check_partial(self) -> None:
        partial = self._buffer[self._line_start :]
        if len(self._buffer) > self._max_bytes:
            self._final(Verdict.TOO_LARGE, "request head too large")
        elif b"\n" in partial or b"\r" in partial[:-1]:
            self._final(Verdict.MALFORMED, "bare CR or LF")
        elif self._lines == 0 and not _METHOD_PREFIX.fullmatch(partial.partition(b" ")[0]):
            self._final(Verdict.MALFORMED, "bad method token")

    def _check_line(self, line: bytes) -> None:
        if self._lines == 1:
            self._check_request_line(line)
        elif line:
            self._check_header(line)
        else:
            self._check_complete()

    def _check_request_line(self, line: bytes) -> None:
        match = _REQUEST_LINE.fullmatch(line)
        if match is None:
            self._final(Verdict.MALFORMED, "bad request line")
        elif match.group(1) not in METHODS:
            self._final(Verdict.UNKNOWN_METHOD, "method not implemented")
        else:
            self._http11 = match.group(3) == b"1"

    def _check_header(self, line: bytes) -> None:
        if self._lines - 1 > self._max_lines:
            self._final(Verdict.TOO_LARGE, "too many header fields")
            return
        match = _HEADER.fullmatch(line)
        if match is None:
            self._final(Verdict.MALFORMED, "bad header field")
            return
        name, value = match.group(1).lower(), match.group(2)
        if name in SINGLETON_HEADERS:
            if name in self._seen:
                self._final(Verdict.MALFORMED, "repeated singleton header field")
                return
            self._seen[name] = value
        if name in _BODY_HEADERS:
            self._final(Verdict.MALFORMED, "request body")
        elif name == b"sec-websocket-key1":  # the pre-RFC 6455 handshake aiohttp refuses
            self._final(Verdict.MALFORMED, "obsolete websocket handshake")

    def _check_complete(self) -> None:
        length = self._seen.get(b"content-length")
        if self._http11 and b"host" not in self._seen:
            self._final(Verdict.MALFORMED, "no Host header")
        elif length is not None and not _ZERO.fullmatch(length):
            self._final(Verdict.MALFORMED, "request body")
        else:
            self.verdict = Verdict.COMPLETE
            del self._buffer[self._line_start :]  # see take()
