"""aclnnSigmoidBackward, from ops-nn activation/sigmoid_grad/docs/aclnnSigmoidBackward.md
(interface: specs notes, KIND "elementwise").

grad_input = grad_output * sigma(x) * (1 - sigma(x)), sigma(x) being the `output` tensor.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "output")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    g, y = t["gradOutput"], t["output"]
    if mpmath.isnan(g) or mpmath.isnan(y):
        return math.nan
    if mpmath.isinf(g) or mpmath.isinf(y):
        # IEEE products: a zero factor against an infinite one is NaN, else the sign decides
        fs = [float(g), float(y), float(1 - y)]
        if 0.0 in fs:
            return math.nan
        return math.copysign(math.inf, math.prod(math.copysign(1.0, f) for f in fs))
    return g * y * (1 - y)


SETTINGS: list[dict] = [{}]
DOMAIN = {"gradOutput": (-10.0, 10.0), "output": (0.0, 1.0)}
SPECIAL = [0.0, -0.0, 0.5, 1.0, 0.99951171875, 1e-30, -1.0, 2.0, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, output, gradInput: FLOAT, FLOAT16, BFLOAT16, DOUBLE, COMPLEX64, COMPLEX128;
    Atlas inference/training without BFLOAT16."""
    base = {"FLOAT", "FLOAT16", "DOUBLE", "COMPLEX64", "COMPLEX128"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {}
