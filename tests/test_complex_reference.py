"""The reference on complex values (sigmoid_backward, whose doc lists COMPLEX64 and COMPLEX128):
the doc's formula g * y * (1 - y) in complex arithmetic, each part rounded to the output's,
checked against mpmath's exact complex products."""

from __future__ import annotations

import mpmath
import numpy as np
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine

REG = default_registry()


def _exact(g: complex, y: complex) -> complex:
    with mpmath.workprec(400):  # products of three 53-bit parts: exact
        v = mpmath.mpc(g) * mpmath.mpc(y) * (1 - mpmath.mpc(y))
        return complex(float(v.real), float(v.imag))


def _call(g: np.ndarray, y: np.ndarray, dtype: str) -> Call:
    return Call("sigmoid_backward", "atlas-a2", {
        "gradOutput": TensorArg.from_array(g, dtype), "output": TensorArg.from_array(y, dtype),
        "gradInput": TensorArg.from_array(np.zeros(g.shape, np.complex128), dtype)})  # fmt: skip


def test_complex128_parts_are_close_to_the_exact_values():
    """Not correctly rounded (README: a part can lose accuracy to cancellation): each part is
    within a few float64 ulps of the value's magnitude |z|."""
    rng = np.random.default_rng(11)
    g = rng.normal(size=300) + 1j * rng.normal(size=300)
    y = rng.uniform(-2, 2, 300) + 1j * rng.uniform(-2, 2, 300)
    got = engine.evaluate(_call(g, y, "COMPLEX128"), REG)
    assert got.status == 0
    out = got.outputs["gradInput"]
    want = np.array([_exact(a, b) for a, b in zip(g, y, strict=True)])
    scale = np.spacing(np.abs(want))
    for part in (np.real, np.imag):
        assert np.all(np.abs(part(out) - part(want)) <= 4 * scale)


def test_complex64_parts_round_the_exact_values():
    rng = np.random.default_rng(12)
    g = (rng.normal(size=300) + 1j * rng.normal(size=300)).astype(np.complex64)
    y = (rng.uniform(-2, 2, 300) + 1j * rng.uniform(-2, 2, 300)).astype(np.complex64)
    got = engine.evaluate(_call(g, y, "COMPLEX64"), REG)
    out = got.outputs["gradInput"]
    assert out.dtype == np.complex64
    want = np.array([_exact(complex(a), complex(b)) for a, b in zip(g, y, strict=True)])
    for part in (np.real, np.imag):
        w32 = part(want).astype(np.float32)  # float64 of the exact value, then FLOAT
        ulp = np.spacing(np.abs(w32))
        diff = np.abs(part(out).astype(np.float64) - w32.astype(np.float64))
        assert np.all(diff <= ulp) and np.mean(diff == 0) > 0.99
