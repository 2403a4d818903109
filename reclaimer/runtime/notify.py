"""Webhook notifications of warnings before a stop: told on the side, never in the way.

The policy's `warning.webhooks` name, per namespace or per queue, a key of the webhook Secret,
mounted as files under `--webhook-secret-dir`; the file holds the URL. A warning or its cancel,
once written (not in dry-run), is POSTed as JSON `{"text": ...}` (what a Slack incoming webhook
reads, and any generic receiver can) to every webhook that matches the job's namespace or queue.

Sending runs on its own small thread pool, so a receiver that answers slowly or not at all never
holds a cycle, a stop or the next warning back; and nothing about a stop depends on the answer,
so a failing webhook never speeds one up either. Each webhook gets `attempts` tries, each bounded
by `timeout` seconds, spaced `backoff`, 2 x `backoff`, ...; a 2xx answer is sent, anything else
after the last try is failed. Each outcome is a log line (the job and the Secret's key, never the
URL) and a count (`record("sent" | "failed")`, the `gpu_reclaimer_notifications_total` metric).
A `--once` run waits for its sends before it exits (`drain`), at most the tries' bound.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

from reclaimer.policy.warning import Webhook

log = logging.getLogger(__name__)

DEFAULT_SECRET_DIR = "/etc/gpu-reclaim/webhooks"
Post = Callable[[str, bytes, float], int]  # (url, body, timeout) -> HTTP status


def post_json(url: str, body: bytes, timeout: float) -> int:
    """POST `body` as JSON; the answer's status (urllib raises on 4xx/5xx and on no answer)."""
    req = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=timeout) as answer:
        return int(answer.status)


class Notifier:
    def __init__(
        self,
        secret_dir: Path,
        *,
        post: Post = post_json,
        attempts: int = 3,
        timeout: float = 5.0,
        backoff: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.secret_dir, self.post, self.sleep = secret_dir, post, sleep
        self.attempts, self.timeout, self.backoff = attempts, timeout, backoff
        self.record: Callable[[str], None] = lambda result: None
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="webhook")
        self._pending: set[Future[str]] = set()
        self._lock = threading.Lock()

    def notify(self, hooks: Sequence[Webhook], job: str, text: str) -> None:
        """Send `text` about `job` to each of `hooks` in the background; returns at once."""
        body = json.dumps({"text": text}).encode()
        for hook in hooks:
            future = self._pool.submit(self._send, hook, job, body)
            with self._lock:
                self._pending.add(future)
            future.add_done_callback(self._done)

    def _done(self, future: Future[str]) -> None:
        with self._lock:
            self._pending.discard(future)

    def drain(self) -> None:
        """Wait for every send under way (each bounded by its tries)."""
        with self._lock:
            pending = list(self._pending)
        wait(pending)

    def _send(self, hook: Webhook, job: str, body: bytes) -> str:
        why = ""
        for attempt in range(self.attempts):
            if attempt:
                self.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                url = (self.secret_dir / hook.secret_key).read_text().strip()
                status = self.post(url, body, self.timeout)
            except Exception as exc:  # any answer but 2xx, or none: try again
                why = _reason(exc)
                continue
            if 200 <= status < 300:
                log.info("webhook %s told of %s: HTTP %d", hook.secret_key, job, status)
                self.record("sent")
                return "sent"
            why = f"HTTP {status}"
        log.warning(
            "webhook %s not told of %s after %d tries: %s", hook.secret_key, job, self.attempts, why
        )
        self.record("failed")
        return "failed"


def _reason(exc: Exception) -> str:
    """Why a try failed, without the URL (urllib's messages can carry it)."""
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        return f"HTTP {code}"
    if isinstance(exc, FileNotFoundError):
        return "no such key in the webhook Secret"
    if isinstance(exc, TimeoutError) or "timed out" in str(exc):
        return "timed out"
    return type(exc).__name__


def hooks_for(webhooks: Sequence[Webhook], namespace: str, queue: str) -> list[Webhook]:
    return [h for h in webhooks if h.matches(namespace, queue)]
