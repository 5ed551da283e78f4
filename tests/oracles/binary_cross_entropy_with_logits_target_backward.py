"""aclnnBinaryCrossEntropyWithLogitsTargetBackward, from ops-nn activation/log_sigmoid/docs/
aclnnBinaryCrossEntropyWithLogitsTargetBackward.md (the backward of BCELoss on logits with respect
to target) and the forward page's loss l = -w [p y log sigma(x) + (1 - y) log(1 - sigma(x))],
differentiated by hand in y: dl/dy = w [log(1 - sigma(x)) - p log sigma(x)]
= w [p log(1 + e^-x) - log(1 + e^x)], times gradOutput; target itself drops out (interface:
tests/oracles/__init__.py, KIND "elementwise"). Reductions none and sum only: the mean's 1/n
depends on the whole shape.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "gradTarget"
INPUTS = ("gradOutput", "self", "target", "weightOptional", "posWeightOptional")
PRODUCTS = ("atlas-a3", "atlas-a2")


def _log_sig(x: float) -> float:
    """log sigma(x) as a float64: -log(1 + e^-x), exact in mpmath for a finite x; 0 at +inf,
    -inf at -inf, NaN at NaN."""
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        return 0.0 if x > 0 else -math.inf
    return float(-mpmath.log1p(mpmath.exp(-mpmath.mpf(x))))


def _float_value(g: float, x: float, w: float, p: float) -> float:
    """An IEEE special among the inputs: the page's two logarithms as float64 values, combined in
    the order g * (log sigma(-x) - p log sigma(x)) * w, so that NaN and the infinities land where
    IEEE arithmetic puts them (0 * inf is NaN)."""
    if math.isfinite(x) and math.isfinite(p):  # the bracket is a finite number: exact, then rounded
        bracket = float(p * mpmath.log1p(mpmath.exp(-mpmath.mpf(x))) - mpmath.log1p(mpmath.exp(x)))
    else:
        ls_neg, ls = _log_sig(-x), _log_sig(x)
        bracket = ls_neg - p * ls
    return g * bracket * w


def value(t: dict, s: dict):
    g, x, w, p = (t[n] for n in ("gradOutput", "self", "weightOptional", "posWeightOptional"))
    if any(isinstance(v, float) for v in (g, x, w, p)):  # a NaN or an infinity among them
        return _float_value(*(float(v) for v in (g, x, w, p)))
    return g * w * (p * mpmath.log1p(mpmath.exp(-x)) - mpmath.log1p(mpmath.exp(x)))


SETTINGS: list[dict] = [{"reduction": 0}, {"reduction": 2}]
DOMAIN = {"gradOutput": (-4.0, 4.0), "self": (-30.0, 30.0), "target": (0.0, 1.0),
          "weightOptional": (-2.0, 2.0), "posWeightOptional": (0.0, 3.0)}  # fmt: skip
SPECIAL = [0.0, 1.0, -1.0, 0.5, 20.0, -20.0, float("inf"), float("-inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """FLOAT16, FLOAT and BFLOAT16 for every tensor on both products the page supports (A2, A3)."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"reduction": 0}
