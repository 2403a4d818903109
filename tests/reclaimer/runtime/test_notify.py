"""Webhook notifications: a JSON `text` POSTed to each webhook of the job's namespace or queue,
a bounded number of tries, each outcome counted and logged without the URL, and the caller never
waiting for an answer."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from webhook_receiver import HANG, receiver

from reclaimer.policy.warning import Webhook
from reclaimer.runtime.notify import Notifier, hooks_for

HOOK = Webhook(namespace="team", secret_key="team-hook")


def _notifier(tmp_path: Path, url: str, **kw: float) -> tuple[Notifier, list[str]]:
    (tmp_path / "team-hook").write_text(url + "\n")
    results: list[str] = []
    n = Notifier(tmp_path, sleep=lambda _: None, **kw)  # type: ignore[arg-type]
    n.record = results.append
    return n, results


def test_a_warning_is_posted_as_json_text(tmp_path: Path) -> None:
    with receiver(200) as hook:
        n, results = _notifier(tmp_path, hook.url)
        n.notify([HOOK], "team/lab", "GpuReclaimScheduled: warn team/lab")
        n.drain()
    assert hook.bodies == [{"text": "GpuReclaimScheduled: warn team/lab"}]
    assert results == ["sent"]


def test_a_failing_receiver_gets_its_tries_then_fails_without_the_url_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with receiver(500) as hook:
        n, results = _notifier(tmp_path, hook.url, attempts=3)
        n.notify([HOOK], "team/lab", "x")
        n.drain()
    assert len(hook.bodies) == 3 and results == ["failed"]
    assert "team-hook not told of team/lab after 3 tries: HTTP 500" in caplog.text
    assert hook.url not in caplog.text and "127.0.0.1" not in caplog.text


def test_a_hanging_receiver_never_holds_the_caller(tmp_path: Path) -> None:
    with receiver(HANG) as hook:
        n, results = _notifier(tmp_path, hook.url, attempts=1, timeout=300.0)
        n.notify([HOOK], "team/lab", "x")  # a send waiting on the receiver would hang here
    # the block's end closed the receiver without an answer (whether or not the POST had
    # reached it yet): the send fails on the side
    n.drain()
    assert results == ["failed"]


def test_a_missing_secret_key_fails_quietly(tmp_path: Path) -> None:
    n = Notifier(tmp_path, sleep=lambda _: None)
    results: list[str] = []
    n.record = results.append
    n.notify([Webhook(queue="research", secret_key="absent")], "research/a", "x")
    n.drain()
    assert results == ["failed"]


def test_hooks_match_by_namespace_or_queue() -> None:
    by_ns, by_queue = HOOK, Webhook(queue="research", secret_key="r")
    assert hooks_for([by_ns, by_queue], "team", "research") == [by_ns, by_queue]
    assert hooks_for([by_ns, by_queue], "other", "prod") == []
