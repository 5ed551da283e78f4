"""Worked examples: the vendor doc's own example (seed 004) and hand-computed values per op.

Expected values are written out by hand from each doc formula (shared/seeds/, with the formulas
the fact sheet shared/research/aclnn-facts.md §2.4-§6.4 supplies where the seed's are missing),
using only the math module.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.reference.engine import evaluate

NP = {"FLOAT": np.float32, "FLOAT16": np.float16, "DOUBLE": np.float64}


def tensor(values, dtype: str, shape=None) -> TensorArg:
    a = np.asarray(values, dtype=NP[dtype])
    shape = tuple(shape) if shape is not None else a.shape
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return TensorArg(dtype, shape, tuple(reversed(strides)), 0, a.reshape(-1).copy())


def run(op: str, product: str, args: dict[str, Any], out: str) -> np.ndarray:
    outcome = evaluate(Call(op, product, args))
    assert outcome.status == 0, outcome.message
    return outcome.outputs[out]


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


# -- aclnnEluBackward: the doc's example (seed 004, 调用示例) ------------------------------------


@pytest.mark.parametrize("product", ["atlas-inference", "atlas-training", "atlas-a2"])
def test_elu_backward_doc_example(product):
    # gradOutput = selfOrResult = {-2, -1, 0, 1} (2x2, ACL_FLOAT); alpha = scale = inputScale
    # = 1.0f; isResult = true. x <= 0: dy * inputScale * (x + alpha * scale); x > 0: dy * scale
    # -> {(-2)(-2+1), (-1)(-1+1), 0 * (0+1), 1 * 1} = {2, 0, 0, 1}
    one = ScalarArg("FLOAT", 1.0)
    args = {
        "gradOutput": tensor([-2, -1, 0, 1], "FLOAT", (2, 2)),
        "alpha": one,
        "scale": one,
        "inputScale": one,
        "isResult": True,
        "selfOrResult": tensor([-2, -1, 0, 1], "FLOAT", (2, 2)),
        "gradInput": tensor([0, 0, 0, 0], "FLOAT", (2, 2)),
    }
    got = run("elu_backward", product, args, "gradInput")
    assert got.dtype == np.float32
    assert got.tolist() == [2.0, 0.0, 0.0, 1.0]  # -0.0 == 0.0


def test_elu_backward_input_mode():
    # isResult = false: x <= 0 -> dy * inputScale * alpha * scale * exp(x * inputScale)
    alpha, scale, iscale = 1.5, 2.0, 0.8
    args = {
        "gradOutput": tensor([1.0, 1.0, 1.0, -3.0], "FLOAT"),
        "alpha": ScalarArg("FLOAT", alpha),
        "scale": ScalarArg("FLOAT", scale),
        "inputScale": ScalarArg("FLOAT", iscale),
        "isResult": False,
        "selfOrResult": tensor([-1.0, 0.0, 2.0, -200.0], "FLOAT"),
        "gradInput": tensor([9, 9, 9, 9], "FLOAT"),
    }
    got = run("elu_backward", "atlas-a2", args, "gradInput")
    expected = [
        iscale * alpha * scale * math.exp(-1.0 * iscale),  # 2.4 e^-0.8 = 1.0783895
        iscale * alpha * scale,  # x = 0 takes the x <= 0 branch: 2.4
        scale,  # x > 0: 2
        -3.0 * iscale * alpha * scale * math.exp(-200 * iscale),  # -2.3e-69: -0 in FLOAT
    ]
    np.testing.assert_allclose(got, np.float32(expected), rtol=3e-7, atol=0)


# -- aclnnLeakyReluBackward ---------------------------------------------------------------------


def test_leaky_relu_backward_example():
    # out = gradOutput where self > 0, gradOutput * negativeSlope where self <= 0
    args = {
        "gradOutput": tensor([1.0, 2.0, 3.0, -4.0], "FLOAT"),
        "self": tensor([-2.0, 0.0, 3.0, -0.5], "FLOAT"),
        "negativeSlope": ScalarArg("FLOAT", 0.01),
        "selfIsResult": False,
        "out": tensor([0, 0, 0, 0], "FLOAT"),
    }
    got = run("leaky_relu_backward", "atlas-inference", args, "out")
    np.testing.assert_allclose(got, [0.01, 0.02, 3.0, -0.04], rtol=1.2e-7, atol=0)


def test_leaky_relu_backward_scalar_keeps_its_dtype():
    # A FLOAT scalar 0.01 is the float 0.01f (0.00999999977648258...), also on DOUBLE tensors;
    # a DOUBLE scalar is 0.01 itself.
    def call(slope: ScalarArg):
        args = {
            "gradOutput": tensor([1.0], "DOUBLE"),
            "self": tensor([-1.0], "DOUBLE"),
            "negativeSlope": slope,
            "selfIsResult": False,
            "out": tensor([0.0], "DOUBLE"),
        }
        return run("leaky_relu_backward", "atlas-training", args, "out")[0]

    assert call(ScalarArg("FLOAT", 0.01)) == 0.009999999776482582
    assert call(ScalarArg("DOUBLE", 0.01)) == 0.01


# -- aclnnHardshrinkBackward (seed 001: grad if x > λ or x < -λ, 0 otherwise) ------------------


@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16"])
def test_hardshrink_backward_example(dtype):
    args = {
        "gradOutput": tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype),
        "self": tensor([-1.0, -0.5, 0.0, 0.5, 0.7], dtype),
        "lambd": ScalarArg("FLOAT", 0.5),
        "gradInput": tensor([9, 9, 9, 9, 9], dtype),
    }
    got = run("hardshrink_backward", "atlas-training", args, "gradInput")
    assert got.tolist() == [1.0, 0.0, 0.0, 0.0, 5.0]  # x = +-λ is in the dead zone


def test_hardshrink_backward_negative_lambd_counts_as_zero():
    # "当λ小于0时,按0计算": with λ = -0.5 only x = 0 (either sign) is in the dead zone
    args = {
        "gradOutput": tensor([1.0, 2.0, 3.0, 4.0], "FLOAT"),
        "self": tensor([-1.0, 0.0, -0.0, 1e-3], "FLOAT"),
        "lambd": ScalarArg("FLOAT", -0.5),
        "gradInput": tensor([9, 9, 9, 9], "FLOAT"),
    }
    got = run("hardshrink_backward", "atlas-a2", args, "gradInput")
    assert got.tolist() == [1.0, 0.0, 0.0, 4.0]


# -- aclnnSoftplusBackward (seed 002) -----------------------------------------------------------


def test_softplus_backward_example():
    # beta = 2, threshold = 3: beta*x <= 3 -> dy / (1 + e^(-beta*x)); beta*x > 3 -> dy
    args = {
        "gradOutput": tensor([1.0, 1.0, 2.0, 1.0, -4.0], "FLOAT"),
        "self": tensor([1.5, 2.0, 0.0, -1.0, 1.5000001], "FLOAT"),
        "beta": ScalarArg("FLOAT", 2.0),
        "threshold": ScalarArg("FLOAT", 3.0),
        "gradInput": tensor([9, 9, 9, 9, 9], "FLOAT"),
    }
    got = run("softplus_backward", "atlas-a2", args, "gradInput")
    expected = [
        sigmoid(3.0),  # beta*x == threshold: the sigmoid branch, 0.95257413
        1.0,  # 4 > 3: linear
        2.0 * 0.5,  # sigmoid(0) = 1/2
        sigmoid(-2.0),  # 0.11920292
        -4.0,  # 2 * 1.5000001 > 3: linear
    ]
    np.testing.assert_allclose(got, expected, rtol=1.2e-7, atol=0)


def test_softplus_backward_integer_self():
    # self may be an integer tensor (seed 002 lists INT32): beta = 1, threshold = 20
    args = {
        "gradOutput": tensor([1.0, 1.0, 1.0], "FLOAT"),
        "self": TensorArg("INT32", (3,), (1,), 0, np.array([0, 21, -3], dtype=np.int32)),
        "beta": ScalarArg("FLOAT", 1.0),
        "threshold": ScalarArg("FLOAT", 20.0),
        "gradInput": tensor([9, 9, 9], "FLOAT"),
    }
    got = run("softplus_backward", "atlas-training", args, "gradInput")
    np.testing.assert_allclose(got, [0.5, 1.0, sigmoid(-3.0)], rtol=1.2e-7, atol=0)


# -- aclnnGeluBackwardV2 (facts §5.4) -----------------------------------------------------------


def gelu_none(x: float) -> float:
    # 1/2 + 1/2 erf(x/√2) + x/√(2π) e^(−x²/2)
    return (
        0.5 + 0.5 * math.erf(x / math.sqrt(2)) + x / math.sqrt(2 * math.pi) * math.exp(-x * x / 2)
    )


def gelu_tanh(x: float) -> float:
    # d/dx 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))
    k = math.sqrt(2 / math.pi)
    t = math.tanh(k * (x + 0.044715 * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)


@pytest.mark.parametrize(("mode", "f"), [("none", gelu_none), ("tanh", gelu_tanh)])
def test_gelu_backward_v2_example(mode, f):
    xs = [0.0, 1.0, -1.0, 2.0, -3.0]
    args = {
        "gradOutput": tensor([1.0, 1.0, 1.0, 1.0, 2.0], "FLOAT"),
        "self": tensor(xs, "FLOAT"),
        "approximate": mode,
        "gradInput": tensor([9] * 5, "FLOAT"),
    }
    got = run("gelu_backward_v2", "atlas-inference", args, "gradInput")
    expected = [f(x) * g for x, g in zip(xs, [1, 1, 1, 1, 2], strict=True)]
    assert got[0] == 0.5  # x = 0: exactly 1/2 in both modes
    np.testing.assert_allclose(got, expected, rtol=2.5e-7, atol=0)
    # spot values: none 1.0833155 / -0.0833155; tanh 1.0829641 / -0.0829641
    assert abs(float(got[1]) - (1.0833155 if mode == "none" else 1.0829641)) < 1e-6


def test_gelu_backward_v2_mixed_dtypes():
    # FLOAT16 gradOutput and FLOAT self promote to FLOAT; gradInput is FLOAT
    args = {
        "gradOutput": tensor([2.0], "FLOAT16"),
        "self": tensor([1.0], "FLOAT"),
        "approximate": "none",
        "gradInput": tensor([0.0], "FLOAT"),
    }
    got = run("gelu_backward_v2", "atlas-training", args, "gradInput")
    np.testing.assert_allclose(got, [2 * gelu_none(1.0)], rtol=1.2e-7, atol=0)
