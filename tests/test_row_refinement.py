"""Three ways the row tiers once returned float64's value where it was not the rounded exact one,
each against mpmath by hand (log_softmax at a row's maximum: x - lse = -log1p(sum of the other
terms' e^(x_j - x)), no cancellation in that form):

- a row holding a -inf: its other elements are refined too (exp(-inf) = 0 in mpmath);
- a value mpmath finds 0 at 128 and 256 bits (a term below the precision) is evaluated again
  at TIE_PRECISION before it is taken;
- a reduction over dim 0 walked by numpy (its values in Fortran order) then settled by the
  double-double rows: their values reach the output.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.reference import engine

from tests.support.paths import kernel_mode
from tests.support.rounding import round_exact


def _log_softmax(x: np.ndarray, dtype: str, dim: int) -> np.ndarray:
    call = Call(
        "aclnnLogSoftmax",
        "atlas-a2",
        {"self": TensorArg.from_array(x, dtype), "dim": dim,
         "out": TensorArg.from_array(np.zeros(x.shape), dtype)},
    )  # fmt: skip
    o = engine.evaluate(call)
    assert o.status == 0, o.message
    return np.asarray(o.outputs["out"]).reshape(x.shape)


def _at_max(row) -> mpmath.mpf:
    """log_softmax at the row's maximum, exactly (600 bits)."""
    with mpmath.workprec(600):
        m = mpmath.mpf(max(float(v) for v in row))
        rest = [mpmath.exp(mpmath.mpf(float(v)) - m) for v in row if v != -np.inf]
        return -mpmath.log1p(mpmath.fsum(rest) - 1)


def test_a_row_with_minus_infinity_is_refined():
    x = np.array([-np.inf, -58.1969108581543, 5.266349792480469, 100.0, 64.87897491455078],
                 np.float32)  # fmt: skip
    got = _log_softmax(x, "FLOAT", 0)
    assert got[0] == -np.inf
    assert got[3] == round_exact(_at_max(x), "FLOAT")  # -5.586e-16 (float64 gave -6.66e-16)


def test_a_zero_below_the_precision_is_evaluated_again():
    x = np.array([47.017922851510825, -139.42064676921078])
    got = _log_softmax(x, "DOUBLE", 0)
    want = _at_max(x)  # -1.0733911241302110e-81: float64 and 128-bit mpmath both give 0
    assert got[0] != 0 and abs(got[0] - float(want)) <= abs(np.spacing(float(want)))


@pytest.mark.parametrize("mode", ["auto", "numba"])
def test_the_pairs_settle_a_reduction_over_dim_0(mode):
    if mode == "numba":
        pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    x = np.stack([rng.uniform(40, 70, 3000), rng.uniform(-30, 1, 3000)]).astype(np.float32)
    with kernel_mode(mode):
        got = _log_softmax(x, "FLOAT", 0)
    want = np.array([round_exact(_at_max(x[:, j]), "FLOAT") for j in range(x.shape[1])])
    assert np.array_equal(got[0], want)
