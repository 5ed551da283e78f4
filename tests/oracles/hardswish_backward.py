"""aclnnHardswishBackward, from ops-nn activation/hard_swish_grad/docs/aclnnHardswishBackward.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

out = gradOutput * gradSelf, gradSelf = 0 for x < -3, x/3 + 0.5 for -3 <= x <= 3, 1 for x > 3.
The doc leaves NaN x out of its three cases; the spec (like the kernel) gives it gradSelf = 1.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("gradOutput", "self")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")  # 310P, 310B: 不支持


def _times(g, f):
    """g * f for an exact factor f, g possibly +-inf or NaN (IEEE rules)."""
    if isinstance(g, float):
        if math.isnan(g) or f == 0:
            return math.nan
        return math.copysign(math.inf, g * float(mpmath.sign(f)))
    return g * f


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    if isinstance(x, float) and math.isnan(x):
        return g  # the "1" case
    if x < -3:
        return _times(g, mpmath.mpf(0))
    if x <= 3:
        if isinstance(g, float):  # +-inf or NaN times the factor
            return _times(g, x / 3 + mpmath.mpf(1) / 2)
        # exactly: g (x / 3 + 1/2) is a dyadic rational, and a rounding tie, whenever 3 divides
        # g's significand times 2x + 3; in binary x / 3 is never exact and would hide the tie
        return Fraction(float(g)) * (Fraction(float(x)) / 3 + Fraction(1, 2))
    return g


SETTINGS: list[dict] = [{}]
DOMAIN = {"gradOutput": (-10.0, 10.0), "self": (-5.0, 5.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.5, 3.0, -3.0, 2.9990234375, -2.9990234375, 3.0009765625,
           -3.0009765625, 1e30, 1e-30, float("inf"), float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, out: BFLOAT16, FLOAT16, FLOAT32; Atlas 训练系列产品 FLOAT16, FLOAT32."""
    base = {"FLOAT", "FLOAT16"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {}
