"""A `where` whose condition reads attributes only is one switch for the whole call: the arm not
taken is never evaluated, its reductions not computed (rows.live). The cross entropy forward's
smoothing term is such an arm (the vendor kernel's isSmoothing = labelSmoothing > 0): with
labelSmoothing 0 a -inf logit of another class leaves the loss finite -- a smoothing sum of
-inf times 0 would make it NaN. Expected values by hand (mpmath), rounded once to FLOAT."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.interpret import attribute_env
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine, rows

from tests.support.paths import kernel_mode
from tests.support.rounding import round_exact

REG = default_registry()
X = np.array([[1.0, -np.inf, 2.0], [0.5, 0.25, 3.0]], np.float32)
T = np.array([0, 1], np.int64)


def _call(smoothing: float) -> Call:
    f = lambda shape: TensorArg.from_array(np.zeros(shape, np.float32), "FLOAT")  # noqa: E731
    return Call(
        "aclnnCrossEntropyLoss",
        "atlas-a2",
        {"input": TensorArg.from_array(X, "FLOAT"), "target": TensorArg.from_array(T, "INT64"),
         "weightOptional": None, "reductionOptional": "none", "ignoreIndex": -100,
         "labelSmoothing": smoothing, "lseSquareScaleForZloss": 0.0, "returnZloss": False,
         "lossOut": f((2,)), "logProbOut": f((2, 3)), "zlossOut": f((2,)),
         "lseForZlossOut": f((2,))},
    )  # fmt: skip


def _lse(row) -> mpmath.mpf:
    return mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(float(v))) for v in row if v > -np.inf))


@pytest.mark.parametrize("mode", ["numpy", "numba"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_the_smoothing_arm_is_evaluated_only_where_it_is_taken(smoothing, mode):
    if mode == "numba":
        pytest.importorskip("numba")
    spec = REG.get("aclnnCrossEntropyLoss")
    call = _call(smoothing)
    loss_spec = next(s for s in spec.computed if s.formula.output == "lossOut")
    sums = [r for r in rows.live(loss_spec, attribute_env(spec, call)) if r.fn == "sum"]
    # the smoothing term is the loss's one sum (reduction none: no mean over the batch)
    assert (len(sums) > 0) == (smoothing > 0)
    with mpmath.workprec(200):
        lse = [_lse(r) for r in X]
        nll = [lse[0] - 1, lse[1] - mpmath.mpf(0.25)]
    with kernel_mode(mode):
        got = engine.evaluate(call).outputs
    loss = got["lossOut"]
    if smoothing == 0:
        assert loss.tolist() == [float(round_exact(v, "FLOAT")) for v in nll]
    else:
        assert loss[0] == np.inf  # -sum(log p) over the classes, one of them -inf
        assert math.isfinite(loss[1])
    logp = got["logProbOut"].reshape(2, 3)
    assert logp[0, 1] == -np.inf
    assert logp[0, 0] == round_exact(1 - lse[0], "FLOAT")


@pytest.mark.parametrize("tier", ["numpy", "bound"])
@pytest.mark.parametrize("flag", [True, False])
def test_a_condition_of_one_value_evaluates_one_side_only(tier, flag):
    """The numpy tier and the error-bound tier take one side of a where whose condition is one
    value; the other side reads a name no environment binds, so evaluating it would raise.
    An elementwise condition still selects per element, both sides evaluated."""
    from aclnn_conformance.conformance.spec.expr import ir
    from aclnn_conformance.conformance.spec.expr.numpy_arith import NUMPY
    from aclnn_conformance.conformance.spec.expr.walk import stage
    from aclnn_conformance.reference.errbound import BOUNDED

    ar = NUMPY if tier == "numpy" else BOUNDED
    x = np.array([1.0, -2.0, 3.0])
    val = (lambda a: a) if tier == "numpy" else (lambda a: (a, 0.0))  # noqa: E731
    taken, other = (ir.Var("x"), ir.Var("unbound")) if flag else (ir.Var("unbound"), ir.Var("x"))
    node = ir.Where(ir.Compare(("gt",), (ir.Var("s"), ir.Num(0))), taken, other)
    got = stage(node, ar)({"s": val(0.5 if flag else -0.5), "x": val(x)})
    assert np.array_equal(got if tier == "numpy" else got[0], x)
    both = ir.Where(ir.Compare(("gt",), (ir.Var("x"), ir.Num(0))), ir.Var("x"), ir.Num(7))
    got = stage(both, ar)({"x": val(x)})
    assert np.array_equal(got if tier == "numpy" else got[0], [1.0, 7.0, 3.0])
