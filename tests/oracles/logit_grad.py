"""aclnnLogitGrad, from ops-nn loss/logit_grad/docs/aclnnLogitGrad.md and its kernel's select
rule (interface: tests/oracles/__init__.py, KIND "elementwise").

lo = eps if eps >= 0 else 0; dx = dy / (x (1 - x)) where lo <= x <= 1 - lo, else 0 (eps >= 0,
also for a NaN x) or NaN (eps < 0).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("x", "dy")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")  # 310B, 310P, 910: 不支持


def value(t: dict, s: dict):
    x, dy, eps = t["x"], t["dy"], s["eps"]
    lo = mpmath.mpf(eps) if eps >= 0 else mpmath.mpf(0)
    inside = not (isinstance(x, float) and math.isnan(x)) and lo <= x <= 1 - lo
    if not inside:
        return 0.0 if eps >= 0 else math.nan
    d = x * (1 - x)  # exact, >= 0: x is in [0, 1]
    if isinstance(dy, float):  # NaN or +-inf: inf / d keeps its sign for d >= 0
        return dy
    if d == 0:
        if dy == 0:
            return math.nan
        # x = +0 or 1: d = +0 (x = -0 gives -0, which the exact arithmetic does not see)
        return math.inf if dy > 0 else -math.inf
    return dy / d


SETTINGS: list[dict] = [{"eps": -1.0}, {"eps": 0.0}, {"eps": 0.25}]
DOMAIN = {"x": (-0.25, 1.25), "dy": (-10.0, 10.0)}
SPECIAL = [0.0, 1.0, 0.5, 0.25, 0.75, 1e-30, 1.5, -0.5, float("inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """x, dy and out: BFLOAT16, FLOAT16, FLOAT on every listed product."""
    return {"BF16", "FLOAT16", "FLOAT"}


def base_scalars() -> dict:
    return {"eps": -1.0}
