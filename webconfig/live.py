"""The web config in force, re-read when its file or the files it names change.

`LiveWebConfig(path)` reads the file once and raises `WebConfigError` if it is unusable (the CLIs
exit 2). After that, `current()` is called on every new connection and every request; at most once
per `check_interval` (1 s) it stats the config file and the certificate, key and CA files the last
read named. A changed fingerprint (inode, device, mtime, size: a Kubernetes Secret volume swaps a
symlink, which changes the inode) means one re-read:

- a good file replaces the config, and its fresh `SSLContext` serves every later handshake, so a
  rotated certificate is live without a restart;
- a bad file is logged once (the fingerprint is remembered, so it is not re-read or re-logged until
  it changes again) and the previous config stays in force;
- a file that turns TLS on or off is refused the same way: listeners cannot change protocol under
  their clients, so that takes a restart.

Time is injected (`clock`) so tests step past the interval without sleeping.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from webconfig.model import Problem, WebConfig, WebConfigError
from webconfig.parse import parse_web_config
from webconfig.tls import build_ssl_context

LOG = logging.getLogger("webconfig")

_Stat = tuple[int, int, int, int] | None
Fingerprint = tuple[_Stat, ...]


@dataclass(frozen=True)
class ActiveConfig:
    """A config with the TLS context built from it (None: plain HTTP)."""

    config: WebConfig
    ssl_context: ssl.SSLContext | None


def _stat(path: Path) -> _Stat:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_ino, found.st_dev, found.st_mtime_ns, found.st_size)


def _fingerprint(config_file: Path, named: Iterable[Path]) -> Fingerprint:
    return (_stat(config_file), *(_stat(path) for path in named))


def _named_files(config: WebConfig) -> tuple[Path, ...]:
    return config.tls.files() if config.tls is not None else ()


def _read_config(path: Path) -> WebConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WebConfigError(str(path), (Problem("", f"cannot read the file: {exc}"),)) from None
    return parse_web_config(text, path.parent, source=str(path))


def _activate(config: WebConfig, source: Path) -> ActiveConfig:
    context = build_ssl_context(config.tls, source=str(source)) if config.tls else None
    return ActiveConfig(config, context)


def read_web_config(path: Path) -> ActiveConfig:
    """Read, validate and build the config in `path`; raises `WebConfigError` listing every
    problem (the check a CLI runs before it starts anything)."""
    return _activate(_read_config(path), path)


class LiveWebConfig:
    """The web config from `path`, kept current; see the module docstring."""

    def __init__(
        self,
        path: Path,
        *,
        check_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = LOG,
    ) -> None:
        self.path = path
        self._interval = check_interval
        self._clock = clock
        self._log = logger
        # Stat before reading, here and in _check: a change made during the read is then seen
        # by the next check instead of being taken for what was read.
        seen = _stat(path)
        config = _read_config(path)  # raises: the CLI exits 2
        self._watched = _named_files(config)
        self._seen: Fingerprint = (seen, *(_stat(named) for named in self._watched))
        self._active = _activate(config, path)
        self._checked_at = clock()

    @property
    def tls(self) -> bool:
        """Whether this server speaks TLS; fixed for the life of the process."""
        return self._active.ssl_context is not None

    def current(self) -> ActiveConfig:
        now = self._clock()
        if now - self._checked_at >= self._interval:
            self._checked_at = now
            self._check()
        return self._active

    def _check(self) -> None:
        if _fingerprint(self.path, self._watched) == self._seen:
            return
        seen = _stat(self.path)
        try:
            config = _read_config(self.path)
        except WebConfigError as exc:
            self._seen = (seen, *(_stat(named) for named in self._watched))
            self._refuse(exc)
            return
        # Watch what this version names, even if it is refused below: creating a missing
        # certificate is then a change that triggers the next read.
        self._watched = _named_files(config)
        self._seen = (seen, *(_stat(named) for named in self._watched))
        try:
            active = _activate(config, self.path)
        except WebConfigError as exc:
            self._refuse(exc)
            return
        if (active.ssl_context is None) != (self._active.ssl_context is None):
            now_on = "on" if active.ssl_context is not None else "off"
            self._log.error(
                "web config %s now turns TLS %s: switching TLS on or off needs a restart; keeping "
                "the web config in force (TLS %s) until then",
                self.path,
                now_on,
                "off" if now_on == "on" else "on",
            )
            return
        self._active = active
        self._log.info("web config %s reloaded", self.path)

    def _refuse(self, exc: WebConfigError) -> None:
        self._log.error("%s\nkeeping the web config in force until the file changes", exc)
