"""Tiers 2-4: settling the elements tier 1 flagged, the ones float64 alone cannot decide.

Both evaluators (evaluate_compiled.py, evaluate_numpy.py) flag a chunk's elements: near a
rounding midpoint of a FLOAT, FLOAT16 or BF16 output (1), in its subnormal range (2, where the
arithmetic test of precise.near_midpoint decides), exactly on a midpoint (4, a likely tie of a
rational formula, which the pair never decides: asked for exactness first); whose error bound
reaches a rounding boundary (8: cancellation amplified float64's error, and would amplify the
pair's past its margin: exactness, then mpmath); every finite one where all go to mpmath; a
DOUBLE value the error bound does not certify. `patch` settles them in tiers, cheapest first:

2. the double-double pair (ddtier.py; compiled, inputs as float64 holds them);
3. exactness: an exact float64 value is the right one (exactmath.py compiled, else
   errbound.exact_mask; narrow outputs);
4. exact rationals, then mpmath (precise.refine).

A DOUBLE double-double kernel (ddgen.py) flags the elements it cannot certify; they are
evaluated the numpy way (faithful_at).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..conformance.acl import dtypes as dt
from ..conformance.spec.model import OpSpec
from . import codegen, ddtier, errbound, kernel, precise
from .formula import evaluate_formula

Check = Callable[[], None] | None
FAR = 1 << codegen.FAR  # the flag of an element whose bound reaches a rounding boundary


def flagged(flags: np.ndarray) -> np.ndarray:
    """np.flatnonzero of a uint8 array where nonzero is rare, eight times faster: the words of
    eight flags that are nonzero first, then the flags inside them."""
    whole = flags.size - flags.size % 8
    words = np.flatnonzero(flags[:whole].view(np.uint64))
    idx = (words[:, None] * 8 + np.arange(8)).ravel()
    idx = np.concatenate([idx, np.arange(whole, flags.size)])
    return idx[flags[idx] != 0]


def patch(
    spec: OpSpec,
    env: dict[str, Any],
    raw: dict[str, np.ndarray],
    in_dtypes: dict[str, str],
    buf: np.ndarray,
    flags: np.ndarray,
    out_dtype: dt.DType,
    check: Check,
    idx: np.ndarray,
    compiled: bool = True,
) -> np.ndarray:
    """Patch buf (tier 1's values: rounded as float32 or as FLOAT16 / BF16 bits, or float64
    before the rounding) at the flagged elements idx that need it, tier after tier (see the
    module docstring); returns the indices patched. compiled: the compiled tiers (the pair,
    the exactness kernel) may settle, the inputs being what float64 holds; else exactness is
    errbound's and a narrow output's only (a DOUBLE value goes to mpmath as flagged)."""
    if idx.size == 0:
        return idx

    xs = {nm: a[idx].astype(np.float64) for nm, a in raw.items()}  # gathered once

    def values(at: np.ndarray) -> np.ndarray:  # the float64 values of the elements idx[at]
        if buf.dtype == np.float64:
            return buf[idx[at]]
        return evaluate_formula(spec, {**env, **{nm: v[at] for nm, v in xs.items()}}, at.size)

    f = flags[idx]
    keep = (f & (1 | FAR)) != 0
    if not keep.all():  # in the subnormal range: the arithmetic test decides
        sub = np.flatnonzero(~keep)
        keep[sub] = precise.near_midpoint(values(sub), out_dtype.name)
        idx, f = idx[keep], f[keep]
        xs = {nm: v[keep] for nm, v in xs.items()}
    if idx.size == 0:
        return idx
    ys = np.empty(idx.size)
    todo = np.ones(idx.size, bool)
    narrow = out_dtype.name in dt.NARROW_FLOATS
    tie = np.flatnonzero(f & 4)  # float64 exactly on a midpoint: first, is it exact?
    if tie.size:
        tie = tie[_exact(spec, env, xs, tie, compiled)]
        ys[tie] = values(tie)
        todo[tie] = False
    rest = np.flatnonzero(todo)
    pair = rest[(f[rest] & FAR) == 0]  # an amplified error: past the pair's margin too
    decided = None
    if compiled and pair.size:
        decided = ddtier.decide(spec, env, {nm: v[pair] for nm, v in xs.items()}, out_dtype)
    if decided is not None:
        ys[pair[decided[0]]] = decided[1][decided[0]]
        rest = np.setdiff1d(rest, pair[decided[0]], assume_unique=True)
    if rest.size:  # an exact float64 value needs no mpmath (the ties were asked already)
        ys[rest] = values(rest)
    if rest.size and narrow:
        again = rest[(f[rest] & 4) == 0]
        exact = again[_exact(spec, env, xs, again, compiled)]
        rest = np.setdiff1d(rest, exact, assume_unique=True)
    if rest.size:
        at = {nm: precise.exact_values(a[idx[rest]], in_dtypes[nm]) for nm, a in raw.items()}
        ys[rest] = precise.refine(
            spec, env, ys[rest], np.arange(rest.size), at, out_dtype.name, check
        )
    if buf.dtype == np.float64:
        buf[idx] = ys
    else:  # float32, or the 16-bit format's bits
        buf[idx] = dt.round_to(ys, out_dtype).view(buf.dtype)
    return idx


def _exact(
    spec: OpSpec, env: dict[str, Any], xs: dict[str, np.ndarray], at: np.ndarray, compiled: bool
) -> np.ndarray:
    """Mask over `at`: the elements whose float64 value is exact (the compiled exactness kernel,
    else errbound.exact_mask)."""
    if at.size == 0:
        return np.zeros(0, bool)
    sub = {nm: v[at] for nm, v in xs.items()}
    k = kernel.get_exact(spec, env) if compiled else None
    if k is not None:
        out, flags = np.empty(at.size), np.empty(at.size, np.bool_)
        try:
            k.run_dd(sub, env, out, flags)
        except Exception as exc:  # numba cannot type these arguments: numpy from now on
            k.fail(exc)
        else:
            return ~flags
    return errbound.exact_mask(spec, {**env, **sub}, at.size)


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
