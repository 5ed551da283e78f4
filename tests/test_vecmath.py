"""conformance/compiled/vecmath.py against mpmath: exp within 2 ulp, erfc within 8, expm1 and log1p within
3, tanh and erfinv within 4, everywhere; IEEE at the edges.

The compiled kernels of FLOAT, FLOAT16 and BF16 outputs inline it in place of libm's exp; its
error must stay far inside precise.GUARD, which is what makes the rounded results unchanged.
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


def _elementwise(fn):
    from numba import njit

    @njit(error_model="numpy")  # as the kernels: IEEE results, no exceptions
    def run(xs):
        out = np.empty_like(xs)
        for i in range(xs.size):
            out[i] = fn(xs[i])
        return out

    return run


@pytest.fixture(scope="module")
def vexp():
    from aclnn_conformance.conformance.compiled.vecmath import vexp

    return _elementwise(vexp)


@pytest.fixture(scope="module")
def verfc():
    from aclnn_conformance.conformance.compiled.vecmath import verfc

    return _elementwise(verfc)


def _ulps(got: float, x: float, fn=mpmath.exp) -> float:
    with mpmath.workprec(200):
        exact = fn(mpmath.mpf(x))
        step = mpmath.mpf(math.ulp(float(exact)))  # the ulp of the float64 nearest the value
        return float(abs(mpmath.mpf(got) - exact) / step)


def test_within_two_ulp_over_the_float64_range(vexp):
    rng = np.random.default_rng(1)
    xs = np.concatenate([
        rng.uniform(-708.3, 709.7, 3000),  # every binade of normal results
        rng.uniform(-1, 1, 1000) * 10.0 ** rng.integers(-300, 0, 1000),  # next to 0: exp ~ 1
        np.arange(-30, 31) * math.log(2),  # reduction boundaries k ln 2 (and the ties k +- 1/2)
        (np.arange(-30, 31) + 0.5) * math.log(2),
        [709.78, 709.782712893384, -708.39, -700.0, 1e-300, -1e-300, 5e-324],
    ])  # fmt: skip
    got = vexp(xs)
    worst = max(_ulps(float(g), float(x)) for g, x in zip(got, xs, strict=True))
    assert worst <= 2.0


def test_subnormal_results_within_one_subnormal_step(vexp):
    xs = np.linspace(-745.1, -708.4, 500)
    got = vexp(xs)
    with mpmath.workprec(200):
        exact = [mpmath.exp(mpmath.mpf(float(x))) for x in xs]
    err = [
        abs(mpmath.mpf(float(g)) - e) / mpmath.mpf(5e-324) for g, e in zip(got, exact, strict=True)
    ]
    assert max(err) <= 1


def test_ieee_edges(vexp):
    xs = np.array(
        [0.0, -0.0, np.nan, np.inf, -np.inf, 709.79, 710.0, 1e308, -745.2, -746.0, -1e308]
    )
    got = vexp(xs)
    assert got[0] == got[1] == 1.0
    assert np.isnan(got[2])
    assert got[3] == np.inf and got[4] == 0.0
    assert got[5] == got[6] == got[7] == np.inf  # exp(709.79) > DBL_MAX
    assert got[8] == got[9] == got[10] == 0.0


def test_used_for_float_outputs_only():
    """codegen writes _vexp where the output is FLOAT/FLOAT16/BF16 (approx), math.exp else."""
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.reference import codegen

    reg = default_registry()
    spec = reg.get("elu_backward")
    env = {p.name: p.default for p in spec.attributes}
    approx, plain = codegen.generate(spec, env, approx=True), codegen.generate(spec, env)
    assert "_vexp(" in approx.text and "math.exp(" not in approx.text
    assert "math.exp(" in plain.text and "_vexp(" not in plain.text
    gelu = reg.get("gelu_backward_v2")
    none = {"approximate": "none"}
    assert "_verfc(" in codegen.generate(gelu, none, approx=True).text
    assert "math.erfc(" in codegen.generate(gelu, none).text
    assert "_verfinv(" in codegen.generate(reg.get("erfinv"), {}, approx=True).text


def test_erfc_within_eight_ulp(verfc):
    rng = np.random.default_rng(3)
    xs = np.concatenate([
        rng.uniform(-6, 26.5, 4000),  # erfc from 2 down to the last normal results
        rng.standard_normal(1000),
        rng.uniform(-1, 1, 500) * 10.0 ** rng.integers(-300, 0, 500),  # erfc ~ 1
        [0.5, 1, 2, 4, 8, 16, 26.0, -0.5, -1, -4],
    ])  # fmt: skip
    got = verfc(xs)
    worst = max(_ulps(float(g), float(x), mpmath.erfc) for g, x in zip(got, xs, strict=True))
    assert worst <= 8.0


def test_erfc_subnormal_results_and_edges(verfc):
    xs = np.linspace(26.55, 27.2, 300)
    got = verfc(xs)
    with mpmath.workprec(200):
        err = [abs(mpmath.mpf(float(g)) - mpmath.erfc(mpmath.mpf(float(x)))) / mpmath.mpf(5e-324)
               for g, x in zip(got, xs, strict=True)]  # fmt: skip
    assert max(err) <= 2
    edges = verfc(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 27.3, 40.0, -40.0, 1e300]))
    assert edges[0] == edges[1] and abs(edges[0] - 1.0) <= 2.0**-52  # within 1 ulp of 1
    assert edges[2] == 0.0 and edges[3] == 2.0 and np.isnan(edges[4])
    assert edges[5] == edges[6] == edges[8] == 0.0 and edges[7] == 2.0


def test_erfc_coefficients_are_what_the_fit_makes():
    """The table in vecmath.py is tests/support/erfc_fit.py's output, not a hand-edited copy."""
    from aclnn_conformance.conformance.compiled import vecmath

    from tests.support import erfc_fit

    assert erfc_fit.coefficients() == vecmath._ERFC and erfc_fit.DEG_FLOAT == 24
    assert (vecmath._K, vecmath._XMAX) == (erfc_fit.K, erfc_fit.XMAX)


