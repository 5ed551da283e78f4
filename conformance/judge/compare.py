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

from dataclasses import dataclass
from typing import Any

import numpy as np

MERE_EPS = 1e-7  # aclnn-facts §9.2: |golden| + 1e-7 in the MERE/MARE denominator
_TINY = float(np.finfo(np.float64).tiny)


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
        return _jsonable(vars(self))  # numbers only: no dataclasses.asdict deep copy


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
        return _jsonable(vars(self))


@dataclass
class Comparison:
    passed: bool
    stats: Stats
    worst: list[Worst]
    reasons: list[str]  # why it failed; empty when passed

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": bool(self.passed),
            "stats": self.stats.to_dict(),
            "worst": [w.to_dict() for w in self.worst],
            "reasons": [str(r) for r in self.reasons],
        }


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
