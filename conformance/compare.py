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

from dataclasses import asdict, dataclass, fields
from functools import cache
from typing import Any

import numpy as np
import yaml

import specs
from conformance import dtypes

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


@cache
def _defaults() -> tuple[dict[str, dict[str, Any]], frozenset[str]]:
    raw = yaml.safe_load((specs.root() / "tolerances.yaml").read_text(encoding="utf-8"))
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
    o = (bits & bits.dtype.type(sign - 1)).astype(np.int64 if x.dtype.itemsize == 8 else np.int32)
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
    """Compare `actual` (output dtype `dtype`) with `golden` under `policy`; see module doc."""
    dt = dtypes.get(dtype)
    g_in, a_in = np.asarray(golden), np.asarray(actual)
    if g_in.shape != a_in.shape:
        raise ValueError(f"shape mismatch: expected {g_in.shape}, actual {a_in.shape}")
    scalar = g_in.ndim == 0  # work on shape (1,): ufuncs turn 0-d arrays into scalars
    if scalar:
        g_in, a_in = g_in.reshape(1), a_in.reshape(1)
        inputs = {k: np.reshape(v, 1) for k, v in (inputs or {}).items() if np.ndim(v) == 0}
    if dt.category == "complex":
        part = dtypes.get("DOUBLE" if dt.name == "COMPLEX128" else "FLOAT")
        g, a = _as_parts(g_in), _as_parts(a_in)
    elif np.iscomplexobj(g_in) or np.iscomplexobj(a_in):
        raise ValueError(f"complex values for the real output dtype {dt.name}")
    else:
        part = dt
        g, a = np.asarray(g_in, dtype=np.float64), np.asarray(a_in, dtype=np.float64)
    differ = None
    if policy.exact and g_in.dtype.kind in "biu" and a_in.dtype.kind in "biu":
        differ = g_in != a_in  # exact even where float64 would round large integers
    stats, abs_err, rel_err, ulp, special = _measure(g, a, part, policy, differ)

    reasons: list[str] = []
    if stats.nan_mismatches:
        reasons.append(f"{stats.nan_mismatches} NaN mismatch(es): NaN positions differ")
    if stats.inf_mismatches:
        reasons.append(f"{stats.inf_mismatches} inf mismatch(es): +-inf position or sign differ")
    n_mism, compared = stats.mismatches, stats.compared
    if policy.exact:
        if n_mism:
            reasons.append(f"exact: {n_mism} of {compared} elements differ")
    elif compared:
        if stats.mismatch_ratio > policy.max_ratio:
            reasons.append(
                f"mismatch ratio {stats.mismatch_ratio:.6g} ({n_mism}/{compared}) > "
                f"max_ratio {policy.max_ratio:.6g}"
            )
        normal = compared - stats.small_value_count
        if normal and not stats.mere < policy.mere:
            reasons.append(f"MERE {stats.mere:.6g} >= {policy.mere:.6g}")
        if normal and not stats.mare < policy.mare:
            reasons.append(f"MARE {stats.mare:.6g} >= {policy.mare:.6g}")
        if policy.max_ulp is not None and stats.max_ulp > policy.max_ulp:
            reasons.append(f"max ulp {stats.max_ulp:.6g} > max_ulp {policy.max_ulp:.6g}")

    worst = _worst(g, a, abs_err, rel_err, ulp, special, inputs, a_in.shape, n_worst)
    for w in worst if scalar else ():
        w.index = w.index[1:]
    return Comparison(passed=not reasons, stats=stats, worst=worst, reasons=reasons)


