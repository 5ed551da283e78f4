"""Tier 1, numpy: a chunk's float64 values and the elements float64 alone cannot decide.

The formula walked in numpy's arithmetic (formula.py), in complex128 for a complex output; a
FLOAT, FLOAT16 or BF16 output in float64 with its error bound (errbound.bounded: the elements
near a midpoint, and those where cancellation grew the bound past a rounding boundary); a
faithful DOUBLE output in long double (errbound.evaluate_extended) or in float64 with an error
bound (errbound.faithful_mask, which flags what the bound does not certify). Flags: 1 where
the settling tiers (settle.py) must look, 0 elsewhere; None when nothing is to be settled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..conformance.spec.expr.walk import ROW
from ..conformance.spec.model import OpSpec
from . import errbound, precise, settle
from .formula import evaluate_formula
from .plan import Plan


@dataclass
class Chunk:
    """Tier 1's answer for one chunk of flat elements.

    values: float64 values before the final rounding (None where a fused kernel kept none);
    flags: uint8, nonzero where the settling tiers must look (1 near a midpoint, 2 in the
    subnormal range, 4 exactly on a midpoint, 8 where the error bound reaches a rounding
    boundary; bool for a double-double DOUBLE kernel), or None;
    listed: the flagged indices where the kernel listed them; target: the output slice a
    kernel wrote the rounded values into; buf: what settling patches (values, or target's
    storage for a fused kernel)."""

    values: np.ndarray | None
    flags: np.ndarray | None = None
    listed: np.ndarray | None = None
    target: np.ndarray | None = None
    buf: np.ndarray | None = None
    faithful: bool = False  # a double-double DOUBLE kernel: flags go to settle.faithful_at


class NumpyEvaluator:
    """`chunk(inputs) -> Chunk` in numpy, for every formula and dtype."""

    name = "numpy"

    def __init__(self, spec: OpSpec, env: dict[str, Any], plan: Plan):
        self.spec, self.env, self.plan = spec, env, plan

    def chunk(self, raw: dict[str, np.ndarray], n: Any, target: Any = None) -> Chunk:
        """n: the number of elements, or (rows, length) for a formula with reductions (the
        inputs then are rows: reference/rows.py)."""
        spec, plan = self.spec, self.plan
        chunk_env = dict(self.env)
        if isinstance(n, tuple):
            chunk_env[ROW] = n
        for name, arr in raw.items():  # complex values stay complex (numpy path only)
            chunk_env[name] = arr.astype(np.complex128 if np.iscomplexobj(arr) else np.float64)
        mask = None
        if plan.faithful and errbound.extended(spec):
            y = errbound.evaluate_extended(spec, chunk_env, n)
        elif plan.faithful:
            y, mask = errbound.faithful_mask(spec, chunk_env, n)
        elif plan.fmt is not None and not plan.refine_all and not plan.complex_out:
            return self._narrow(chunk_env, n)
        else:
            y = evaluate_formula(
                spec, chunk_env, n, np.complex128 if plan.complex_out else np.float64
            )
            if precise.is_float_output(plan.out_dtype.name) and not plan.complex_out:
                name = plan.out_dtype.name
                mask = np.isfinite(y) if plan.refine_all else precise.near_midpoint(y, name)
        flags = None if mask is None else mask.view(np.uint8)
        if flags is not None and not y.flags.writeable:  # a broadcast constant: settling writes
            y = y.copy()
        return Chunk(y, flags, buf=y)

    def _narrow(self, chunk_env: dict[str, Any], n: int) -> Chunk:
        """A FLOAT, FLOAT16 or BF16 output: float64 with its error bound (errbound.bounded).
        Flagged: 1 near a midpoint (as the compiled kernels flag), 8 where the bound reaches a
        rounding boundary (cancellation: float64's value may be far from the exact one, so the
        double-double tier is skipped)."""
        with np.errstate(all="ignore"):
            y, err, _ = errbound.bounded(self.spec, chunk_env, n)
        y = np.array(np.broadcast_to(y, (n,)), dtype=np.float64)  # owned: settling writes
        out = self.plan.out_dtype
        flags = precise.near_midpoint(y, out.name).view(np.uint8)
        # not the undecided comparisons (as before the bound): a deviation's Veltkamp split
        # rounds a scalar on purpose (a threshold to FLOAT16), and its exact value would undo
        # that; branch flips near a condition's threshold stay float64's
        far = errbound.reaches(y, err, out, signed=False)
        flags |= far.view(np.uint8) * np.uint8(settle.FAR)
        return Chunk(y, flags, buf=y)
