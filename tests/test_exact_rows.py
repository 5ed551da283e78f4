"""Rows whose every operation is exact are decided by tier 1, ties included: a sum of squares of
FLOAT16 / BF16 / FLOAT values often lands exactly on a rounding midpoint of the output, and the
error bound of 0 (errbound.exact_sum in numpy; Sum2's TwoSum errors all 0 and the division's
residual 0 in the compiled kernels) says the float64 value is the exact one. Checked against
exact fractions, and by counting what reaches mpmath (nothing, for such rows)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from aclnn_conformance.reference import errbound, rows

from tests.support.paths import HAVE_NUMBA, kernel_mode
from tests.support.rounding import NP, round_exact
from tests.test_reductions import _run, _spec


def _orders_exact(row: np.ndarray) -> bool:
    """Whether float64 sums `row` exactly forward, backward and pairwise (Fractions decide)."""
    exact = sum((Fraction(float(v)) for v in row), Fraction(0))
    fwd = bwd = 0.0
    for v in row.tolist():
        fwd += v
    for v in row.tolist()[::-1]:
        bwd += v
    return (
        Fraction(fwd) == exact and Fraction(bwd) == exact and Fraction(float(np.sum(row))) == exact
    )


@pytest.mark.parametrize("dtype", ["FLOAT16", "BF16", "FLOAT"])
def test_exact_sum_holds_in_every_order(dtype):
    """errbound.exact_sum's rows sum exactly in any order (Fractions); squares and differences
    of narrow values mostly qualify, and rows spanning too many bits do not."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 6)).astype(NP[dtype]).astype(np.float64)
    y = rng.normal(size=(400, 6)).astype(NP[dtype]).astype(np.float64)
    terms = np.concatenate([(x - y) ** 2, x * y, x * 2.0 ** rng.integers(-40, 40, x.shape)])
    mask = errbound.exact_sum(terms)[:, 0]
    for row, ok in zip(terms, mask, strict=True):
        if ok:
            assert _orders_exact(row), row
    if dtype != "FLOAT":  # 11- or 8-bit values: their squares' sums fit float64
        assert mask[:800].mean() > 0.9
    assert not mask[800:].all()  # 80 binades apart: no common grid under 2^53


def test_exact_sum_edges():
    """By hand: the grid is the lowest set bit of every term, the bound 2^53 of it."""
    rows_ = [
        ([2.0**52, 1.0, 1.0], True),  # grid 1, total 2^52 + 2
        ([2.0**53, 1.0, 0.0], False),  # 2^53 + 1 needs 54 bits
        ([1.0, 2.0**-53, 0.0], False),
        ([0.0, 0.0, 0.0], True),
        ([-3.0, 3.0, 0.5], True),
        ([5e-324, 5e-324, -1e-323], True),  # subnormals: the grid is 2^-1074
        ([np.inf, 1.0, 0.0], False),
        ([np.nan, 1.0, 0.0], False),
    ]
    got = errbound.exact_sum(np.array([r for r, _ in rows_]))[:, 0]
    assert got.tolist() == [want for _, want in rows_]


def _tie_rows(rng: np.random.Generator, n: int, length: int) -> np.ndarray:
    """Rows of 12-bit integers scaled by a power of two: sums of squares of 25 to 27 bits, a
    FLOAT midpoint on about one row in four (exact in float64, rounding to FLOAT to even); one
    element: odd 13-bit integers, whose squares (25 bits, odd) all are midpoints."""
    if length == 1:
        ints = 2 * rng.integers(2049, 2896, size=(n, 1)).astype(np.float64) + 1
        return ints * 2.0 ** rng.integers(-20, 4, size=(n, 1))
    ints = rng.integers(2900, 4096, size=(n, length)).astype(np.float64)
    return ints * 2.0 ** rng.integers(-20, 4, size=(n, 1))


@pytest.mark.parametrize(
    "path",
    [
        "numpy",
        pytest.param(
            "numba",
            marks=[
                pytest.mark.kernels,
                pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed"),
            ],
        ),
    ],  # fmt: skip
)
@pytest.mark.parametrize(
    ("value", "length"),
    [
        ("sum(self * self, -1) + 0 * self", 4),
        ("mean(self * self, -1) + 0 * self", 4),
        ("mean(self * self, -1) + 0 * self", 1),
        ("sum(self * self, -1) + 0 * self", 7),
    ],  # fmt: skip
)
def test_exact_ties_need_no_mpmath(tmp_path, monkeypatch, path, value, length):
    """A sum of squares (a mean over one element or four) that is exactly a FLOAT midpoint:
    decided without mpmath (rows.refine never asked), rounded to even as Fractions say."""
    reg = _spec(tmp_path, value)
    x = _tie_rows(np.random.default_rng(length), 256, length)
    asked: list[int] = []
    real = rows.refine
    monkeypatch.setattr(rows, "refine", lambda *a, **k: (asked.append(a[3].size), real(*a, **k))[1])
    with kernel_mode(path):
        got = _run(reg, x, "FLOAT")
    assert not asked, f"{sum(asked)} elements went to mpmath"
    div = length if value.startswith("mean") else 1
    ties = 0
    for i, row in enumerate(x):
        exact = sum((Fraction(float(v)) ** 2 for v in row), Fraction(0)) / div
        want = np.float32(round_exact(exact, "FLOAT"))
        ties += _is_tie(exact)
        assert (got[i] == want).all(), (i, exact, got[i, 0], want)
    assert ties > 10  # the rows hold ties, the point of the test


