"""Turns at the bcrypt thread: round-robin across client addresses, room made by the busiest
address, a cancelled waiter never keeps the thread."""

from __future__ import annotations

import asyncio

import pytest

from webconfig.admission import Admission


async def settle() -> None:
    """Let every ready task run until it waits again (a few loop iterations)."""
    for _ in range(5):
        await asyncio.sleep(0)


class Run:
    """Waiters that each hold the thread until released, recording the order they got it in."""

    def __init__(self, admission: Admission) -> None:
        self.admission = admission
        self.order: list[str] = []
        self.release = asyncio.Event()

    async def one(self, name: str, client: str) -> bool:
        async with self.admission.turn(client) as granted:
            if granted:
                self.order.append(name)
                await self.release.wait()
                self.release.clear()
            return granted

    async def start(self, *waiters: tuple[str, str]) -> list[asyncio.Task[bool]]:
        tasks = []
        for name, client in waiters:
            tasks.append(asyncio.create_task(self.one(name, client)))
            await asyncio.sleep(0)  # each reaches its first await in this order
        return tasks

    async def drain(self, tasks: list[asyncio.Task[bool]]) -> list[bool]:
        while not all(t.done() for t in tasks):
            self.release.set()
            await asyncio.sleep(0)
        return [t.result() for t in tasks]


async def test_addresses_take_turns_and_one_address_is_first_come_first_served() -> None:
    run = Run(Admission(capacity=10))
    flood = [(f"f{i}", "10.0.0.1") for i in range(4)]
    tasks = await run.start(*flood, ("scraper", "10.0.0.2"), ("f4", "10.0.0.1"))
    assert await run.drain(tasks) == [True] * 6
    assert run.order == ["f0", "f1", "scraper", "f2", "f3", "f4"]


async def test_a_full_queue_makes_room_for_an_address_with_fewer_waiting() -> None:
    run = Run(Admission(capacity=3))
    tasks = await run.start(*[(f"f{i}", "10.0.0.1") for i in range(4)])  # f0 runs, 3 wait
    assert run.admission.waiting == 3
    more = await run.start(("f4", "10.0.0.1"), ("scraper", "10.0.0.2"))
    results = await run.drain(tasks + more)
    assert dict(zip(["f0", "f1", "f2", "f3", "f4", "scraper"], results, strict=True)) == {
        "f0": True,
        "f1": True,
        "f2": True,
        "f3": False,  # the busiest address's newest waiter gave its place to the scraper
        "f4": False,  # no room, and its own address is the busiest
        "scraper": True,
    }
    assert run.order == ["f0", "f1", "scraper", "f2"]


async def test_a_cancelled_waiter_leaves_the_queue_and_a_cancelled_holder_passes_the_turn() -> None:
    run = Run(Admission(capacity=4))
    tasks = await run.start(("a", "x"), ("b", "x"), ("c", "y"))
    tasks[1].cancel()  # waiting
    await settle()
    assert run.admission.waiting == 1
    tasks[0].cancel()  # holding the thread
    await settle()
    assert run.order == ["a", "c"]
    run.release.set()
    assert await tasks[2] is True
    for task in tasks[:2]:
        with pytest.raises(asyncio.CancelledError):
            await task
    async with run.admission.turn("z") as granted:  # idle again: the next caller goes at once
        assert granted and run.admission.waiting == 0


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        Admission(0)
