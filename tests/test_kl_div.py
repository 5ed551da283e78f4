"""The KL divergence backwards (kl_div_backward, kl_div_target_backward) beyond what the family
oracles check element by element: `size(x, k)` (a tensor's own dim size in a formula, the batch
mean's divisor) and the mean's count, against exact rationals computed here from the doc's
formulas; and a cancellation float64 alone would misround.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.expr.language import ExprError, compile_expr
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine

from tests.support.rounding import round_exact

REG = default_registry()


def test_size_lowers_to_the_tensors_own_dim_size():
    e = compile_expr("x / size(self, 0)", ["x", "self"])
    assert "self" in e.names
    assert float(e.evaluate({"x": 6.0, "size(self, 0)": 3})) == 2.0
    assert compile_expr("size(self, -1)", ["self"]).names == {"self"}
    for bad, msg in (
        ("size(self + 1, 0)", "tensor parameter's name"),
        ("size(self)", "tensor parameter's name"),
        ("size(other, 0)", "not a parameter"),
        ("size(self, k)", "int literal"),
        ("size(self, 8)", "out of range"),
    ):
        with pytest.raises(ExprError, match=msg):
            compile_expr(bad, ["self", "k"])


def _call(op: str, reduction: int, log_target: bool, shapes: dict, out: str, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    arrs = {n: rng.uniform(0.125, 2.0, s).astype(np.float32) for n, s in shapes.items()}
    args = {n: TensorArg.from_array(a, "FLOAT") for n, a in arrs.items()}
    oshape = shapes["self" if out == "out" else "target"]
    args.update(reduction=reduction, logTarget=log_target)
    args[out] = TensorArg.from_array(np.zeros(oshape, np.float32), "FLOAT")
    return Call(op, "atlas-a2", args), arrs


@pytest.mark.parametrize("reduction,divisor", [(0, 1), (2, 1), (1, 60), (3, 3), (9, 1)])
def test_kl_div_backward_divides_by_the_count_or_the_batch(reduction, divisor):
    """self (3, 4, 5), target (4, 5), gradOutput (1, 5): -target g / divisor, the divisor 60
    (mean: numel(self)), 3 (batchmean: size(self, 0)) or 1 (none, sum, an unlisted value)."""
    shapes = {"gradOutput": (1, 5), "self": (3, 4, 5), "target": (4, 5)}
    call, a = _call("aclnnKlDivBackward", reduction, False, shapes, "out", reduction)
    got = engine.evaluate(call, REG)
    assert got.status == 0, got.message
    g, y = np.broadcast_arrays(a["gradOutput"], a["target"], a["self"])[:2]
    want = [
        float(round_exact(-Fraction(float(q)) * Fraction(float(r)) / divisor, "FLOAT"))
        for q, r in zip(y.ravel(), g.ravel(), strict=True)
    ]
    assert got.outputs["out"].tolist() == want


@pytest.mark.parametrize("reduction,divisor", [(1, 24), (3, 2)])
def test_kl_div_target_backward_divides_by_target_count_or_batch(reduction, divisor):
    """target (2, 3, 4), self (3, 1): g (log t - self + 1) / divisor, 24 = numel(target), 2 its
    dim 0; checked against mpmath at 60 digits (tests/support/rounding.round_exact)."""
    shapes = {"gradOutput": (4,), "self": (3, 1), "target": (2, 3, 4)}
    call, a = _call("aclnnKlDivTargetBackward", reduction, False, shapes, "gradTarget", 5)
    got = engine.evaluate(call, REG)
    assert got.status == 0, got.message
    g, x, t = np.broadcast_arrays(a["gradOutput"], a["self"], a["target"])
    with mpmath.workprec(200):
        want = [
            float(
                round_exact(
                    mpmath.mpf(float(r)) * (mpmath.log(float(q)) - float(p) + 1) / divisor, "FLOAT"
                )
            )
            for r, p, q in zip(g.ravel(), x.ravel(), t.ravel(), strict=True)
        ]
    assert got.outputs["gradTarget"].tolist() == want


def test_cancellation_of_three_terms_is_rounded_from_the_exact_value():
    """g e^t (t - self + 1) at t = -1, self = 1e-30 (FLOAT), g = -1: float64 gives
    (-1 - 1e-30) + 1 = 0, the exact value is e^-1 * 1e-30 = 3.7e-31, a normal FLOAT. Tier 1's
    error bound reaches past the rounding boundaries of 0 (tests/test_cancellation.py has more)."""
    s = np.float32(1e-30)
    args = {
        "gradOutput": TensorArg.from_array(np.array([-1.0], np.float32), "FLOAT"),
        "self": TensorArg.from_array(np.array([s], np.float32), "FLOAT"),
        "target": TensorArg.from_array(np.array([-1.0], np.float32), "FLOAT"),
        "reduction": 0,
        "logTarget": True,
        "gradTarget": TensorArg.from_array(np.zeros(1, np.float32), "FLOAT"),
    }
    got = engine.evaluate(Call("aclnnKlDivTargetBackward", "atlas-a2", args), REG)
    with mpmath.workprec(200):
        exact = mpmath.exp(-1) * mpmath.mpf(float(s))
    assert got.outputs["gradTarget"].tolist() == [float(round_exact(exact, "FLOAT"))]
