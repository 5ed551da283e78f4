"""aclnnKlDivBackward, from ops-nn loss/kl_div_loss_grad/docs/aclnnKlDivBackward.md (the backward
of aclnnKlDiv, whose loss is target (log target - self), or e^target (target - self) with
logTarget): its derivative in self, -target gradOutput or -e^target gradOutput (interface:
tests/oracles/__init__.py, KIND "elementwise"). Reductions none, sum and an unlisted value (the
op_api treats it as none) only: the mean's and batchmean's divisors depend on the whole shape.
"""

from __future__ import annotations

import mpmath
import numpy as np

KIND = "elementwise"
OUT = "out"
INPUTS = ("gradOutput", "self", "target")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")


def value(t: dict, s: dict):
    g, y = t["gradOutput"], t["target"]
    if any(isinstance(v, float) for v in (g, y)):  # an IEEE special: float64 arithmetic
        with np.errstate(all="ignore"):
            gf, yf = np.float64(g), np.float64(y)
            return float(-np.exp(yf) * gf if s["logTarget"] else -yf * gf)
    return -mpmath.exp(y) * g if s["logTarget"] else -y * g


SETTINGS: list[dict] = [
    {"reduction": r, "logTarget": lt} for r in (0, 2) for lt in (False, True)
] + [{"reduction": 7, "logTarget": True}]
DOMAIN = {"gradOutput": (-4.0, 4.0), "self": (-3.0, 3.0), "target": (-3.0, 3.0)}
SPECIAL = [0.0, 1.0, -1.0, 1e-30, 100.0, -100.0, float("inf"), float("-inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """FLOAT, FLOAT16, BFLOAT16 on every product the page lists (A2, A3, Ascend 950)."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"reduction": 0, "logTarget": False}
