"""The tolerance policy of each dtype: specs/tolerances.yaml read, checked and merged with a
spec's overrides (the rules that use it: conformance/judge/compare.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

from ... import specs
from ..acl import dtypes
from .yamlpos import Located
from .yamlpos import load as load_yaml


@dataclass(frozen=True)
class Policy:
    rel: float
    max_ratio: float
    mere: float
    mare: float
    small_threshold: float
    small_atol: float
    max_ulp: float | None = None
    exact: bool = False  # int/bool outputs: bit-exact


_REQUIRED = ("rel", "max_ratio", "mere", "mare", "small_threshold", "small_atol")
_FIELDS = tuple(f.name for f in fields(Policy))


# The range of each policy field, both ends included (None: unbounded). A NaN is in no range,
# and neither is inf: a NaN `rel` would make every element comparison false, i.e. pass.
FIELD_RANGES: dict[str, tuple[float, float | None]] = {
    "rel": (0.0, None), "max_ratio": (0.0, 1.0), "mere": (0.0, None), "mare": (0.0, None),
    "small_threshold": (0.0, None), "small_atol": (0.0, None), "max_ulp": (0.0, None),
}  # fmt: skip


def field_problem(name: str, value: Any) -> str:
    """Why `value` cannot be the tolerance field `name` ('' when it can): unknown field, not a
    number, not finite, out of its range."""
    if name not in FIELD_RANGES:
        return f"unknown tolerance field {name!r} (known: {', '.join(FIELD_RANGES)})"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"tolerance {name} must be a number, not {value!r}"
    lo, hi = FIELD_RANGES[name]
    if not math.isfinite(value):
        return f"tolerance {name} must be a finite number, not {value}"
    if value < lo or (hi is not None and value > hi):
        where = f"between {lo:g} and {hi:g}" if hi is not None else f"at least {lo:g}"
        return f"tolerance {name} must be {where}, not {value}"
    return ""


def table_problems(doc: Located) -> list[tuple[tuple[Any, ...], str]]:
    """(path, message) for each problem of a tolerance table (specs/tolerances.yaml)."""
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("policies", {}), dict):
        return [((), "a tolerance table is a mapping with a `policies` mapping")]
    out = []
    for name, pol in data.get("policies", {}).items():
        try:
            dtypes.get(str(name))
        except ValueError:
            out.append((("policies", name), f"unknown dtype {name!r}"))
        if not isinstance(pol, dict):
            out.append((("policies", name), f"policy of {name} must be a mapping of fields"))
            continue
        missing = [f for f in _REQUIRED if f not in pol]
        if missing:
            out.append((("policies", name), f"policy of {name} lacks {', '.join(missing)}"))
        for key, value in pol.items():
            if why := field_problem(str(key), value):
                out.append((("policies", name, key), why))
    return out


def tolerance_table() -> Located:
    return load_yaml(specs.root() / "tolerances.yaml")


@cache
def _defaults() -> tuple[dict[str, dict[str, Any]], frozenset[str]]:
    doc = tolerance_table()
    problems = table_problems(doc)
    if problems:  # a broken table must not loosen every comparison: nothing is judged by it
        path, why = problems[0]
        raise ValueError(f"{doc.file}:{doc.line(path)}: {why}")
    raw = doc.data
    return dict(raw.get("policies", {})), frozenset(raw.get("exact_categories", ()))


def policy_for(dtype: str, overrides: dict[str, dict[str, float]] | None = None) -> Policy:
    """Default policy of `dtype` from specs/tolerances.yaml, with overrides[dtype] on top.

    Dtype names (also the override keys) may be aliases (fp16, FLOAT32, ...). Raises ValueError
    for an unknown override field or a dtype that ends up without a complete policy.
    """
    dt = dtypes.get(dtype)
    policies, exact_categories = _defaults()
    merged: dict[str, Any]
    if dt.category in exact_categories:
        merged = dict.fromkeys(_REQUIRED, 0.0) | {"exact": True}
    else:
        merged = dict(policies.get(dt.name, {}))
    for key, fields_ in (overrides or {}).items():
        if dtypes.get(key).name != dt.name:
            continue
        unknown = sorted(set(fields_) - set(_FIELDS))
        if unknown:
            raise ValueError(f"unknown tolerance field(s) {unknown} for {dt.name}")
        merged.update(fields_)
    missing = [f for f in _REQUIRED if f not in merged]
    if missing:
        raise ValueError(f"no tolerance policy for dtype {dt.name} (missing {missing})")
    kwargs = {f: float(merged[f]) for f in _REQUIRED}
    ulp = merged.get("max_ulp")
    return Policy(
        **kwargs, max_ulp=None if ulp is None else float(ulp), exact=bool(merged.get("exact"))
    )
