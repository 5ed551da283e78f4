"""aclnnSeluBackward, from ops-nn activation/selu_grad/docs/aclnnSeluBackward.md and the
aclnnSelu page's forward (interface: tests/oracles/__init__.py, KIND "elementwise").

The op takes y = selu(x). Differentiating the forward scale * (max(0, x) + min(0, alpha (e^x - 1))):
dy/dx = scale for x > 0 (y > 0), scale alpha e^x = y + scale alpha for x <= 0 (y <= 0);
gradInput = gradOutput * dy/dx. A NaN y is not <= 0: the kernel's select takes the scale side.
The constants are the page's, multiplied here in mpmath.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "result")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")

ALPHA = mpmath.mpf("1.6732632423543772848170429916717")
SCALE = mpmath.mpf("1.0507009873554804934193349852946")


def value(t: dict, s: dict):
    g, y = t["gradOutput"], t["result"]
    nan_y = isinstance(y, float) and math.isnan(y)
    if nan_y or y > 0:
        f = SCALE
    elif isinstance(y, float):  # -inf
        f = -math.inf
    else:
        f = y + SCALE * ALPHA
    if isinstance(g, float) or isinstance(f, float):  # an IEEE special on either side
        return float(g) * float(f)
    return g * f


SETTINGS: list[dict] = [{}]
DOMAIN = {"gradOutput": (-3.0, 3.0), "result": (-1.7580993, 4.0)}
SPECIAL = [0.0, -0.0, 6e-8, -6e-8, -1.7580993408473768, -1.0, 1.0, 65504.0, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, result, gradInput: FLOAT, FLOAT16, INT32, INT8, BFLOAT16 (Atlas 推理系列产品,
    Atlas 训练系列产品: no BFLOAT16)."""
    base = {"FLOAT", "FLOAT16", "INT32", "INT8"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {}
