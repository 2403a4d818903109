"""The status page's only styling: one inline stylesheet, allowed by its hash and nothing else.

The Content-Security-Policy names this exact stylesheet by its SHA-256 (CSP level 2 hash
source), so no other inline style, no script and no outside resource can run or load on the
page, even if a name from the cluster slipped past escaping. Charts take their colours from
classes here or from SVG presentation attributes, never from `style=` attributes.
"""

from __future__ import annotations

import base64
import hashlib

STYLESHEET = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1b1f24;background:#fff}
h1{font-size:1.4rem;margin:0 0 .3rem}h2{font-size:1.1rem;margin:1.6rem 0 .4rem}
table{border-collapse:collapse;margin:.3rem 0}
th,td{border-bottom:1px solid #d0d7de;padding:.2rem .6rem;text-align:left;vertical-align:middle}
th{background:#f0f3f6}.num{font-variant-numeric:tabular-nums}
.ok{color:#116329}.warn{color:#9a6700}.bad{color:#cf222e}.muted{color:#57606a}
.banner{padding:.6rem .8rem;border-left:4px solid #9a6700;background:#fff8c5}
.spark .line{fill:none;stroke:#0969da;stroke-width:1.5}
.spark .dot{fill:#0969da}.spark .frame{fill:#f6f8fa;stroke:#d0d7de}
.spark .threshold{stroke:#cf222e;stroke-dasharray:3 2}
details{margin:.3rem 0}summary{cursor:pointer}
.jobs td:nth-child(5){white-space:nowrap}.spark{vertical-align:middle}
"""


def style_source() -> str:
    """The CSP source that allows `STYLESHEET` inline, by its SHA-256."""
    digest = hashlib.sha256(STYLESHEET.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"
