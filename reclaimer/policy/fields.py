"""Declarative settings for config dataclasses, and the walker that builds them from YAML.

A setting is a dataclass field made by `setting(default, parser, "yamlKey")`: the default stays on
the dataclass, the YAML key and parser ride in the field metadata. `build_section` reads a YAML
mapping into such a dataclass, recursing into sub-sections (`section=`), lists of items (`items=`)
and string-keyed maps (`values=`), and appends every problem to `errors` as "yaml.path: message"
instead of stopping at the first one. A section may define `problems() -> [(keys, message)]` for
rules that relate several of its fields (`keys`: the YAML keys involved, the first one names
the error); such a rule runs whenever the fields it involves are valid, so it is reported
together with the errors of the other fields. Parsers take the raw YAML value and raise
`ValueError`; every number has a range (durations at most `MAX_DURATION_SECONDS`), so a value
that would fail every cycle later (`horizon: 1e308`) is refused at load.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import Field, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from reclaimer.units import parse_duration, parse_ratio

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
D = TypeVar("D", bound="DataclassInstance")
Parser = Callable[[object], Any]

MAX_DURATION_SECONDS = 7 * 86400.0
"""No setting of the reclaimer means anything beyond a week (the longest history it reads)."""
MAX_COUNT = 1_000_000
MAX_REPLICAS = 128
MAX_OVERCOMMIT = 100.0
CrossCheck = tuple[tuple[str, ...], str]

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
    failed: set[str] = set()
    for key, f in by_key.items():
        if key in raw:
            mark = len(errors)
            value = _build_value(f, raw[key], _join(path, key), errors)
            if len(errors) > mark:
                failed.add(key)
            else:
                kwargs[f.name] = value
    built = cls(**kwargs)  # failed fields keep their defaults, for the cross checks only
    cross_checks: Callable[[], list[CrossCheck]] | None = getattr(built, "problems", None)
    for keys, message in cross_checks() if cross_checks is not None else ():
        if not failed & set(keys):
            errors.append(f"{_join(path, keys[0])}: {message}")
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
    if not 0 <= value <= MAX_COUNT:
        raise ValueError(f"must be between 0 and {MAX_COUNT}, got {value}")
    return value


def as_positive_number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    if not 0 < value <= MAX_OVERCOMMIT:
        raise ValueError(f"must be > 0 and <= {MAX_OVERCOMMIT:g}, got {value!r}")
    return float(value)


def as_replicas(value: object) -> int:
    count = as_count(value)
    if not 2 <= count <= MAX_REPLICAS:
        raise ValueError(
            f"must be between 2 (time-slicing needs at least 2 replicas) and {MAX_REPLICAS},"
            f" got {count}"
        )
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
    """A duration from 0 to a week."""
    seconds = parse_duration(value)
    if seconds > MAX_DURATION_SECONDS:
        raise ValueError(f"must be at most 7d, got {value!r}")
    return seconds


def as_positive_duration(value: object) -> float:
    seconds = as_duration(value)
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


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def as_dns_names(value: object) -> tuple[str, ...]:
    """A list of DNS subdomains (what DRA driver and DeviceClass names are), at least one."""
    if not isinstance(value, list) or not value:
        got = "an empty list" if isinstance(value, list) else _kind(value)
        raise ValueError(f"expected a non-empty list of names, got {got}")
    out = []
    for item in value:
        text = as_string(item)
        if len(text) > 253 or not _DNS_SUBDOMAIN.fullmatch(text):
            raise ValueError(f"not a DNS subdomain: {text!r}")
        out.append(text)
    return tuple(out)
