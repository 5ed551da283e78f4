"""Elementwise comparison of a backend's output with the expected (golden) output.

Policies follow Ascend's published standards (shared/research/aclnn-facts.md §9): dual ratio
(§9.1), MERE/MARE (§9.2), the small-value domain (§9.3), plus an optional ULP bound. Every result
carries all statistics whatever the verdict. Everything is vectorized (outputs of 16M+ elements).

- golden is converted to float64 and also rounded once (RNE) to the output dtype; the rounded
  value decides where NaN / +-inf are *expected*, so a golden that overflows the output dtype
  expects +-inf (the correctly rounded result). Errors use the float64 golden.
- NaN must match NaN; +-inf must match in position and sign. A violation counts once, in
  nan_mismatches when either side is NaN, else in inf_mismatches, and fails the case.
  Signed zero is not a mismatch.
- "compared" elements: those with a finite expected value. abs_err = |a - g| (inf for a NaN/inf
  actual); rel_err = abs_err / max(|g|, float64 tiny), so g == 0 does not divide by zero. An
  element mismatches when |g| < small_threshold and abs_err > small_atol (small-value domain),
  or |g| >= small_threshold and rel_err > rel; mismatch_ratio = mismatches / compared.
- MERE = mean(abs_err / (|g| + 1e-7)), MARE = max(same), and max_rel cover compared elements
  outside the small-value domain (there the absolute bound rules; a golden of 1e-6 off by 1e-5
  would give 10) and skip NaN/inf actuals (already failing as NaN/inf mismatches).
- ULPs are counted in the output dtype between the rounded golden and the actual where both are
  finite; integer / bool outputs use the absolute difference.
- Complex outputs compare as real and imaginary parts (a trailing axis of 2: Worst.index ends
  with 0 for the real part, 1 for the imaginary part); n counts parts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from functools import cache
from typing import Any

import numpy as np

from ... import specs
from ..acl import dtypes
from ..spec.yamlpos import Located
from ..spec.yamlpos import load as load_yaml

MERE_EPS = 1e-7  # aclnn-facts §9.2: |golden| + 1e-7 in the MERE/MARE denominator
_TINY = float(np.finfo(np.float64).tiny)


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


def _jsonable(x: Any) -> Any:
    """JSON-safe copy: ints stay ints, floats floats; inf/nan become "inf", "-inf", "nan"."""
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (str, bool, np.bool_)):
        return x if isinstance(x, str) else bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    x = float(x)
    return x if np.isfinite(x) else "nan" if np.isnan(x) else "inf" if x > 0 else "-inf"


@dataclass
class Stats:
    n: int
    compared: int  # elements whose expected value is finite
    max_abs: float
    max_rel: float
    mere: float
    mare: float
    max_ulp: float
    mismatches: int
    mismatch_ratio: float
    nan_mismatches: int
    inf_mismatches: int
    small_value_count: int

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


@dataclass
class Worst:
    index: tuple[int, ...]
    expected: float
    actual: float
    abs_err: float
    rel_err: float
    ulp: float
    inputs: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


@dataclass
class Comparison:
    passed: bool
    stats: Stats
    worst: list[Worst]
    reasons: list[str]  # why it failed; empty when passed

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


def _ordered(x: np.ndarray) -> np.ndarray:
    """x's bits on a monotonic integer line: negative values map to -(bits & 0x7f..), -0 == +0."""
    bits = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    sign = bits.dtype.type(1 << (8 * x.dtype.itemsize - 1))
    o = (bits & bits.dtype.type(sign - 1)).astype(np.int64)  # int32 would wrap across zero
    np.negative(o, out=o, where=(bits & sign) != 0)
    return o


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Representable steps between two same-dtype float arrays (float64 result; -0 == +0).

    Meaningless where either side is NaN/inf; callers mask those out.
    """
    if a.dtype != b.dtype:
        raise ValueError(f"ulp_distance of {a.dtype} and {b.dtype}")
    oa, ob = _ordered(a), _ordered(b)
    # Only float64 values of opposite signs can be 2^63 or more apart (int64 would wrap):
    # there the distance through zero is summed in float64 instead.
    through_zero = np.flatnonzero((oa ^ ob) < 0) if a.dtype.itemsize == 8 else None
    if through_zero is not None and through_zero.size:
        far = np.abs(oa.flat[through_zero]).astype(np.float64)
        far += np.abs(ob.flat[through_zero]).astype(np.float64)
    np.subtract(oa, ob, out=oa)
    np.abs(oa, out=oa)
    out = oa.astype(np.float64, order="C")
    if through_zero is not None and through_zero.size:
        out.flat[through_zero] = far
    return out


def _top(key1: np.ndarray, key2: np.ndarray, k: int) -> np.ndarray:
    """Flat indices of the k largest (key1, key2) pairs, best first, then lowest index first.

    Two partitions instead of a full sort: outputs can have tens of millions of elements.
    """

    def largest(idx: np.ndarray, key: np.ndarray, m: int) -> np.ndarray:
        if idx.size <= m:
            return idx
        vals = key[idx]
        kth = np.partition(vals, idx.size - m)[idx.size - m]
        above = idx[vals > kth]
        return np.concatenate([above, idx[vals == kth][: m - above.size]])

    if k <= 0 or key1.size == 0:
        return np.empty(0, np.intp)
    if key1.size <= k:
        cand = np.arange(key1.size)
    else:
        kth = np.partition(key1, key1.size - k)[key1.size - k]
        above = np.flatnonzero(key1 > kth)
        cand = np.concatenate([above, largest(np.flatnonzero(key1 == kth), key2, k - above.size)])
    return cand[np.lexsort((cand, -key2[cand], -key1[cand]))]


def _as_parts(x: np.ndarray) -> np.ndarray:
    c = x.astype(np.complex128)
    return np.stack((c.real, c.imag), axis=-1)


def compare(
    golden: Any,
    actual: Any,
    dtype: str,
    policy: Policy,
    inputs: dict[str, np.ndarray] | None = None,
    n_worst: int = 5,
) -> Comparison:
    """Compare `actual` (output dtype `dtype`) with `golden` under `policy`; see module doc.

    Whole arrays, measured chunk by chunk (conformance/judge/accumulate.py): the figures are the same
    whatever the chunk size, so a streamed comparison of a huge output reports what this does."""
    from ..acl.views import ranges
    from .accumulate import Accumulator

    g_in, a_in = np.asarray(golden), np.asarray(actual)
    if g_in.shape != a_in.shape:
        raise ValueError(f"shape mismatch: expected {g_in.shape}, actual {a_in.shape}")
    acc = Accumulator(dtype, policy, g_in.shape, inputs, n_worst)
    g_flat, a_flat = g_in.reshape(-1), a_in.reshape(-1)
    for start, stop in ranges(g_flat.size, acc.chunk):
        acc.add(start, g_flat[start:stop], a_flat[start:stop])
    return acc.result()
