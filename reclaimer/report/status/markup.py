"""The few HTML pieces the status page is made of, each escaping what it is given.

Convention: a `str` argument named `text` (or a header) is plain text and is escaped here; an
argument named `markup` (or a table cell) is HTML built by these functions already. Everything
from the cluster (names, queue names, details) enters the page only through `esc`, which also
replaces lone surrogates (`encodable`), so no name can make the page fail to encode.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape

# A lone UTF-16 surrogate (a JSON `\ud800` in a hand-edited dump, a proxy's bytes) is a valid
# Python str but cannot be encoded as UTF-8: one such name would fail the whole page.
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def encodable(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it always encodes as UTF-8."""
    return _SURROGATE.sub(REPLACEMENT, text)


def esc(text: object) -> str:
    """`text` as HTML text, safe in element content and in quoted attribute values, and always
    encodable (a lone surrogate shows as U+FFFD, the page never fails on a name)."""
    return escape(encodable(str(text)), quote=True)


def element(tag: str, markup: str, **attrs: str) -> str:
    """`<tag attr="...">markup</tag>`: `class_` is `class`, `aria_label` is `aria-label`."""
    shown = "".join(f' {_name(name)}="{esc(value)}"' for name, value in attrs.items())
    return f"<{tag}{shown}>{markup}</{tag}>"


def _name(keyword: str) -> str:
    return keyword.rstrip("_").replace("_", "-")


def paragraph(text: str, **attrs: str) -> str:
    return element("p", esc(text), **attrs)


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], **attrs: str) -> str:
    """A table with plain-text `headers` and rows of markup cells."""
    head = "".join(element("th", esc(h), scope="col") for h in headers)
    body = "".join(element("tr", "".join(element("td", c) for c in row)) for row in rows)
    return element("table", element("thead", element("tr", head)) + element("tbody", body), **attrs)


def section(title: str, markup: str, id_: str) -> str:
    return element("section", element("h2", esc(title)) + markup, id=id_)


def timestamp(seconds: float) -> str:
    """Unix seconds as UTC, to the second."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
