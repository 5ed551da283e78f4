"""reference/vecmath.py's exp against mpmath: within 2 ulp everywhere, IEEE at the edges.

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


@pytest.fixture(scope="module")
def vexp():
    from numba import njit

    from reference.vecmath import vexp

    @njit
    def run(xs):
        out = np.empty_like(xs)
        for i in range(xs.size):
            out[i] = vexp(xs[i])
        return out

    return run


def _ulps(got: float, x: float) -> float:
    with mpmath.workprec(200):
        exact = mpmath.exp(mpmath.mpf(x))
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
    from conformance.registry import default_registry
    from reference import codegen

    reg = default_registry()
    spec = reg.get("elu_backward")
    env = {p.name: p.default for p in spec.attributes}
    approx, plain = codegen.generate(spec, env, approx=True), codegen.generate(spec, env)
    assert "_vexp(" in approx.text and "math.exp(" not in approx.text
    assert "math.exp(" in plain.text and "_vexp(" not in plain.text
