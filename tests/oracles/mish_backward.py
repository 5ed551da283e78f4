"""aclnnMishBackward, from ops-nn activation/mish_grad/docs/aclnnMishBackward.md and the forward
doc activation/mish/docs/aclnnMish&aclnnInplaceMish.md (interface: tests/oracles/__init__.py,
KIND "elementwise").

The backward doc has no formula: gradInput = gradOutput * d/dx [x tanh(sp(x))]
= gradOutput * (tanh(sp(x)) + x sech^2(sp(x)) sigmoid(x)), sp(x) = ln(1 + e^x).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "self")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def _dmish(x):
    sp = mpmath.log(1 + mpmath.exp(x))
    return mpmath.tanh(sp) + x * mpmath.sech(sp) ** 2 / (1 + mpmath.exp(-x))


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    if isinstance(x, float):
        # NaN; x = +inf: 1 + inf * 0; x = -inf: 0 + (-inf) * 1 * 0. All NaN.
        return math.nan
    f = _dmish(x)
    if isinstance(g, float):
        if math.isnan(g) or f == 0:
            return math.nan
        return math.copysign(math.inf, g * float(mpmath.sign(f)))
    return g * f


SETTINGS: list[dict] = [{}]
DOMAIN = {"gradOutput": (-10.0, 10.0), "self": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, -1.1924, 30.0, -30.0, -100.0, 1e-30, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, gradInput: BFLOAT16, FLOAT16, FLOAT32; Atlas 训练系列产品 FLOAT16,
    FLOAT32 (Atlas 推理系列产品 is not restricted by the doc)."""
    base = {"FLOAT", "FLOAT16"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {}
