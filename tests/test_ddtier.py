"""The double-double tier (reference/ddtier.py) decides only what mpmath would decide the same way.

For every spec with a double-double kernel and every narrower float output it takes, the elements
the tier decides must round, through its float64 value, to the correctly rounded exact value
(mpmath at 300 bits), and it must decide nearly all of those with moderate inputs; an exact rounding tie must never be
decided (it is mpmath's, which keeps it a tie for round-half-even).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.spec.interpret import attribute_env
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.spec.split import splits
from aclnn_conformance.reference import codegen, ddgen, ddtier, precise

from tests.support.paths import HAVE_NUMBA
from tests.support.rounding import round_exact
from tests.test_kernel import _call

pytestmark = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed (pip install .[fast])"
)
REG = default_registry()
N = 300
MODERATE = 40


def _params():
    out = []
    for spec in REG:
        if spec.inplace_of or splits(spec):  # (halves: split_call's views, tests/test_split.py)
            continue
        for dtype in ("FLOAT", "FLOAT16", "BF16"):
            product = next((p for p in spec.products
                            if _call(spec, p, dtype, 4, np.random.default_rng(0))), None)  # fmt: skip
            if product is None:
                continue
            try:
                ddgen.generate(
                    spec,
                    attribute_env(spec, _call(spec, product, dtype, 4, np.random.default_rng(0))),
                )
            except codegen.Unsupported:
                continue
            out.append(pytest.param(spec.name, product, dtype, id=f"{spec.name}-{dtype}"))
    return out


@pytest.mark.kernels
@pytest.mark.parametrize("name, product, dtype", _params())
def test_decided_elements_round_as_the_exact_value_does(name, product, dtype):
    spec = REG.get(name)
    call = _call(spec, product, dtype, N, np.random.default_rng(11))
    env = attribute_env(spec, call)
    inputs = {p.name: call.tensor(p.name).storage.astype(np.float64) for p in spec.tensor_inputs}
    attrs = {p.name: env[p.name] for p in spec.attributes}
    decided, y = ddtier.decide(spec, env, inputs, dt.get(dtype))
    moderate = decided_moderate = 0
    for i in range(N):
        v = precise._value_at(spec, attrs, {k: float(a[i]) for k, a in inputs.items()}, 300)
        if v is None:  # an IEEE special among the inputs or the result: not mpmath's to say
            continue
        if v != 0 and all(abs(a[i]) < 20 for a in inputs.values()) and not _boundary(v, dtype):
            moderate += 1  # no exp near its overflow: the pair is not poisoned
            decided_moderate += int(decided[i])
        if decided[i]:
            got = dt.round_to(np.array([y[i]]), dt.get(dtype))[0]
            want = round_exact(v, dtype)
            assert got == want or (got == 0 and want == 0), (
                f"{name} {dtype}: { ({k: float(a[i]) for k, a in inputs.items()}) } rounds to "
                f"{float(got)!r}, exactly {float(want)!r}"
            )
    # at least MODERATE elements exercised (ops that select an attribute for half the inputs,
    # threshold, keep fewer than N // 4), and nearly all of them decided by the pair
    assert moderate >= MODERATE and decided_moderate >= 0.9 * moderate


def _boundary(v, dtype: str) -> bool:
    """Whether the exact value lies within 2^-60 of a rounding boundary of `dtype` (an exact
    tie, common where the formula is a sum of two inputs): no finite pair decides it, the
    tier leaves it to mpmath by design (test_an_exact_tie_is_left_to_mpmath)."""
    with mpmath.workprec(400):
        return round_exact(v * (1 - mpmath.mpf(2) ** -60), dtype) != round_exact(
            v * (1 + mpmath.mpf(2) ** -60), dtype
        )


def test_an_exact_tie_is_left_to_mpmath():
    spec = REG.get("hardshrink_backward")
    call = _call(spec, "atlas-a2", "FLOAT", 4, np.random.default_rng(0))
    env = attribute_env(spec, call)
    x = np.full(3, 10.0)  # beyond lambd: the result is gradOutput itself
    dy = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-9])  # two BF16 ties, one not
    decided, y = ddtier.decide(spec, env, {"gradOutput": dy, "self": x}, dt.get("BF16"))
    assert decided.tolist() == [False, False, True]
    assert dt.round_to(y[2:], dt.get("BF16"))[0] == 1.0
