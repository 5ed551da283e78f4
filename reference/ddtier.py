"""A double-double tier between float64 and mpmath for elements near a rounding midpoint.

float64 leaves undecided the elements within precise.GUARD of a midpoint of the output format
(FLOAT, FLOAT16, BF16); mpmath settles each in about a millisecond. Where the formula has a
double-double kernel (ddgen.py), its pair for those elements is within about 2^-64 of the exact
value relative (ddmath.py), and the element is decided when rounding hi - m and hi + m to the
output gives the same value, for a margin m of 2^-50 |hi|: a 2^14-fold amplification of the
pair's error, where the float64 test already trusts 2^9 float64 ulps. Rounding is monotonic,
so the exact value rounds the same way. What stays undecided (a true tie, a poisoned pair) goes
to mpmath as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..conformance.acl import dtypes as dt
from ..conformance.compiled.ranges import TINY
from ..conformance.spec.model import OpSpec
from . import kernel

MARGIN = 2.0**-50  # relative to |hi|


def decide(
    spec: OpSpec, env: dict[str, Any], inputs: dict[str, np.ndarray], out_dtype: dt.DType
) -> tuple[np.ndarray, np.ndarray] | None:
    """(decided, y): which elements the pairs decide, and for them a float64 y whose rounding
    to out_dtype is the correct one (the pair rounded to odd). None without a kernel."""
    k = kernel.get_dd(spec, env)
    m = next(iter(inputs.values())).size if inputs else 0
    if k is None or k.pairs_fn is None or m == 0:
        return None
    hi, lo = np.empty(m), np.empty(m)
    k.run_pairs(inputs, env, hi, lo)
    with np.errstate(all="ignore"):
        ok = np.isfinite(hi) & np.isfinite(lo) & (np.abs(hi) > TINY)
        margin = np.abs(hi) * MARGIN
        below = dt.round_to(np.where(ok, hi - margin, 0.0), out_dtype)
        above = dt.round_to(np.where(ok, hi + margin, 0.0), out_dtype)
        decided = ok & (below == above)
        # round to odd: truncate hi + lo toward zero, and set the last bit where inexact
        toward_zero = (lo != 0) & (np.signbit(lo) != np.signbit(hi))
        trunc = np.where(toward_zero, np.nextafter(hi, 0.0), hi)
        y = np.where(lo != 0, (trunc.view(np.int64) | 1).view(np.float64), hi)
    return decided, y
