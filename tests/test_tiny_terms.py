"""Rows whose exact value is a float64 value plus a tiny term: a log-softmax over inputs in
[1, 1000] (the vendor's ATK range) is x - m - log(1 + T) with T far below float64's resolution
of x - m, and x - m is often exactly a rounding midpoint of the output. The double-double tier
decides these when its bound is relative to what it adds (ddmath.dadd_err: an exact double
plus a tiny pair keeps a bound of the pair's size), exp(0) and log(1) are exact there too,
and a value whose whole reach rounds to zero is decided (its sign as float64's). A clamped
log at its pole (maximum(log(0), -100), BinaryCrossEntropy's) is exact. Checked against
Fractions and mpmath, and by counting what reaches mpmath."""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from aclnn_conformance.reference import rows

from tests.support.paths import HAVE_NUMBA, kernel_mode
from tests.support.rounding import NP, mismatches, round_exact
from tests.test_reductions import _run, _softmax_mp, _spec

NUMBA = [
    pytest.mark.kernels,
    pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed"),
]


def _pairs(rng: np.random.Generator, n: int) -> list[tuple[tuple[float, float], tuple]]:
    """(a, b) double-double pairs: exact doubles plus tiny pairs, cancelling highs, mixed
    magnitudes, normalized lows (|lo| <= ulp(hi) / 2)."""

    def pair(hi: float, frac: float) -> tuple[float, float]:
        return hi, float(np.spacing(hi)) * frac if hi != 0 else 0.0

    out = []
    for _ in range(n):
        h = float(rng.normal() * 2.0 ** rng.integers(-20, 20))
        k = rng.integers(0, 4)
        if k == 0:  # an exact double plus a tiny pair
            t = float(rng.normal()) * 2.0 ** -float(rng.integers(60, 900))
            out.append(((h, 0.0), pair(t, rng.uniform(-0.5, 0.5))))
        elif k == 1:  # the highs cancel
            out.append((pair(h, rng.uniform(-0.5, 0.5)), pair(-h, rng.uniform(-0.5, 0.5))))
        elif k == 2:  # any two pairs
            g = float(rng.normal() * 2.0 ** rng.integers(-60, 60))
            out.append((pair(h, rng.uniform(-0.5, 0.5)), pair(g, rng.uniform(-0.5, 0.5))))
        else:  # exact doubles whose sum float64 rounds
            out.append(((h, 0.0), (float(rng.normal()), 0.0)))
    return out


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_dadd_err_bounds_the_pair_sum():
    """|a + b - dadd(a, b)| <= dadd_err(a, b) (Fractions), 0 where the pair sum is exact, and
    for an exact double plus a tiny pair within 2^-50 of the tiny pair (not of the sum)."""
    from aclnn_conformance.conformance.compiled.ddmath import dadd, dadd_err

    rng = np.random.default_rng(12)
    tight = 0
    for a, b in _pairs(rng, 4000):
        hi, lo = dadd(a, b)
        bound = dadd_err(a, b)
        exact = sum(map(Fraction, (*a, *b)), Fraction(0))
        true = abs(exact - Fraction(hi) - Fraction(lo))
        assert Fraction(bound) >= true, (a, b, bound, float(true))
        if a[1] == 0.0 and abs(b[0]) < abs(a[0]) * 2.0**-60:
            assert bound <= abs(b[0]) * 2.0**-50, (a, b, bound)
            tight += 1
    assert tight > 500
    assert dadd_err((1.0, 0.0), (2.0, 0.0)) == 0.0
    assert dadd_err((1.0, 2.0**-60), (-1.0, 2.0**-61)) == 0.0


def _log_softmax_log1p(row: list) -> list:
    """x - m - log(S) with log(S) as log1p of the terms but one maximum's (a plain log(1 + T)
    needs T above the working precision). The subtraction from x - m still needs a precision
    reaching T: at 60 digits, -525.25 - 1e-95 is an exact tie that rounds to even."""
    top = max(row)
    rest = list(row)
    rest.remove(top)
    return [v - top - mp.log1p(mp.fsum(mp.exp(u - top) for u in rest)) for v in row]


def _atk_rows(rng: np.random.Generator, n: int, length: int, dtype: str) -> np.ndarray:
    """Rows drawn as the vendor's ATK cases draw them: uniform over [1, 1000]."""
    return rng.uniform(1.0, 1000.0, size=(n, length)).astype(NP[dtype]).astype(np.float64)


