"""aclnnKlDivTargetBackward, from ops-nn loss/kl_div_target_loss_grad/docs/
aclnnKlDivTargetBackward.md 计算公式: gradTarget = gradOutput (log(target) - self + 1), or
gradOutput e^target (target - self + 1) with logTarget (interface: tests/oracles/__init__.py, KIND
"elementwise"). Reductions none, sum and an unlisted value (the op_api treats it as none) only:
the mean's and batchmean's divisors depend on the whole shape.
"""

from __future__ import annotations

import mpmath
import numpy as np

KIND = "elementwise"
OUT = "gradTarget"
INPUTS = ("gradOutput", "self", "target")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")


def value(t: dict, s: dict):
    g, x, y = t["gradOutput"], t["self"], t["target"]
    if any(isinstance(v, float) for v in (g, x, y)):  # an IEEE special: float64 arithmetic
        with np.errstate(all="ignore"):
            gf, xf, yf = np.float64(g), np.float64(x), np.float64(y)
            if s["logTarget"]:
                return float(gf * np.exp(yf) * (yf - xf + 1))
            return float(gf * (np.log(yf) - xf + 1))
    if s["logTarget"]:
        return g * mpmath.exp(y) * (y - x + 1)
    if y < 0:
        return float("nan")  # the log of a negative target
    if y == 0:  # log(0) = -inf: an infinity of g's opposite sign (NaN for g = 0)
        return float("nan") if g == 0 else (float("-inf") if g > 0 else float("inf"))
    return g * (mpmath.log(y) - x + 1)


SETTINGS: list[dict] = [
    {"reduction": r, "logTarget": lt} for r in (0, 2) for lt in (False, True)
] + [{"reduction": 7, "logTarget": False}]
DOMAIN = {"gradOutput": (-4.0, 4.0), "self": (-3.0, 3.0), "target": (0.0, 3.0)}
# 1e-30 is left out: target - self + 1 at target -1, self 1e-30 cancels in float64, and the
# reference engine (tier 1 flags only float64 values near a FLOAT midpoint) returns -0 where the
# exact value is 3.7e-31 (tests/test_kl_div.py::test_cancellation_of_three_terms_is_misrounded)
SPECIAL = [0.0, 1.0, -1.0, 100.0, -100.0, float("inf"), float("-inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """FLOAT, FLOAT16, BFLOAT16 on every product the page lists (A2, A3, Ascend 950)."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"reduction": 0, "logTarget": False}
