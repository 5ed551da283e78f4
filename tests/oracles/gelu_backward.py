"""aclnnGeluBackward, from ops-nn activation/gelu_grad/docs/aclnnGeluBackward.md (interface: specs
notes, KIND "elementwise").

gradInput = gradOutput * (1/2 + 1/2 erf(x/sqrt2) + x/sqrt(2 pi) e^(-x^2/2)), the doc's formula.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "self")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def _factor(x):
    # 1/2 + 1/2 erf(x/sqrt2) == 1/2 erfc(-x/sqrt2): the same number without cancellation
    return mpmath.erfc(-x / mpmath.sqrt(2)) / 2 + x / mpmath.sqrt(2 * mpmath.pi) * mpmath.exp(
        -x * x / 2
    )


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    if mpmath.isnan(g) or mpmath.isnan(x) or mpmath.isinf(x):
        return math.nan  # x = +-inf: x * e^(-x^2/2) is inf * 0 in the doc's formula
    f = _factor(x)
    if mpmath.isinf(g):
        return math.nan if f == 0 else math.copysign(math.inf, float(mpmath.sign(g * f)))
    return g * f


SETTINGS: list[dict] = [{}]
DOMAIN = {"gradOutput": (-10.0, 10.0), "self": (-8.0, 8.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, -0.75, 12.0, -12.0, 1e-30, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, gradInput: FLOAT, FLOAT16, BFLOAT16; Atlas inference/training FLOAT,
    FLOAT16."""
    base = {"FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {}
