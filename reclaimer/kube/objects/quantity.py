"""Kubernetes resource quantities ("2", "500m", "1Gi", "1e3") as floats. Pure."""

from __future__ import annotations

import functools
import re
from decimal import Decimal, InvalidOperation

_SUFFIXES: dict[str, Decimal] = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|([a-zA-Z]{0,2}))$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> float:
    """Parse a quantity as the API server writes it; ints and floats pass through."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {value!r}")
    if value.isascii() and value.isdigit():  # "1", "8": nearly every GPU quantity
        return float(value)
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> float:
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise QuantityError(f"not a quantity: {value!r}")
    number, exponent, suffix = match.groups()
    try:
        if exponent:
            return float(Decimal(number + exponent))
        multiplier = _SUFFIXES.get(suffix or "")
        if multiplier is None:
            raise QuantityError(f"unknown quantity suffix in {value!r}")
        return float(Decimal(number) * multiplier)
    except InvalidOperation as exc:
        raise QuantityError(f"not a quantity: {value!r}") from exc
