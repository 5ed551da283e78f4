"""Reductions nested in rows over more dims (reference/rows.py row_dims and geometry,
walk.Arithmetic.segments): a cross entropy's logsumexp over the classes inside its sum over the
batch. Each tier (numpy with its error bound, mpmath, the compiled path that leaves such a
formula to numpy) against mpmath from the formula written out by hand; and the formulas the
rows cannot hold refused with a message."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, CallError, TensorArg
from aclnn_conformance.reference import engine

from tests.support.paths import HAVE_NUMBA, kernel_mode
from tests.support.rounding import NP, round_exact
from tests.test_reductions import _spec

PATHS = [
    "numpy",
    pytest.param("numba", marks=pytest.mark.skipif(not HAVE_NUMBA, reason="no numba")),
]


def _evaluate(reg, x: np.ndarray, dtype: str, exact: bool = False):
    t = TensorArg.from_array(x.astype(NP[dtype]), dtype)
    o = TensorArg.from_array(np.zeros(x.shape, NP[dtype]), dtype)
    return engine.evaluate(
        Call("aclnnReduceFixture", "atlas-a2", {"self": t, "out": o}), reg, exact=exact
    )


def _lse_sum(x: np.ndarray) -> mp.mpf:
    """sum over every (n, c) of logsumexp(x[n, :]) - x[n, c], exactly (60 digits)."""
    total = mp.mpf(0)
    for row in x:
        vals = [mp.mpf(float(v)) for v in row]
        lse = mp.log(mp.fsum(mp.exp(v) for v in vals))
        total += mp.fsum(lse - v for v in vals)
    return total


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16", "BF16", "DOUBLE"])
def test_logsumexp_nested_in_a_sum_over_all(tmp_path, path, dtype):
    """sum(logsumexp(self, -1) - self, all): every element holds the correctly rounded exact
    value (DOUBLE: within one ulp), rows of one class, of many, hard rows included."""
    reg = _spec(tmp_path, "sum(logsumexp(self, -1) - self, all) + 0 * self")
    rng = np.random.default_rng(3)
    for shape in [(5, 7), (1, 1), (4, 1), (3, 40)]:
        x = rng.normal(size=shape) * 4
        x[0, 0] = 30.0  # a dominant class: its row's terms mostly underflow
        x = x.astype(NP[dtype]).astype(np.float64)
        with kernel_mode(path):
            got = _evaluate(reg, x, dtype)
        assert got.status == 0, got.message
        out = np.asarray(got.outputs["out"]).astype(np.float64).reshape(shape)
        assert (out == out.reshape(-1)[0]).all()  # one value, every element
        with mp.workdps(60):
            exact = _lse_sum(x)
            if dtype == "DOUBLE":
                assert abs(mp.mpf(out[0, 0]) - exact) <= mp.mpf(np.spacing(out[0, 0])), shape
            else:
                assert out[0, 0] == float(round_exact(exact, dtype)), shape


def test_a_middle_dim_nested_in_all_and_the_mpmath_tier(tmp_path):
    """amax over dim 1 of a (3, 4, 5) tensor inside a mean over all: the segment along a dim
    whose stride is not 1; the mpmath tier (exact=True: every element refined) and the numpy
    tier give the exactly rounded mean of amax_j x[i, j, k] - x[i, j, k]."""
    reg = _spec(tmp_path, "mean(amax(self, 1) - self, all) + 0 * self")
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(3, 4, 5)) * 3).astype(np.float32).astype(np.float64)
    top = x.max(axis=1, keepdims=True)
    with mp.workdps(60):
        exact = mp.fsum(mp.mpf(float(t)) - mp.mpf(float(v))
                        for t, v in zip(np.broadcast_to(top, x.shape).ravel(), x.ravel(), strict=True)) / x.size  # fmt: skip
        want = float(round_exact(exact, "FLOAT"))
    for exact_tier in (False, True):
        got = _evaluate(reg, x, "FLOAT", exact=exact_tier)
        assert got.status == 0, got.message
        assert (np.asarray(got.outputs["out"]) == np.float32(want)).all(), exact_tier


@pytest.mark.parametrize(
    ("value", "shape", "message"),
    [
        ("sum(self, 0) + sum(self, 1)", (3, 4), "one set of dims per formula"),
        ("sum(self, (0, 1)) + sum(self, (1, 2)) + 0 * self", (2, 3, 4), "one set of dims"),
        ("sum(sum(self, (1, 2)) - self, all)", (2, 3, 4), "nested in it over one of its dims"),
    ],
)
def test_reductions_the_rows_cannot_hold_are_refused(tmp_path, value, shape, message):
    """Dims neither of which holds the other, or a nested reduction over two dims: a call
    error naming the dims, not a wrong value."""
    reg = _spec(tmp_path, value)
    with pytest.raises(CallError, match=message):
        _evaluate(reg, np.ones(shape), "FLOAT")