def _measure(
    g: np.ndarray, a: np.ndarray, part: dtypes.DType, policy: Policy, differ: np.ndarray | None
) -> tuple[Stats, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stats, plus abs_err, rel_err, ulp (NaN where not measured) and NaN/inf mismatch arrays."""
    floating = part.is_float and not part.opaque
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        g_store = dtypes.round_to(g, part) if floating else g  # golden in the output dtype
        g_nan, a_nan = np.isnan(g), np.isnan(a)
        g_inf, a_inf = np.isinf(g_store), np.isinf(a)
        nan_mis = g_nan != a_nan
        finite = ~(g_nan | g_inf)
        inf_mis = ~(g_nan | a_nan) & (g_inf | a_inf)
        at = np.flatnonzero(inf_mis)  # both sides non-NaN and one infinite: compare the values
        inf_mis.flat[at] = a.flat[at] != np.asarray(g_store.flat[at], np.float64)
        a_bad = a_nan | a_inf
        ulp = None
        if floating:  # first, while few other full-size temporaries are alive
            ulp = ulp_distance(g_store, dtypes.round_to(a, part))
            ulp[~finite | a_bad] = np.nan
        del g_store, g_inf, a_inf

        abs_err = np.subtract(a, g, order="C")  # C order: _worst reshapes it in place
        np.abs(abs_err, out=abs_err)
        abs_err[finite & a_nan] = np.inf
        abs_err[~finite] = np.nan
        buf = np.abs(g)  # |g|, then the MERE terms, then rel_err: one buffer
        small = finite & (buf < policy.small_threshold)
        normal = finite & ~small
        n_normal = int(np.count_nonzero(normal))
        measured = normal & ~a_bad  # a NaN/inf actual already fails as a NaN/inf mismatch
        np.divide(abs_err, np.add(buf, MERE_EPS, out=buf), out=buf)
        mere = float(np.mean(buf, where=measured)) if np.any(measured) else 0.0
        mare = float(np.max(buf, where=measured, initial=0.0))
        rel_err = np.abs(g, out=buf)
        np.divide(abs_err, np.maximum(rel_err, _TINY, out=rel_err), out=rel_err)
        if policy.exact:
            mism = finite & (differ if differ is not None else a != g)
        else:
            mism = (small & (abs_err > policy.small_atol)) | (normal & (rel_err > policy.rel))
        if ulp is None:
            ulp = abs_err.copy()
            ulp[a_bad] = np.nan

    compared = int(np.count_nonzero(finite))
    n_mism = int(np.count_nonzero(mism))
    stats = Stats(
        n=int(g.size),
        compared=compared,
        max_abs=float(np.max(abs_err, where=finite, initial=0.0)),
        max_rel=float(np.max(rel_err, where=measured, initial=0.0)),
        mere=mere,
        mare=mare,
        max_ulp=float(np.max(ulp, where=~np.isnan(ulp), initial=0.0)),
        mismatches=n_mism,
        mismatch_ratio=n_mism / compared if compared else 0.0,
        nan_mismatches=int(np.count_nonzero(nan_mis)),
        inf_mismatches=int(np.count_nonzero(inf_mis)),
        small_value_count=compared - n_normal,
    )
    return stats, abs_err, rel_err, ulp, nan_mis | inf_mis


def _worst(
    g: np.ndarray,
    a: np.ndarray,
    abs_err: np.ndarray,
    rel_err: np.ndarray,
    ulp: np.ndarray,
    special: np.ndarray,
    inputs: dict[str, np.ndarray] | None,
    out_shape: tuple[int, ...],
    n_worst: int,
) -> list[Worst]:
    """The n_worst differing elements: NaN/inf mismatches first, then by ulp, then abs_err.

    Turns ulp and abs_err into the ranking keys in place (-1: not measured, inf: a NaN/inf
    mismatch) to save two full-size copies; the reported values are rebuilt from the keys.
    """
    key1, key2 = ulp.reshape(-1), abs_err.reshape(-1)  # views: both are contiguous
    flat_special = special.reshape(-1)
    for key in (key1, key2):
        np.nan_to_num(key, copy=False, nan=-1.0, posinf=np.inf)
        key[flat_special] = np.inf
    arrays = {k: np.asarray(v) for k, v in (inputs or {}).items()}
    arrays = {k: v for k, v in arrays.items() if v.shape == out_shape}
    result = []
    for flat in _top(key1, key2, n_worst):
        k1, k2 = float(key1[flat]), float(key2[flat])
        if not (k1 > 0 or k2 > 0):
            break  # equal elements (and matching NaN/inf) are not worth listing
        idx = tuple(int(i) for i in np.unravel_index(flat, g.shape))
        vals: dict[str, float] = {}
        for name, arr in arrays.items():
            v = arr[idx[: len(out_shape)]]
            if np.iscomplexobj(v):
                vals[f"{name}.real"], vals[f"{name}.imag"] = float(v.real), float(v.imag)
            else:
                vals[name] = float(v)
        rel = float(rel_err[idx])  # NaN exactly where the expected value is not finite
        result.append(
            Worst(
                index=idx,
                expected=float(g[idx]),
                actual=float(a[idx]),
                abs_err=np.nan if np.isnan(rel) else k2,
                rel_err=rel,
                ulp=k1 if 0 <= k1 < np.inf else np.nan,
                inputs=vals,
            )
        )
    return result
