"""Await a blocking call run in a daemon thread: a call stuck in the driver cannot keep the
process from exiting (the collect loop's worker, `exporter.cycle`)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def in_daemon_thread(function: Callable[[], T]) -> T:
    """Run a blocking function in a new daemon thread and await its result."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def target() -> None:
        try:
            result = function()
        except BaseException as exc:  # handed to the awaiting task
            outcome: tuple[T | None, BaseException | None] = (None, exc)
        else:
            outcome = (result, None)
        with contextlib.suppress(RuntimeError):  # the loop closed while we ran
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=target, name="collect-cycle", daemon=True).start()
    return await future
