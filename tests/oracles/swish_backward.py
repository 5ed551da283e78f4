"""aclnnSwishBackward, from ops-nn activation/swish_grad/docs/aclnnSwishBackward.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

gradInput = gradOutput * s'(x), s'(x) = sigma(bx) * (1 + bx (1 - sigma(bx))), b = betaOptional.
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "self")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def _ds(z):
    """s'(x) / 1 as a function of z = beta x: sigma(z) (1 + z sigma(-z))."""
    return (1 + z / (1 + mpmath.exp(z))) / (1 + mpmath.exp(-z))


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    beta = mpmath.mpf(s["betaOptional"])
    if isinstance(x, float):
        # NaN; beta x = +-inf: 1 + inf - inf or 0 * (1 - inf); beta = 0: 0 * inf. All NaN.
        return math.nan
    f = _ds(beta * x)
    if isinstance(g, float):
        if math.isnan(g) or f == 0:
            return math.nan
        return math.copysign(math.inf, g * float(mpmath.sign(f)))
    return g * f


SETTINGS: list[dict] = [
    {"betaOptional": 1.0},
    {"betaOptional": 0.0},
    {"betaOptional": -1.5},
    {"betaOptional": 1.702},
]
DOMAIN = {"gradOutput": (-10.0, 10.0), "self": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, -1.2784645, 30.0, -30.0, -100.0, 1e-30, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, gradInput: BFLOAT16, FLOAT16, FLOAT; Atlas 推理/训练系列产品 no
    BFLOAT16."""
    base = {"FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {"betaOptional": Scalar("FLOAT", 1.0)}
