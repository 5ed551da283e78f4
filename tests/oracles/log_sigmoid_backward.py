"""aclnnLogSigmoidBackward, from ops-nn activation/logsigmoid_grad/docs/aclnnLogSigmoidBackward.md
(interface: specs notes, KIND "elementwise").

gradInput = gradOutput * 1 / (1 + e^x); buffer is "暂不使用" (not used): value() ignores it.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "self", "buffer")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    if mpmath.isnan(g) or mpmath.isnan(x):
        return math.nan
    f = 1 / (1 + mpmath.exp(x))  # x = +-inf: 1/(1 + inf) = 0, 1/(1 + 0) = 1 (mpmath's IEEE limits)
    if mpmath.isinf(g):
        return math.nan if f == 0 else float(g)  # f > 0: the sign is g's
    return g * f


SETTINGS: list[dict] = [{}]
DOMAIN = {"gradOutput": (-10.0, 10.0), "self": (-20.0, 20.0), "buffer": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 20.0, 100.0, -20.0, 1e-30, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, buffer, gradInput: FLOAT, FLOAT16, BFLOAT16; Atlas inference/training
    FLOAT, FLOAT16."""
    base = {"FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {}
