"""JSON merge patches (RFC 7386), as the fake API server applies every patch.

A map in the patch merges into the target's map key by key, a `null` removes the key, and
anything else (a list, a scalar) replaces the target's value whole. The store applies
strategic-merge patches this way too: the reclaimer only patches maps (labels, annotations,
data, spec fields), where the two agree.
"""

from __future__ import annotations

import copy
from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out