@pytest.mark.parametrize("dtype", ["FLOAT16", "FLOAT", "BF16"])
@pytest.mark.parametrize("which", ["log_softmax", "softmax"])
@pytest.mark.parametrize("path", [pytest.param("numba", marks=NUMBA)])
def test_atk_range_rows_need_almost_no_mpmath(tmp_path, monkeypatch, path, which, dtype):
    """Log-softmax and softmax over [1, 1000]: the output is x - m minus a term below float64's
    resolution (often at an exact midpoint), or a value far below the output's smallest
    subnormal. Correctly rounded (mpmath, a zero's sign aside), with at most 1 % of the
    elements sent to mpmath (before the pair tier's relative bounds: about 10 %)."""
    if which == "softmax":
        reg = _spec(tmp_path, "ex / sum(ex, -1)", "ex = exp(self - amax(self, -1))")
        oracle = _softmax_mp
    else:
        reg = _spec(tmp_path, "self - m - log(sum(exp(self - m), -1))", "m = amax(self, -1)")
        oracle = _log_softmax_log1p
    x = _atk_rows(np.random.default_rng(3), 1500, 9, dtype)
    asked: list[int] = []
    real = rows.refine
    monkeypatch.setattr(rows, "refine", lambda *a, **k: (asked.append(a[3].size), real(*a, **k))[1])
    with kernel_mode(path):
        got = _run(reg, x, dtype)
    assert sum(asked) <= x.size // 100, f"{sum(asked)} of {x.size} elements went to mpmath"
    with mp.workprec(1700):  # the terms reach e^-999 = 2^-1441 of an output near 2^10
        want = np.array(
            [[round_exact(v, dtype) for v in oracle([mp.mpf(float(a)) for a in r])] for r in x],
            dtype=NP[dtype],
        )
    bad = mismatches(got, want)
    assert not bad.size, (bad[:5], got.ravel()[bad[:5]], want.ravel()[bad[:5]])


def test_log_softmax_ties_are_common_in_that_range():
    """The premise of the test above, by Fractions: in FLOAT16 over [1, 1000], x - m is an exact
    float64 value that lies on a FLOAT16 midpoint for a good share of the elements."""
    x = _atk_rows(np.random.default_rng(3), 1500, 9, "FLOAT16")
    d = x - x.max(axis=1, keepdims=True)
    ties = 0
    for v in d.ravel()[:3000].tolist():
        w = np.float16(v)
        if float(w) != v:
            other = np.nextafter(w, np.float16(-np.inf) if float(w) > v else np.float16(np.inf))
            ties += Fraction(v) - Fraction(float(w)) == Fraction(float(other)) - Fraction(v)
    assert ties > 100


@pytest.mark.parametrize(
    "path",
    ["numpy", pytest.param("numba", marks=NUMBA)],
)
def test_a_clamped_log_at_its_pole_is_exact(tmp_path, monkeypatch, path):
    """log(0) is -inf exactly (errbound.POLE), so maximum(log(x), -100) there is exactly -100:
    a mean of clamped logs over rows holding exact 0s and 1s (BinaryCrossEntropy's) is decided
    without mpmath, equal to the Fraction-rounded mean of the mpmath logs."""
    reg = _spec(
        tmp_path,
        "mean(maximum(log(self), -100) + maximum(log(1 - self), -100), -1) + 0 * self",
    )
    rng = np.random.default_rng(4)
    x = rng.uniform(0.0, 1.0, size=(300, 64)).astype(np.float16).astype(np.float64)
    x[:, 0], x[::2, 1] = 0.0, 1.0  # every row meets a pole, half of them both
    asked: list[int] = []
    real = rows.refine
    monkeypatch.setattr(rows, "refine", lambda *a, **k: (asked.append(a[3].size), real(*a, **k))[1])
    with kernel_mode(path):
        got = _run(reg, x, "FLOAT")
    assert sum(asked) <= 3, f"{sum(asked)} elements went to mpmath"

    def clamped(v: float) -> mp.mpf:
        return mp.mpf(-100) if v == 0 else max(mp.log(mp.mpf(v)), mp.mpf(-100))

    with mp.workdps(50):
        for i in range(0, 300, 7):
            total = mp.fsum(clamped(v) + clamped(1 - v) for v in x[i].tolist()) / 64
            assert got[i, 0] == np.float32(round_exact(total, "FLOAT")), i


def test_refine_checks_the_time_limit_inside_a_long_row(tmp_path):
    """rows.refine calls the case's time check while mpmath walks one long row (not only
    between rows): a 20,000-element row's single flagged element is stopped within it."""
    from tests.test_exact_rows import fixture_env

    reg = _spec(tmp_path, "exp(self) / sum(exp(self), -1)")
    spec = reg.get("reduce_fixture")
    x = np.random.default_rng(8).normal(size=(1, 20000)).astype(np.float32)
    env = fixture_env(spec, x)
    calls: list[int] = []

    class Stop(Exception):
        pass

    def check() -> None:
        calls.append(1)
        raise Stop

    with pytest.raises(Stop):
        rows.refine(
            spec, env, np.zeros((1, 20000)), np.array([5]), {"self": x}, {"self": "FLOAT"},
            "FLOAT", check,
        )  # fmt: skip
    assert calls == [1]


