"""conformance/compiled/ddmath.py's double-double operations against mpmath at 400 bits.

Each operation's (hi, lo) must be within its documented bound of the exact result of its exact
operands (+ - * / sqrt: 2^-100 relative; exp: 2^-64; expm1: 2^-58; erfc: 2^-62; tanh: 2^-57; log1p: 2^-56), normalized (|lo| <= ulp(hi) / 2), poisoned
(lo NaN) outside the range where the bound holds, and keep IEEE's sign of zero.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from tests.support.paths import HAVE_NUMBA

pytestmark = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed (pip install .[fast])"
)

N = 2000


def _kernels():
    from aclnn_conformance.conformance.compiled import ddmath as d
    from numba import njit

    def binary(op):
        @njit(error_model="numpy")  # as the kernels: IEEE results, no exceptions
        def run(ah, al, bh, bl, oh, ol):
            for i in range(ah.size):
                oh[i], ol[i] = op((ah[i], al[i]), (bh[i], bl[i]))

        return run

    def unary(op):
        @njit(error_model="numpy")  # as the kernels: IEEE results, no exceptions
        def run(ah, al, oh, ol):
            for i in range(ah.size):
                oh[i], ol[i] = op((ah[i], al[i]))

        return run

    return {"add": binary(d.dadd), "sub": binary(d.dsub), "mul": binary(d.dmul),
            "div": binary(d.ddiv), "sqrt": unary(d.dsqrt), "exp": unary(d.dexp),
            "expm1": unary(d.dexpm1), "erfc": unary(d.derfc), "tanh": unary(d.dtanh),
            "log1p": unary(d.dlog1p)}  # fmt: skip


KERNELS = _kernels() if HAVE_NUMBA else {}
EXACT = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
         "div": lambda a, b: a / b, "sqrt": mpmath.sqrt, "exp": mpmath.exp,
         "expm1": mpmath.expm1, "erfc": mpmath.erfc, "tanh": mpmath.tanh,
         "log1p": mpmath.log1p}  # fmt: skip


def _pairs(rng, n: int, lo_exp: int, hi_exp: int, signed: bool = True):
    """Random normalized pairs hi + lo with hi over 2^lo_exp .. 2^hi_exp."""
    hi = np.ldexp(rng.uniform(1, 2, n), rng.integers(lo_exp, hi_exp, n))
    if signed:
        hi *= rng.choice([-1.0, 1.0], n)
    lo = hi * rng.uniform(-1, 1, n) * 2.0**-54
    hi, lo = hi + lo, lo - ((hi + lo) - hi)  # fast two-sum: normalized
    return hi, lo


def _check(name: str, args: list[tuple[np.ndarray, np.ndarray]], bound: float) -> int:
    n = args[0][0].size
    oh, ol = np.empty(n), np.empty(n)
    KERNELS[name](*[x for pair in args for x in pair], oh, ol)
    checked = 0
    with mpmath.workprec(400):
        for i in range(n):
            ops = [mpmath.mpf(float(h[i])) + mpmath.mpf(float(lo[i])) for h, lo in args]
            want = EXACT[name](*ops)
            got = mpmath.mpf(float(oh[i])) + mpmath.mpf(float(ol[i]))
            assert math.isfinite(ol[i]), f"{name}: poisoned in range at {[float(o) for o in ops]}"
            assert abs(ol[i]) <= abs(float(np.spacing(oh[i]))) / 2, f"{name}: not normalized"
            assert abs(got - want) <= bound * abs(want), (
                f"{name}{tuple(float(o) for o in ops)}: error {float(abs(got - want) / abs(want))}"
            )
            checked += 1
    return checked


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_arithmetic_is_within_2_to_the_minus_100(name):
    rng = np.random.default_rng(1)
    a, b = _pairs(rng, N, -300, 300), _pairs(rng, N, -300, 300)
    if name in ("add", "sub"):  # and cancellation: operands within a few ulps of each other
        b[0][: N // 4] = -a[0][: N // 4] if name == "add" else a[0][: N // 4]
    assert _check(name, [a, b], 2.0**-100) == N


def test_sqrt_is_within_2_to_the_minus_100():
    rng = np.random.default_rng(2)
    assert _check("sqrt", [_pairs(rng, N, -900, 900, signed=False)], 2.0**-100) == N


def test_exp_is_within_2_to_the_minus_64_over_its_normal_range():
    rng = np.random.default_rng(3)
    hi = np.concatenate([rng.uniform(-700, 700, N // 2), rng.normal(0, 1e-3, N // 4),
                         np.ldexp(1.0, rng.integers(-60, 0, N // 4))])  # fmt: skip
    lo = hi * rng.uniform(-1, 1, hi.size) * 2.0**-54
    hi, lo = hi + lo, lo - ((hi + lo) - hi)
    assert _check("exp", [(hi, lo)], 2.0**-64) == hi.size


def test_expm1_is_within_2_to_the_minus_58_near_zero_and_beyond():
    rng = np.random.default_rng(4)
    hi = np.concatenate([rng.uniform(-700, 700, N // 4), rng.uniform(-0.1, 0.1, N // 4),
                         np.ldexp(rng.choice([-1.0, 1.0], N // 4), rng.integers(-1000, -3, N // 4)),
                         0.03125 * (1 + rng.uniform(-1e-3, 1e-3, N // 4))])  # fmt: skip
    lo = hi * rng.uniform(-1, 1, hi.size) * 2.0**-54
    hi, lo = hi + lo, lo - ((hi + lo) - hi)
    assert _check("expm1", [(hi, lo)], 2.0**-58) == hi.size


@pytest.mark.kernels
def test_erfc_is_within_2_to_the_minus_62_from_2_down_to_2_to_the_minus_960():
    rng = np.random.default_rng(5)
    hi = np.concatenate([rng.uniform(-6, 25.8, N // 2), rng.standard_normal(N // 4),
                         np.ldexp(rng.choice([-1.0, 1.0], N // 4), rng.integers(-1000, 0, N // 4)),
                         [0.0, 4.0, -4.0, 25.8]])  # fmt: skip
    lo = hi * rng.uniform(-1, 1, hi.size) * 2.0**-54
    hi, lo = hi + lo, lo - ((hi + lo) - hi)
    assert _check("erfc", [(hi, lo)], 2.0**-62) == hi.size


@pytest.mark.kernels
def test_tanh_and_log1p_are_within_2_to_the_minus_57_and_56():
    rng = np.random.default_rng(6)
    tiny = np.ldexp(rng.choice([-1.0, 1.0], N // 4), rng.integers(-900, -3, N // 4))
    x = np.concatenate([rng.uniform(-45, 45, N // 2), rng.uniform(-0.1, 0.1, N // 4), tiny])
    lo = x * rng.uniform(-1, 1, x.size) * 2.0**-54
    hi, lo = x + lo, lo - ((x + lo) - x)
    assert _check("tanh", [(hi, lo)], 2.0**-57) == hi.size
    x = np.concatenate([-1 + 10.0 ** rng.uniform(-15, 0, N // 4), 10.0 ** rng.uniform(-3, 290, N // 4),
                        rng.uniform(-0.5, 1, N // 4), tiny])  # fmt: skip
    lo = x * rng.uniform(-1, 1, x.size) * 2.0**-54
    hi, lo = x + lo, lo - ((x + lo) - x)
    assert _check("log1p", [(hi, lo)], 2.0**-56) == hi.size


def test_erfc_coefficients_are_what_the_fit_makes():
    """ddmath's tables are tests/support/erfc_fit.py's output, not a hand-edited copy."""
    from aclnn_conformance.conformance.compiled import ddmath

    from tests.support import erfc_fit

    assert erfc_fit.pairs() == (ddmath._ERFC_HEAD, ddmath._ERFC_TAIL)


def _run(name: str, *pairs: tuple[float, float]) -> tuple[float, float]:
    oh, ol = np.empty(1), np.empty(1)
    KERNELS[name](*[np.array([x]) for p in pairs for x in p], oh, ol)
    return float(oh[0]), float(ol[0])


@pytest.mark.parametrize("name, pairs", [
    ("mul", ((2.0**600, 0.0), (2.0**500, 0.0))),      # the split overflows
    ("mul", ((2.0**-600, 0.0), (2.0**-500, 0.0))),    # the product underflows to 0
    ("div", ((1.0, 0.0), (0.0, 0.0))),                # division by zero
    ("div", ((2.0**-600, 0.0), (2.0**500, 0.0))),     # the quotient is tiny
    ("exp", ((710.0, 0.0),)),                         # overflows
    ("exp", ((-720.0, 0.0),)),                        # subnormal result
    ("sqrt", ((-1.0, 0.0),)),                         # NaN
    ("erfc", ((26.5, 0.0),)),                         # exp(-x^2) leaves its range
    ("erfc", ((np.nan, 0.0),)),
    ("log1p", ((-1.0, 0.0),)),
    ("log1p", ((1e308, 0.0),)),                       # exp(-y0) leaves its range
])  # fmt: skip
def test_outside_the_exact_range_the_result_is_poisoned(name, pairs):
    assert math.isnan(_run(name, *pairs)[1])


@pytest.mark.parametrize("name, pairs, want", [
    ("mul", ((-3.0, 0.0), (0.0, 0.0)), -0.0),
    ("add", ((-0.0, 0.0), (-0.0, 0.0)), -0.0),
    ("div", ((-0.0, 0.0), (2.0, 0.0)), -0.0),
    ("sqrt", ((-0.0, 0.0),), -0.0),
    ("add", ((0.0, 0.0), (-0.0, 0.0)), 0.0),
])  # fmt: skip
def test_zeros_keep_the_sign_ieee_gives_them(name, pairs, want):
    hi, lo = _run(name, *pairs)
    assert hi == 0 and math.copysign(1, hi) == math.copysign(1, want) and lo == 0
