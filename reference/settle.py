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
from reference.codegen import FLAG_BLOCK

Check = Callable[[], None] | None


def flagged(flags: np.ndarray, blocks: np.ndarray | None = None) -> np.ndarray:
    """np.flatnonzero of a uint8 array where nonzero is rare, fast: with the kernel's block
    flags (each FLAG_BLOCK flags ORed), the flags of the nonzero blocks only; without them,
    the words of eight flags that are nonzero first (eight times faster than flatnonzero)."""
    if blocks is not None:
        at = np.flatnonzero(blocks)
        if at.size == 0:
            return at
        if at.size * 8 > blocks.size:  # not rare (exact ties of a rational formula)
            return np.flatnonzero(flags)
        idx = (at[:, None] * FLAG_BLOCK + np.arange(FLAG_BLOCK)).ravel()
        idx = idx[idx < flags.size]
        return idx[flags[idx] != 0]
    whole = flags.size - flags.size % 8
    words = np.flatnonzero(flags[:whole].view(np.uint64))
    idx = (words[:, None] * 8 + np.arange(8)).ravel()
    idx = np.concatenate([idx, np.arange(whole, flags.size)])
    return idx[flags[idx] != 0]


def patch(spec: OpSpec, env: dict[str, Any], raw: dict[str, np.ndarray],
          in_dtypes: dict[str, str], buf: np.ndarray, flags: np.ndarray, out_dtype: dt.DType,
          check: Check, blocks: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Patch buf (the kernel's values: rounded as float32 or as FLOAT16 / BF16 bits, or float64
    before the rounding) at the flagged elements that need it; returns the indices patched.
    blocks: the fused kernel's block flags."""
    from reference.engine import evaluate_formula

    idx = flagged(flags, blocks)
    if idx.size == 0:
        return idx

    def values(at: np.ndarray) -> np.ndarray:  # the float64 values of the elements idx[at]
        if buf.dtype == np.float64:
            return buf[idx[at]]
        sub = {**env, **{nm: a[idx[at]].astype(np.float64) for nm, a in raw.items()}}
        return evaluate_formula(spec, sub, at.size)

    keep = flags[idx] == 1
    if not keep.all():  # in the subnormal range: the arithmetic test decides
        sub = np.flatnonzero(~keep)
        keep[sub] = precise.near_midpoint(values(sub), out_dtype.name)
    idx = idx[keep]
    if idx.size == 0:
        return idx
    ys = np.empty(idx.size)
    decided = ddtier.decide(spec, env, {nm: a[idx].astype(np.float64) for nm, a in raw.items()},
                            out_dtype)  # fmt: skip
    rest = np.arange(idx.size)
    if decided is not None:
        ys[decided[0]] = decided[1][decided[0]]
        rest = np.flatnonzero(~decided[0])
    if rest.size:  # an exact float64 value needs no mpmath
        ys[rest] = values(rest)
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