@pytest.mark.parametrize("path", ["numpy", pytest.param("numba", marks=NUMBA)])
def test_a_tie_broken_by_a_term_below_256_bits(tmp_path, path):
    """erfc(-17) * 1.01171875 in BF16: erfc(-17) is 2 - 2^-419 (mpmath at 600 bits), so the
    value lies just below 2.0234375, a BF16 midpoint (spacing 2^-6 on [2, 4)) that tie-to-even
    would round up to 2.03125. mpmath at 128 and 256 bits sees the exact tie at both; the
    refinement goes on past a tie (precise.next_precision, to TIE_PRECISION) and rounds down,
    to 2.015625, as the exact value does. By hand: erfc(x) < 2 for every finite x."""
    reg = _spec(tmp_path, "erfc(-self) * 1.01171875")
    with mp.workprec(600):
        gap = 2 - mp.erfc(-17)
    assert 2.0**-430 < gap < 2.0**-400
    with kernel_mode(path):
        got = _run(reg, np.full((2, 3), 17.0), "BF16")
    assert (got.astype(np.float64) == 2.015625).all(), got


def test_next_precision_goes_past_a_tie_and_no_further():
    """The refinement's schedule (precise.next_precision): doubling while two evaluations
    disagree, up to MAX_PRECISION; two that agree settle it unless they are an exact tie of
    the output, which goes on to TIE_PRECISION."""
    from aclnn_conformance.reference import precise

    tie, plain = 2.0234375, 2.02  # a BF16 midpoint; not one
    assert precise.next_precision(128, tie, None, "BF16") == 256
    assert precise.next_precision(256, tie, tie, "BF16") == min(512, precise.TIE_PRECISION)
    assert precise.next_precision(precise.TIE_PRECISION, tie, tie, "BF16") is None
    assert precise.next_precision(256, plain, plain, "BF16") is None
    assert precise.next_precision(256, plain, 2.0, "BF16") == 512
    assert precise.next_precision(precise.MAX_PRECISION, plain, 2.0, "BF16") is None
    assert precise.next_precision(256, tie, tie, "DOUBLE") is None  # faithful: no ties


@pytest.mark.parametrize("path", ["numpy", pytest.param("numba", marks=NUMBA)])
def test_a_quotient_by_an_overflowed_exp(tmp_path, monkeypatch, path):
    """x / (1 + exp(-2x)) (GeluMul's tanh form) at x in [-3000, -400]: exp overflows float64,
    and its exact value lies beyond the range (errbound.OVERFLOW), so the quotient is exactly
    tiny, |x| / 2^1023 at most: -0 in FLOAT, decided without mpmath (the vendor's GeluMul
    cases hold 10^5 such elements). 1e300 / (1 + exp(710)) is 4.5e-9 (mpmath), a FLOAT value
    the same bound keeps from being taken as 0."""
    reg = _spec(tmp_path, "self / (1 + exp(-2 * self))")
    x = -np.linspace(400.0, 3000.0, 4096).reshape(64, 64)
    asked: list[int] = []
    real = rows.refine
    monkeypatch.setattr(rows, "refine", lambda *a, **k: (asked.append(a[3].size), real(*a, **k))[1])
    with kernel_mode(path):
        got = _run(reg, x, "FLOAT")
        assert (got == 0).all() and not asked
        big = _run(
            _spec(tmp_path, "1e300 / (1 + exp(self))", name="big"), np.full((2, 2), 710.0), "FLOAT"
        )
    with mp.workdps(40):
        want = np.float32(round_exact(mp.mpf(10) ** 300 / (1 + mp.exp(710)), "FLOAT"))
    assert (big == want).all() and want > 4e-9


@pytest.mark.parametrize("path", [pytest.param("numba", marks=NUMBA)])
def test_a_value_in_the_outputs_lowest_cell_is_decided_by_the_pair(tmp_path, monkeypatch, path):
    """log_softmax of [g, 0] rows in FLOAT16 at the maximum: -log(1 + e^-g), for g near 17 a
    value in [2^-25, 2^-24), the half of FLOAT16's smallest subnormal cell that rounds to
    -2^-24 (or, at g past about 17.3, to -0). rowmath.decide_dd decides it against the
    midpoint 2^-25 (the bottom of its binade) without mpmath; mpmath says what it rounds to."""
    reg = _spec(tmp_path, "self - m - log(sum(exp(self - m), -1))", "m = amax(self, -1)")
    g = np.arange(16.0, 18.0, 0.125)
    x = np.stack([g, np.zeros_like(g)], axis=1)
    asked: list[int] = []
    real = rows.refine
    monkeypatch.setattr(rows, "refine", lambda *a, **k: (asked.append(a[3].size), real(*a, **k))[1])
    with kernel_mode(path):
        got = _run(reg, x, "FLOAT16")
    assert not asked, f"{sum(asked)} elements went to mpmath"
    with mp.workdps(40):
        want = [np.float16(round_exact(-mp.log1p(mp.exp(-mp.mpf(v))), "FLOAT16")) for v in g]
    assert got[:, 0].tolist() == [float(w) for w in want]
    assert {float(w) for w in want} >= {-(2.0**-24), 0.0}  # both sides of the midpoint