def test_half_to_double_gives_numpys_value_for_every_float16_bit_pattern():
    """The compiled kernels read FLOAT16 tensors as bits: every one of the 65536 patterns
    must give numpy's float64 (its bits: signed zeros, subnormals, inf and NaN payloads)."""
    from aclnn_conformance.conformance.compiled.vecmath import half_to_double
    from numba import njit

    @njit
    def run(hs):
        out = np.empty(hs.size)
        for i in range(hs.size):
            out[i] = half_to_double(hs[i])
        return out

    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = run(bits)
    want = bits.view(np.float16).astype(np.float64)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    # and by hand: 1.0, the smallest subnormal, the largest finite, -0, +inf
    hand = {0x3C00: 1.0, 0x0001: 2.0**-24, 0x7BFF: 65504.0, 0x8000: -0.0, 0x7C00: math.inf}
    for b, v in hand.items():
        assert got[b] == v and math.copysign(1, got[b]) == math.copysign(1, v)


@pytest.fixture(scope="module")
def functions():
    from aclnn_conformance.conformance.compiled import vecmath

    return {"expm1": _elementwise(vecmath.vexpm1), "log1p": _elementwise(vecmath.vlog1p),
            "tanh": _elementwise(vecmath.vtanh), "erfinv": _elementwise(vecmath.verfinv)}  # fmt: skip


def _worst(fn, exact, xs) -> float:
    got = fn(xs)
    return max(_ulps(float(g), float(x), exact) for g, x in zip(got, xs, strict=True)
               if exact(mpmath.mpf(float(x))) != 0)  # fmt: skip


