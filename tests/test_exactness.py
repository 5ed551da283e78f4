"""The compiled exactness test (conformance/compiled/exactmath.py) never calls a rounded value exact.

For every spec it compiles, on inputs built to be exact often (small dyadic numbers) and on
full-width float64 ones (whose products and sums round): every element it calls exact must have
a float64 value equal to the exact value (mpmath at 300 bits). And it must see the exactness
that is there: hardsigmoid's x / 6 + 0.5 for x a multiple of 3/64, and a product of two 24-bit
numbers.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.spec.expr.walk import tensors_read
from aclnn_conformance.conformance.spec.interpret import attribute_env
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import codegen, ddgen, kernel, precise

from tests.support.paths import HAVE_NUMBA
from tests.test_kernel import _call_any

pytestmark = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed (pip install .[fast])"
)
REG = default_registry()
N = 400


def _params():
    out = []
    for spec in REG:
        call = _call_any(spec)
        if spec.inplace_of or call is None:
            continue
        try:
            ddgen.generate(spec, attribute_env(spec, call), exact=True)
        except codegen.Unsupported:
            continue
        out.append(pytest.param(spec.name, id=spec.name))
    return out


def _inputs(spec, rng) -> dict[str, np.ndarray]:
    """Values of each tensor the kernel reads (tensors_read: a half of a split tensor by its
    key; a concatenation's half index 0 or 1)."""
    out = {}
    for name in tensors_read(spec):
        if name.startswith("concat("):
            out[name] = rng.integers(0, 2, N).astype(np.float64)
            continue
        dyadic = rng.integers(-24, 25, N) * 2.0 ** rng.integers(-4, 3, N)  # exact, often
        wide = rng.standard_normal(N) * 4  # 53 significant bits: operations round
        out[name] = np.where(rng.random(N) < 0.6, dyadic, wide)
    return out


def _exact_flags(spec, env, inputs):
    k = kernel.get_exact(spec, env)
    out, flags = np.empty(N), np.empty(N, np.bool_)
    k.run_dd(inputs, env, out, flags)
    return out, ~flags


@pytest.mark.kernels
@pytest.mark.parametrize("name", _params())
def test_every_element_called_exact_is_the_exact_value(name):
    spec = REG.get(name)
    env = attribute_env(spec, _call_any(spec))
    inputs = _inputs(spec, np.random.default_rng(3))
    out, exact = _exact_flags(spec, env, inputs)
    attrs = {p.name: env[p.name] for p in spec.attributes}
    for i in np.flatnonzero(exact):
        v = precise._value_at(spec, attrs, {k: float(a[i]) for k, a in inputs.items()}, 300)
        assert v is not None and mpmath.mpf(float(out[i])) == v, (
            f"{name}: { ({k: float(a[i]) for k, a in inputs.items()}) } called exact: "
            f"{float(out[i])!r}, exactly {v}"
        )


def test_it_sees_exact_divisions_sums_and_products():
    spec = REG.get("hardsigmoid")
    env = attribute_env(spec, _call_any(spec))
    x = np.arange(N) * (3 / 64) - 9  # x / 6 is a multiple of 1/128: exact, and so is + 0.5
    _, exact = _exact_flags(spec, env, {"self": x})
    inside = np.abs(x) < 3  # the linear branch (the others are constants)
    assert exact[inside].all() and inside.sum() >= 100
    _, exact = _exact_flags(spec, env, {"self": x + 2.0**-40})  # x / 6 now rounds
    assert not exact[inside & (x != 0)].any()
    mul = REG.get("leaky_relu_backward")
    env = attribute_env(mul, _call_any(mul))
    rng = np.random.default_rng(5)
    g = rng.standard_normal(N).astype(np.float32).astype(np.float64)  # 24 bits each
    s = -np.abs(rng.standard_normal(N).astype(np.float32).astype(np.float64))
    env = {**env, "negativeSlope": 0.375}
    _, exact = _exact_flags(mul, env, {"gradOutput": g, "self": s})
    assert exact.all()  # a 24-bit number times 0.375: no rounding
