"""The one listen-address parser both servers use."""

from __future__ import annotations

import pytest

from webconfig.address import parse_listen_address


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (":9400", (None, 9400)),
        ("0.0.0.0:9401", ("0.0.0.0", 9401)),
        ("[::1]:9400", ("::1", 9400)),
        ("[::]:0", ("::", 0)),
        ("localhost:80", ("localhost", 80)),
    ],
)
def test_listen_addresses(text: str, parsed: tuple[str | None, int]) -> None:
    assert parse_listen_address(text) == parsed


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("9400", "not HOST:PORT"),
        (":", "not HOST:PORT"),
        (":http", "not HOST:PORT"),
        ("::1:9400", "brackets"),
        (":70000", "out of range"),
        (":-1", "not HOST:PORT"),
    ],
)
def test_bad_listen_addresses(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_listen_address(text)
