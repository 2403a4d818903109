"""The request-head scanner, input in, verdict out: whole, byte by byte, and in odd chunks."""

from __future__ import annotations

import pytest

from webconfig.head import HeadScanner, Verdict

OK = b"GET /metrics HTTP/1.1\r\nHost: node:9400\r\nAccept: text/plain\r\n\r\n"


def scan(data: bytes, chunk: int, max_bytes: int = 16384, max_lines: int = 100) -> HeadScanner:
    scanner = HeadScanner(max_bytes, max_lines)
    for start in range(0, len(data), chunk):
        scanner.feed(data[start : start + chunk])
    return scanner


CASES = [
    ("scrape", OK, Verdict.COMPLETE),
    ("http10-without-host", b"GET / HTTP/1.0\r\n\r\n", Verdict.COMPLETE),
    ("query-and-escapes", b"GET /a%20b?x=1&y=[2] HTTP/1.1\r\nHost: h\r\n\r\n", Verdict.COMPLETE),
    ("zero-length", b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", Verdict.COMPLETE),
    (
        "websocket-upgrade",
        b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        Verdict.COMPLETE,
    ),
    ("obs-text-value", b"GET / HTTP/1.1\r\nHost: h\r\nX: caf\xc3\xa9\r\n\r\n", Verdict.COMPLETE),
    ("half-sent", b"GET /metrics HTTP/1.1\r\nHost: x\r\n", Verdict.INCOMPLETE),
    ("nothing-yet", b"", Verdict.INCOMPLETE),
    ("long-method", b"A" * 10_000 + b" / HTTP/1.1\r\nHost: h\r\n\r\n", Verdict.MALFORMED),
    ("tls-client-hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", Verdict.MALFORMED),
    ("binary-garbage", b"\x00\xff\xfe garbage", Verdict.MALFORMED),
    ("unknown-method", b"BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n", Verdict.UNKNOWN_METHOD),
    (
        "post",
        b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc",
        Verdict.UNKNOWN_METHOD,
    ),
    ("options-star", b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", Verdict.MALFORMED),
    ("lowercase-method", b"get / HTTP/1.1\r\nHost: h\r\n\r\n", Verdict.UNKNOWN_METHOD),
    ("http2-preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Verdict.MALFORMED),
    ("absolute-form", b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", Verdict.MALFORMED),
    ("star-not-options", b"GET * HTTP/1.1\r\nHost: h\r\n\r\n", Verdict.MALFORMED),
    ("space-in-target", b"GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", Verdict.MALFORMED),
    ("quote-in-target", b'GET /"x" HTTP/1.1\r\nHost: h\r\n\r\n', Verdict.MALFORMED),
    ("bare-lf", b"GET / HTTP/1.1\nHost: h\n\n", Verdict.MALFORMED),
    ("bare-cr", b"GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", Verdict.MALFORMED),
    ("no-colon", b"GET / HTTP/1.1\r\nHost h\r\n\r\n", Verdict.MALFORMED),
    ("space-before-colon", b"GET / HTTP/1.1\r\nHost : h\r\n\r\n", Verdict.MALFORMED),
    ("obs-fold", b"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n  b\r\n\r\n", Verdict.MALFORMED),
    ("nul-in-value", b"GET / HTTP/1.1\r\nHost: h\r\nX: a\x00b\r\n\r\n", Verdict.MALFORMED),
    ("no-host-11", b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", Verdict.MALFORMED),
    ("two-hosts", b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", Verdict.MALFORMED),
    (
        "bad-length",
        b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1e3\r\n\r\n",
        Verdict.MALFORMED,
    ),
    (
        "length-and-chunked",
        b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        Verdict.MALFORMED,
    ),
    (
        "gzip-coding",
        b"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n",
        Verdict.MALFORMED,
    ),
    (
        "old-websocket",
        b"GET / HTTP/1.1\r\nHost: h\r\nSec-WebSocket-Key1: 1\r\n\r\n",
        Verdict.MALFORMED,
    ),
    (
        "huge-header",
        b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 20_000 + b"\r\n\r\n",
        Verdict.TOO_LARGE,
    ),
    ("huge-unfinished", b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 20_000, Verdict.TOO_LARGE),
    (
        "too-many-fields",
        b"GET / HTTP/1.1\r\nHost: h\r\n" + b"X: 1\r\n" * 100 + b"\r\n",
        Verdict.TOO_LARGE,
    ),
]


@pytest.mark.parametrize("chunk", [1, 7, 100_000], ids=["bytewise", "chunks-of-7", "whole"])
@pytest.mark.parametrize(("data", "verdict"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_verdict(data: bytes, verdict: Verdict, chunk: int) -> None:
    scanner = scan(data, chunk)
    assert scanner.verdict is verdict
    if verdict not in (Verdict.COMPLETE, Verdict.INCOMPLETE):
        assert scanner.reason and scanner.reason.isascii()
        assert data[:8].decode("latin-1") not in scanner.reason  # no client bytes in the reason


def test_a_long_method_is_refused_without_waiting_for_it() -> None:
    scanner = HeadScanner(16384, 100)
    fed = 0
    while scanner.feed(b"A") is Verdict.INCOMPLETE:
        fed += 1
    assert fed == 32  # the 33rd letter is one too many for any method


def test_only_the_head_is_handed_on() -> None:
    pipelined = b"\x00garbage GET /second HTTP/1.1\r\n\r\n"
    scanner = scan(OK + pipelined[:10], 5)
    assert scanner.verdict is Verdict.COMPLETE
    assert scanner.feed(pipelined[10:]) is Verdict.COMPLETE
    assert scanner.take() == OK
    assert scanner.take() == b""


def test_the_size_limit_counts_the_whole_head() -> None:
    head = b"GET / HTTP/1.1\r\nHost: h\r\n" + b"X: " + b"a" * 60 + b"\r\n\r\n"
    assert scan(head, 1000, max_bytes=len(head)).verdict is Verdict.COMPLETE
    assert scan(head, 1000, max_bytes=len(head) - 1).verdict is Verdict.TOO_LARGE
    assert scan(head, 1, max_bytes=len(head) - 1).verdict is Verdict.TOO_LARGE


def test_a_refused_head_keeps_no_bytes() -> None:
    scanner = scan(b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 20_000, 1000)
    assert scanner.verdict is Verdict.TOO_LARGE
    assert scanner.feed(b"more" * 1000) is Verdict.TOO_LARGE
    assert scanner.take() == b""


def test_the_field_count_limit_is_inclusive() -> None:
    head = b"GET / HTTP/1.1\r\nHost: h\r\n" + b"X: 1\r\n" * 9 + b"\r\n"
    assert scan(head, 1000, max_lines=10).verdict is Verdict.COMPLETE
    assert scan(head, 1000, max_lines=9).verdict is Verdict.TOO_LARGE