@pytest.mark.parametrize("name, bound", [("expm1", 3.0), ("log1p", 3.0), ("tanh", 4.0)])
def test_expm1_log1p_tanh_within_their_bounds(functions, name, bound):
    rng = np.random.default_rng(5)
    tiny = rng.choice([-1.0, 1.0], 1000) * 10.0 ** rng.uniform(-300, 0, 1000)
    xs = {
        "expm1": [rng.uniform(-40, 709, 2000), rng.uniform(-0.6, 0.6, 2000), tiny,
                  [0.5, -0.5, 0.4999999999999999, -0.5000000000000001]],
        "log1p": [-1 + 10.0 ** rng.uniform(-16, 0, 1000), 10.0 ** rng.uniform(-300, 300, 2000),
                  rng.uniform(-0.3, 0.5, 2000), tiny[tiny > -0.9],
                  [np.sqrt(2) - 1, np.sqrt(0.5) - 1, 1e308, -0.5, 1.0]],
        "tanh": [rng.uniform(-25, 25, 2000), rng.uniform(-0.7, 0.7, 2000), tiny, [19.9, -20.5]],
    }[name]  # fmt: skip
    exact = {"expm1": mpmath.expm1, "log1p": mpmath.log1p, "tanh": mpmath.tanh}[name]
    assert _worst(functions[name], exact, np.concatenate(xs)) <= bound


def test_expm1_log1p_tanh_ieee_edges(functions):
    def run(name, xs):
        return functions[name](np.array(xs, dtype=np.float64))

    def same(got, want):
        return all((g == w or (g != g and w != w)) and math.copysign(1, g) == math.copysign(1, w)
                   for g, w in zip(got, want, strict=True))  # fmt: skip

    nan, inf = math.nan, math.inf
    assert same(run("expm1", [0.0, -0.0, nan, inf, -inf, 710.0, -800.0]),
                [0.0, -0.0, nan, inf, -1.0, inf, -1.0])  # fmt: skip
    assert same(run("log1p", [0.0, -0.0, nan, inf, -1.0, -2.0, -inf]),
                [0.0, -0.0, nan, inf, -inf, nan, nan])  # fmt: skip
    assert same(run("tanh", [0.0, -0.0, nan, inf, -inf, 1e300]), [0.0, -0.0, nan, 1.0, -1.0, 1.0])


@pytest.mark.kernels
def test_erfinv_within_four_ulp(functions):
    """Uniform over (-1, 1), the steep ends down to 1 - 2^-53, tiny values, and both sides of the
    splits (a = 3/4 between erf's series and erfc, w = 5 between the two first guesses)."""
    rng = np.random.default_rng(7)
    w5 = math.sqrt(-math.expm1(-5.0))  # the a where w = 5
    xs = np.concatenate([
        rng.uniform(-1, 1, 3000),
        rng.choice([-1.0, 1.0], 2000) * (1 - 10.0 ** rng.uniform(-16, -0.3, 2000)),
        rng.choice([-1.0, 1.0], 500) * 10.0 ** rng.uniform(-300, -1, 500),
        [1 - 2.0**-53, -(1 - 2.0**-53), 1 - 2.0**-52, 0.75, np.nextafter(0.75, 0), w5,
         np.nextafter(w5, 0), np.nextafter(w5, 1), 0.5, 0.99951171875],
    ])  # fmt: skip
    assert _worst(functions["erfinv"], mpmath.erfinv, xs) <= 4.0


def test_erfinv_ieee_edges(functions):
    got = functions["erfinv"](np.array([0.0, -0.0, 1.0, -1.0, 1.0000000000000002, -2.0, math.inf,
                                        -math.inf, math.nan, 5e-324, -5e-324]))  # fmt: skip
    assert math.copysign(1, got[0]) == 1 and math.copysign(1, got[1]) == -1 and got[0] == 0
    assert got[2] == math.inf and got[3] == -math.inf
    assert np.isnan(got[4:9]).all()
    # erfinv(x) = sqrt(pi)/2 x near 0: the smallest subnormal stays itself (0.886 rounds to 1 step)
    assert got[9] == 5e-324 and got[10] == -5e-324


def test_erfinv_first_guesses_are_what_the_fit_makes():
    from aclnn_conformance.conformance.compiled import vecmath

    from tests.support import erfinv_fit

    assert erfinv_fit.coefficients() == (vecmath._ERFINV_CENTRAL, vecmath._ERFINV_TAIL)
    assert (vecmath._W_SPLIT, vecmath._R_LOW, vecmath._R_MAX) == (
        erfinv_fit.W_SPLIT, erfinv_fit.R_LOW, erfinv_fit.R_MAX)  # fmt: skip
