"""Settling the elements a compiled kernel flagged: the ones float64 alone cannot decide.

A FLOAT, FLOAT16 or BF16 kernel flags the elements near a rounding midpoint of the output (1) and
those in its subnormal range (2, where the arithmetic test of precise.near_midpoint decides).
They are settled in three tiers, cheapest first: the double-double pair (ddtier.py), an exact
float64 value (errbound.exact_mask: its own rounding is right, tie or not), and mpmath
(precise.refine). A DOUBLE kernel (ddgen.py) flags the elements it cannot certify; they are
evaluated the numpy way (faithful_at).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from conformance import dtypes as dt
from conformance.spec import OpSpec
from reference import ddtier, errbound, precise

Check = Callable[[], None] | None


def flagged(flags: np.ndarray) -> np.ndarray:
    """np.flatnonzero of a uint8 array where nonzero is rare, eight times faster: the words of
    eight flags that are nonzero first, then the flags inside them."""
    whole = flags.size - flags.size % 8
    words = np.flatnonzero(flags[:whole].view(np.uint64))
    idx = (words[:, None] * 8 + np.arange(8)).ravel()
    idx = np.concatenate([idx, np.arange(whole, flags.size)])
    return idx[flags[idx] != 0]


def patch(spec: OpSpec, env: dict[str, Any], raw: dict[str, np.ndarray],
          in_dtypes: dict[str, str], buf: np.ndarray, flags: np.ndarray, out_dtype: dt.DType,
          check: Check) -> np.ndarray:  # fmt: skip
    """Patch buf (the kernel's values: rounded as float32 or as FLOAT16 / BF16 bits, or float64
    before the rounding) at the flagged elements that need it; returns the indices patched."""
    from reference.engine import evaluate_formula

    idx = flagged(flags)
    if idx.size == 0:
        return idx
    sub = {**env, **{nm: a[idx].astype(np.float64) for nm, a in raw.items()}}
    ys = buf[idx] if buf.dtype == np.float64 else evaluate_formula(spec, dict(sub), idx.size)
    keep = flags[idx] == 1
    if not keep.all():
        keep[~keep] = precise.near_midpoint(ys[~keep], out_dtype.name)
    idx = idx[keep]
    if idx.size == 0:
        return idx
    ys = ys[keep]
    decided = ddtier.decide(spec, env, {nm: a[idx].astype(np.float64) for nm, a in raw.items()},
                            out_dtype)  # fmt: skip
    rest = np.arange(idx.size)
    if decided is not None:
        ys[decided[0]] = decided[1][decided[0]]
        rest = np.flatnonzero(~decided[0])
    if rest.size:  # an exact float64 value needs no mpmath
        at = {**env, **{nm: a[idx[rest]].astype(np.float64) for nm, a in raw.items()}}
        rest = rest[~errbound.exact_mask(spec, at, rest.size)]
    if rest.size:
        at = {nm: precise.exact_values(a[idx[rest]], in_dtypes[nm]) for nm, a in raw.items()}
        ys[rest] = precise.refine(spec, env, ys[rest], np.arange(rest.size), at, out_dtype.name,
                                  check)  # fmt: skip
    if buf.dtype == np.float64:
        buf[idx] = ys
    else:  # float32, or the 16-bit format's bits
        buf[idx] = dt.round_to(ys, out_dtype).view(buf.dtype)
    return idx


def faithful_at(
    spec: OpSpec,
    env: dict[str, Any],
    raw: dict[str, np.ndarray],
    in_dtypes: dict[str, str],
    idx: np.ndarray,
    check: Check,
) -> np.ndarray:
    """The faithful DOUBLE values of the elements idx, the numpy way (long double, or float64
    with an error bound and mpmath where it does not certify)."""
    sub = {**env, **{nm: a[idx].astype(np.float64) for nm, a in raw.items()}}
    if errbound.extended(spec):
        return errbound.evaluate_extended(spec, sub, idx.size)
    y, mask = errbound.faithful_mask(spec, sub, idx.size)
    m = np.flatnonzero(mask)
    if m.size:
        at = {nm: precise.exact_values(a[idx[m]], in_dtypes[nm]) for nm, a in raw.items()}
        y = precise.refine(spec, env, y, m, at, "DOUBLE", check)
    return y
