"""A real browser for the tests: Debian's `chromium`, headless, as `make test` installs it.

`dump_dom` returns the DOM after Chromium has parsed and laid out the page (what it rendered, not
the bytes the server sent); `screenshot` writes a PNG of the viewport and `ink` says how much of it
is not background, so that a test can tell a drawn page from a blank one. Chromium's own flags are
documented at https://developer.chrome.com/docs/chromium/headless (`--dump-dom`, `--screenshot`,
`--window-size`). The browser gets a fresh profile directory per call and no network beyond the
URL given: `--no-sandbox` because the test machines run as root in a container.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from PIL import Image

_NAMES = ("chromium", "chromium-browser", "google-chrome")
_TIMEOUT_S = 60


def chromium() -> str:
    """The browser's path; a test that needs it fails (not skips) when it is missing."""
    for name in _NAMES:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is not installed (`make deps` installs it)", pytrace=False)


def _run(url: str, *flags: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        argv = [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            f"--user-data-dir={profile}",
            *flags,
            url,
        ]
        done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=_TIMEOUT_S)
    if done.returncode != 0:
        raise AssertionError(f"chromium exited {done.returncode}: {done.stderr[-2000:]}")
    return done


def dump_dom(url: str, *flags: str) -> str:
    """The page's DOM as Chromium serialises it after loading `url`."""
    return _run(url, "--dump-dom", *flags).stdout


def screenshot(url: str, out: Path, *flags: str, size: tuple[int, int] = (1280, 1600)) -> Path:
    """A PNG of the first `size` pixels of the page as Chromium painted it."""
    _run(url, f"--screenshot={out}", f"--window-size={size[0]},{size[1]}", *flags)
    if not out.exists():
        raise AssertionError(f"chromium wrote no screenshot to {out}")
    return out


def ink(png: Path) -> float:
    """The share of pixels that differ from the most common (background) colour."""
    with Image.open(png) as img:
        colours = img.convert("RGB").getcolors(maxcolors=1 << 24) or []
    total = sum(n for n, _ in colours)
    background = max((n for n, _ in colours), default=0)
    return 1.0 - background / total if total else 0.0


def distinct_colours(png: Path) -> int:
    """How many colours the screenshot has (a page of plots has many; a blank one has one)."""
    with Image.open(png) as img:
        return len(img.convert("RGB").getcolors(maxcolors=1 << 24) or [])
