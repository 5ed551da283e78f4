"""aclnnGelu, from ops-nn activation/gelu/docs/aclnnGelu.md (interface: specs notes, KIND
"elementwise").

out = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), the doc's only formula.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    x = t["self"]
    if mpmath.isnan(x):
        return math.nan
    if mpmath.isinf(x):
        # +inf: inf * (1 + 1) = inf; -inf: -inf * (1 + tanh(-inf)) = -inf * 0, NaN
        return math.inf if x > 0 else math.nan
    u = mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)
    # 0.5 x (1 + tanh u) == x / (1 + e^(-2u)): the same number, without the cancellation of
    # 1 + tanh u for x << 0 at the working precision
    return x / (1 + mpmath.exp(-2 * u))


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 12.0, -12.0, -30.0, 30.0, 1e-30, -1e-30, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, BFLOAT16; Atlas inference/training FLOAT, FLOAT16."""
    base = {"FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {}
