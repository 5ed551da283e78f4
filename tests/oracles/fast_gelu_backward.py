"""aclnnFastGeluBackward, from ops-nn activation/fast_gelu_grad/docs/aclnnFastGeluBackward.md
(interface: specs notes, KIND "elementwise").

dx = dy * ((1/(e^(-1.702x) + 1) - 1) * -1.702x + 1) * 1/(e^(-1.702x) + 1).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "self")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")

K = mpmath.mpf("1.702")


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    if mpmath.isnan(g) or mpmath.isnan(x) or mpmath.isinf(x):
        return math.nan  # x = +inf: 0 * -inf; x = -inf: inf * 0 in the doc's formula
    sig = 1 / (mpmath.exp(-K * x) + 1)
    # (sig - 1) * -Kx == Kx / (1 + e^(Kx)): the same number without the 1 - sig cancellation
    # for x >> 0 (the sum with 1 still cancels near the root x ~ -0.7512, as it must)
    f = (K * x / (1 + mpmath.exp(K * x)) + 1) * sig
    if mpmath.isinf(g):
        return math.nan if f == 0 else math.copysign(math.inf, float(mpmath.sign(g * f)))
    return g * f


SETTINGS: list[dict] = [{}]
DOMAIN = {"gradOutput": (-10.0, 10.0), "self": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, -0.7512, 20.0, -20.0, -60.0, 1e-30, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, gradInput: FLOAT16, FLOAT32, BFLOAT16 (every listed product)."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {}
