"""Declarative settings for config dataclasses, and the walker that builds them from YAML.

A setting is a dataclass field made by `setting(default, parser, "yamlKey")`: the default stays on
the dataclass, the YAML key and parser ride in the field metadata. `build_section` reads a YAML
mapping into such a dataclass, recursing into sub-sections (`section=`), lists of items (`items=`)
and string-keyed maps (`values=`), and appends every problem to `errors` as "yaml.path: message"
instead of stopping at the first one. A section may define `problems() -> [(key, message)]`
for rules that relate several of its fields; they run once its fields are valid. Parsers take
the raw YAML value and raise `ValueError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import Field, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from reclaimer.quantities import parse_duration, parse_ratio

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
D = TypeVar("D", bound="DataclassInstance")
Parser = Callable[[object], Any]

_LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)


def setting(
    default: T,
    parse: Parser | None,
    key: str,
    *,
    section: type[DataclassInstance] | None = None,
    items: type[DataclassInstance] | None = None,
    values: Parser | None = None,
) -> T:
    """A dataclass field carrying its YAML key and how to parse it."""
    meta = {"key": key, "parse": parse, "section": section, "items": items, "values": values}
    if isinstance(default, MappingProxyType):  # immutable, but dataclasses cannot tell
        proxy: T = field(default_factory=lambda: default, metadata=meta)
        return proxy
    out: T = field(default=default, metadata=meta)
    return out


def build_section(cls: type[D], raw: object, path: str, errors: list[str]) -> D | None:
    """Build `cls` from the mapping `raw`; None (with `errors` extended) when anything is wrong."""
    if not isinstance(raw, Mapping):
        errors.append(f"{path or '<document>'}: expected a mapping, got {_kind(raw)}")
        return None
    before = len(errors)
    by_key = {f.metadata["key"]: f for f in fields(cls)}
    for key in sorted(set(map(str, raw)) - set(by_key)):
        errors.append(f"{_join(path, key)}: unknown setting (known: {', '.join(sorted(by_key))})")
    kwargs: dict[str, Any] = {}
    for key, f in by_key.items():
        if key in raw:
            kwargs[f.name] = _build_value(f, raw[key], _join(path, key), errors)
    if len(errors) > before:
        return None
    built = cls(**kwargs)
    cross_checks: Callable[[], list[tuple[str, str]]] | None = getattr(built, "problems", None)
    if cross_checks is not None:
        errors.extend(f"{_join(path, key)}: {message}" for key, message in cross_checks())
    return None if len(errors) > before else built


def _build_value(f: Field[Any], value: object, path: str, errors: list[str]) -> Any:
    meta = f.metadata
    if meta["section"] is not None:
        return build_section(meta["section"], value, path, errors)
    if meta["items"] is not None:
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {_kind(value)}")
            return None
        built = [
            build_section(meta["items"], v, f"{path}[{i}]", errors) for i, v in enumerate(value)
        ]
        return tuple(built)
    if meta["values"] is not None:
        return _build_map(meta["values"], value, path, errors)
    try:
        return meta["parse"](value)
    except ValueError as exc:
        errors.append(f"{path}: {exc}")
        return None


def _build_map(parse: Parser, value: object, path: str, errors: list[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        errors.append(f"{path}: expected a mapping, got {_kind(value)}")
        return MappingProxyType({})
    out: dict[str, Any] = {}
    for k in sorted(value, key=str):
        try:
            out[str(k)] = parse(value[k])
        except ValueError as exc:
            errors.append(f"{path}.{k}: {exc}")
    return MappingProxyType(out)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


# -- parsers: raw YAML value in, typed value out, ValueError with an operator's message --------


def as_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def as_count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected a whole number, got {value!r}")
    if value < 0:
        raise ValueError(f"must be >= 0, got {value}")
    return value


def as_positive_number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"must be a finite number > 0, got {value!r}")
    return float(value)


def as_replicas(value: object) -> int:
    count = as_count(value)
    if count < 2:
        raise ValueError(f"must be >= 2 (time-slicing needs at least 2 replicas), got {count}")
    return count


def as_ratio(value: object) -> float:
    return parse_ratio(value)


def as_positive_ratio(value: object) -> float:
    """A ratio in (0, 1]: 0.25 or "25%" (a threshold, a fraction of a GPU)."""
    ratio = parse_ratio(value)
    if ratio <= 0:
        raise ValueError(f"must be > 0, got {value!r}")
    return ratio


def as_duration(value: object) -> float:
    return parse_duration(value)


def as_positive_duration(value: object) -> float:
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError(f"must be > 0, got {value!r}")
    return seconds


def as_optional_duration(value: object) -> float | None:
    """A positive duration, or null for none."""
    return None if value is None else as_positive_duration(value)


def as_string(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def as_label_key(value: object) -> str:
    """A Kubernetes label or annotation key (`prefix/name`)."""
    text = as_string(value)
    if not _LABEL_KEY.fullmatch(text) or len(text.rpartition("/")[2]) > 63:
        raise ValueError(f"not a valid label/annotation key: {text!r}")
    return text
