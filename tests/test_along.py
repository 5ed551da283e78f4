"""A tensor laid along a dim by its element count (`along: {of, dim}`), on the shipped aclnnPrelu
and aclnnPreluBackward specs.

The library reads a weight of 1 or C elements, whatever its shape, as (1, C, 1, ...) beside self
(op_api aclnn_prelu.cpp reshapes it; C is self's size along dim 1, 1 for a self of rank 0 or 1),
and the backward sums gradOutput * self where self <= 0 over every dim but the channel's (over
all of them for one element) into a gradWeight of (C), or of weight's own shape for one element.
The expected values are worked out here: numpy's where over an explicitly reshaped weight (a
product of two float32 values is exact in float64, so its rounding to float32 is the correctly
rounded result), and sums of exact Fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine

RNG = np.random.default_rng(7)
# (self's shape, weight's shape): C elements in several shapes, and one element
CASES = [
    ((2, 3, 4), (3,)),
    ((2, 3, 4), (3, 1)),
    ((2, 3, 1, 4), (1, 3, 1)),
    ((2, 3, 4), (1,)),
    ((2, 3, 4), ()),
    ((5,), (1,)),
    ((), (1,)),
    ((4, 1), (1,)),
]


def _tensor(a: np.ndarray, dtype: str = "FLOAT") -> TensorArg:
    return TensorArg.from_array(a, dtype)


def _values(shape: tuple[int, ...]) -> np.ndarray:
    x = RNG.standard_normal(shape).astype(np.float32)
    if x.size:
        x.reshape(-1)[0] = 0.0  # the boundary takes the weight's branch
    return x


def _channels(w: np.ndarray, rank: int) -> np.ndarray:
    """The weight as the library reads it beside a rank-`rank` self (written out here)."""
    if w.size == 1:
        return w.reshape(())
    return w.reshape((1, w.size) + (1,) * (rank - 2))


@pytest.mark.parametrize("shape,wshape", CASES)
def test_prelu_reads_the_weight_by_its_element_count_along_dim_1(shape, wshape):
    reg = default_registry()
    x = _values(shape)
    w = RNG.uniform(-2, 2, wshape).astype(np.float32)
    out = np.zeros(shape, np.float32)
    call = Call(
        "prelu", "atlas-a2", {"self": _tensor(x), "weight": _tensor(w), "out": _tensor(out)}
    )
    got = engine.evaluate(call, reg)
    assert got.status == 0, got.message
    x64 = x.astype(np.float64)
    want = np.where(x64 > 0, x64, _channels(w.astype(np.float64), x.ndim) * x64).astype(np.float32)
    np.testing.assert_array_equal(got.outputs["out"].reshape(shape), want)


def _backward(shape, wshape, gshape=None):
    g = RNG.standard_normal(gshape or shape).astype(np.float32)
    x = _values(shape)
    w = RNG.uniform(-2, 2, wshape).astype(np.float32)
    gw_shape = wshape if w.size == 1 else (w.size,)
    call = Call("prelu_backward", "atlas-a2", {
        "gradOutput": _tensor(g), "self": _tensor(x), "weight": _tensor(w),
        "gradInput": _tensor(np.zeros(shape, np.float32)),
        "gradWeight": _tensor(np.zeros(gw_shape, np.float32)),
    })  # fmt: skip
    return call, g, x, w, gw_shape


@pytest.mark.parametrize("shape,wshape", CASES)
def test_prelu_backward_sums_the_weight_gradient_over_every_dim_but_the_channel(shape, wshape):
    call, g, x, w, gw_shape = _backward(shape, wshape)
    got = engine.evaluate(call, default_registry())
    assert got.status == 0, got.message
    g64, x64 = np.broadcast_to(g, x.shape).astype(np.float64), x.astype(np.float64)
    wide = _channels(w.astype(np.float64), x.ndim)
    want_in = np.where(x64 > 0, g64, wide * g64).astype(np.float32)
    np.testing.assert_array_equal(got.outputs["gradInput"].reshape(shape), want_in)
    # gradWeight_c: the exact sum of g * x over the elements of channel c where x <= 0
    terms = np.where(x64 > 0, 0.0, g64 * x64)
    if w.size == 1:
        sums = [sum((Fraction(float(t)) for t in terms.reshape(-1)), Fraction(0))]
    else:
        per = np.moveaxis(terms, 1, 0).reshape(w.size, -1)
        sums = [sum((Fraction(float(t)) for t in row), Fraction(0)) for row in per]
    want_w = np.array([float(s) for s in sums], np.float64).astype(np.float32)
    np.testing.assert_array_equal(got.outputs["gradWeight"].reshape(-1), want_w)
    assert got.outputs["gradWeight"].size == int(np.prod(gw_shape))


def test_prelu_backward_broadcasts_grad_output_to_self():
    call, g, x, w, _ = _backward((2, 3, 4), (3,), gshape=(3, 1))
    got = engine.evaluate(call, default_registry())
    assert got.status == 0, got.message
    g64 = np.broadcast_to(g, x.shape).astype(np.float64)
    x64 = x.astype(np.float64)
    terms = np.where(x64 > 0, 0.0, g64 * x64)
    want = [float(sum((Fraction(float(t)) for t in terms[:, c, :].reshape(-1)), Fraction(0)))
            for c in range(3)]  # fmt: skip
    np.testing.assert_array_equal(got.outputs["gradWeight"], np.array(want).astype(np.float32))


@pytest.mark.parametrize(
    "shape,wshape,why",
    [
        ((2, 3, 4), (4,), "4 elements beside 3 channels"),
        ((2, 3, 4), (2, 3), "6 elements beside 3 channels"),
        ((5,), (5,), "a 1-D self has one channel"),
        ((), (2,), "a 0-d self has one channel"),
    ],
)
def test_a_weight_of_another_count_is_refused_with_161002(shape, wshape, why):
    reg = default_registry()
    x = _values(shape)
    w = np.ones(wshape, np.float32)
    call = Call("prelu", "atlas-a2", {
        "self": _tensor(x), "weight": _tensor(w), "out": _tensor(np.zeros(shape, np.float32)),
    })  # fmt: skip
    got = engine.evaluate(call, reg)
    assert got.status == 161002, why
    assert got.clause == "prelu/weight-numel"


def test_prelu_backward_wants_a_grad_weight_of_c_for_a_shaped_weight():
    """A (1, 3, 1) weight takes a (3) gradWeight (op_api CheckShape), not weight's shape."""
    call, *_ = _backward((2, 3, 4), (1, 3, 1))
    args = dict(call.args)
    args["gradWeight"] = _tensor(np.zeros((1, 3, 1), np.float32))
    got = engine.evaluate(Call("prelu_backward", "atlas-a2", args), default_registry())
    assert got.status == 161002
    assert got.clause == "prelu_backward/grad-weight-shape"


def test_prelu_backward_agrees_with_torch_autograd():
    torch = pytest.importorskip("torch")
    call, g, x, w, _ = _backward((3, 4, 5, 2), (4,))
    got = engine.evaluate(call, default_registry())
    xt = torch.tensor(x.astype(np.float64), requires_grad=True)
    wt = torch.tensor(w.astype(np.float64), requires_grad=True)
    torch.nn.functional.prelu(xt, wt).backward(torch.tensor(g.astype(np.float64)))
    np.testing.assert_array_equal(
        got.outputs["gradInput"].reshape(x.shape), xt.grad.numpy().astype(np.float32)
    )
    np.testing.assert_allclose(
        got.outputs["gradWeight"], wt.grad.numpy().astype(np.float32), rtol=2**-23, atol=0
    )