def _is_tie(v: Fraction) -> bool:
    """Whether v lies exactly half-way between two neighbouring FLOATs."""
    w = np.float32(float(v))
    if Fraction(float(w)) == v:
        return False
    side = np.float32(np.inf) if Fraction(float(w)) < v else np.float32(-np.inf)
    other = np.nextafter(w, side)
    return v - Fraction(float(w)) == Fraction(float(other)) - v


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_compiled_division_bound_is_its_residual():
    """rowmath.div_err with u = 0: 0 for an exact float64 quotient (6/3, a mean over 4), and
    for an inexact one a bound at least the true error (Fractions) and within 2^-52 |q|."""
    from aclnn_conformance.conformance.compiled.rowmath import div_err
    from numba import njit

    @njit
    def run(a, b, out):
        for i in range(a.size):
            out[i] = div_err(a[i], 0.0, b[i], 0.0, a[i] / b[i], 0.0)

    rng = np.random.default_rng(9)
    a = np.concatenate([[6.0, 1.0, 3.0 * 2.0**-900, 7.5], rng.normal(size=500)])
    b = np.concatenate([[3.0, 4.0, 2.0**-60, 2.5], rng.normal(size=500) * 7])
    out = np.empty(a.size)
    run(a, b, out)
    q = a / b
    for ai, bi, qi, e in zip(a, b, q, out, strict=True):
        true = abs(Fraction(float(ai)) / Fraction(float(bi)) - Fraction(float(qi)))
        assert Fraction(float(e)) >= true
        assert (e == 0) == (true == 0)
        assert e <= abs(qi) * 2.0**-52
    assert (out[:4] == 0).all()


def test_one_term_logsumexp_is_exact(tmp_path, monkeypatch):
    """logsumexp over one element is that element (exp(0) = 1, log(1) = 0 exactly): x -
    logsumexp(x, -1) over rows of one is exactly 0, decided without mpmath (the numpy tier;
    a cross entropy of one class)."""
    reg = _spec(tmp_path, "self - logsumexp(self, -1)")
    x = np.random.default_rng(2).normal(size=(500, 1)) * 50
    asked: list[int] = []
    real = rows.refine
    monkeypatch.setattr(rows, "refine", lambda *a, **k: (asked.append(a[3].size), real(*a, **k))[1])
    with kernel_mode("numpy"):
        got = _run(reg, x, "FLOAT")
    assert not asked and (got == 0).all()


def test_an_exact_zero_keeps_its_sign_decided():
    """errbound.reaches: -0.0 with a bound of 0 is decided (y +- 0 would turn -0.0 into +0.0);
    with any bound its sign is open."""
    from aclnn_conformance.conformance.acl import dtypes as dt

    y = np.array([-0.0, -0.0, 0.0])
    got = errbound.reaches(y, np.array([0.0, 5e-324, 0.0]), dt.get("FLOAT"))
    assert got.tolist() == [False, True, False]


def test_refine_takes_an_exact_row_sum_without_walking_the_row(tmp_path, monkeypatch):
    """A flagged element of a 4096-long row whose sum float64 computes exactly: rows.refine
    seeds mpmath with that sum (rows.exact_sums) and makes only the element environments it
    reads, and the element is the exact x0 / S rounded once."""
    from aclnn_conformance.conformance.acl import dtypes as dt

    reg = _spec(tmp_path, "self / sum(self, -1)")
    spec = reg.get("reduce_fixture")
    x = np.random.default_rng(6).integers(1, 1 << 12, size=(1, 4096)).astype(np.float32)
    env = fixture_env(spec, x)
    made: list[int] = []

    class Counted(rows._Element):
        def __init__(self, *a):
            made.append(1)
            super().__init__(*a)

    monkeypatch.setattr(rows, "_Element", Counted)
    y = np.zeros((1, 4096))
    rows.refine(spec, env, y, np.array([0]), {"self": x}, {"self": "FLOAT"}, "FLOAT")
    assert len(made) < 8  # the element asked for, not the row
    exact = Fraction(float(x[0, 0])) / sum((Fraction(float(v)) for v in x[0]), Fraction(0))
    got = dt.round_to(y[:, :1], dt.get("FLOAT"))[0, 0]
    assert got == np.float32(round_exact(exact, "FLOAT"))


def fixture_env(spec, x: np.ndarray) -> dict:
    """The attribute environment of a FLOAT call of the reduce fixture on x (rows.refine's)."""
    from aclnn_conformance.conformance.acl.call import Call, TensorArg
    from aclnn_conformance.conformance.spec.interpret import attribute_env

    t = {"self": TensorArg.from_array(x, "FLOAT"), "out": TensorArg.from_array(x, "FLOAT")}
    return attribute_env(spec, Call("aclnnReduceFixture", "atlas-a2", t))
