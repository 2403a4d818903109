"""YAML text -> plain Python values, with every duplicate mapping key reported at its path.

PyYAML keeps the last of two equal keys without a word; in a credentials file that silently drops
a user or a setting, so duplicates are problems here. The text is composed into nodes once, the
node tree is walked for duplicates (with dotted paths), and only then constructed into values.
"""

from __future__ import annotations

from typing import Any

import yaml

from webconfig.model import Problem

_MERGE_TAG = "tag:yaml.org,2002:merge"


def join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _duplicates(node: yaml.Node, path: str) -> list[Problem]:
    found: list[Problem] = []
    if isinstance(node, yaml.MappingNode):
        seen: dict[tuple[str, str], int] = {}
        for key, value in node.value:
            if key.tag == _MERGE_TAG:
                continue
            label = str(key.value) if isinstance(key, yaml.ScalarNode) else "<complex key>"
            identity = (key.tag, label)
            line = key.start_mark.line + 1
            if identity in seen:
                why = f"duplicate key (line {line} repeats line {seen[identity]})"
                found.append(Problem(join(path, label), why))
            else:
                seen[identity] = line
            found.extend(_duplicates(value, join(path, label)))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found.extend(_duplicates(item, f"{path}[{index}]"))
    return found


def load_yaml(text: str) -> tuple[Any, list[Problem]]:
    """The document's value (None for an empty one) and the problems that make it unusable:
    a syntax error (then the value is None) or duplicate keys (then the value is still given,
    so the caller can report its other problems in the same pass)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            return None, []
        duplicates = _duplicates(node, "")
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        return None, [Problem("", f"not valid YAML{where}: {problem}")]
    return value, duplicates
