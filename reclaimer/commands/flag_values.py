"""Parsers for numeric command-line values: a number, then the range it must be in.

`number_in(ok, expect)` gives argparse a `type=` that turns a non-number into "not a number: 'x'"
and a number outside the range into "<expect>, got x", so every numeric flag says the same thing.
`seed_list` reads `0,1,2` (sorted, without repeats), `gib_list` `6,8,12,16` (GiB, each more than
0, sorted, without repeats), `positive_count` a whole number from 1.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def number_in(ok: Callable[[float], bool], expect: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
        if not ok(value):
            raise argparse.ArgumentTypeError(f"{expect}, got {text}")
        return value

    return parse


def seed_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(sorted({int(part) for part in text.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seeds like 0,1,2, got {text!r}") from None


def gib_list(text: str) -> tuple[float, ...]:
    try:
        values = {float(part) for part in text.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected GiB like 8 or 6,8,12,16, got {text!r}"
        ) from None
    if not values or any(not v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"every value must be more than 0 GiB, got {text}")
    return tuple(sorted(values))


def positive_count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return int(text)
