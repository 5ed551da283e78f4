"""The spec's formula walked with numpy over a chunk of elements: the float64 evaluation that
the engine, the error-bound tier and the settling of flagged elements share."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..conformance.spec.expr.numpy_arith import numpy_arithmetic
from ..conformance.spec.expr.walk import Formula
from ..conformance.spec.model import OpSpec


def evaluate_formula(
    spec: OpSpec, env: dict[str, Any], n: int, dtype: Any = np.float64
) -> np.ndarray:
    """The float64 (long double, complex) value of the formula over `n` elements bound in `env`
    (mutated with lets): the walk of conformance/spec/expr/walk.py in numpy's arithmetic."""
    return Formula.of(spec.formula).evaluate(env, numpy_arithmetic(dtype), n)
