"""aclnnBinaryCrossEntropyBackward, from ops-nn loss/binary_cross_entropy_grad/docs/
aclnnBinaryCrossEntropyBackward.md (out = grad * weight * (x - y) / (x (1 - x))) and its
kernel's clamp of the denominator at 1e-12 (interface: tests/oracles/__init__.py, KIND
"elementwise"). Reductions none and sum only: the mean's 1/n depends on the whole shape, which
one element does not see (tests/test_nulldefault.py checks it by hand).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("gradOutput", "self", "target", "weightOptional")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")
EPS = mpmath.mpf(1e-12)  # the kernel's Maxs(1e-12, ...) constant, as the float64 1e-12


def value(t: dict, s: dict):
    g, x, y, w = (t[n] for n in INPUTS)
    if any(isinstance(v, float) for v in (g, x, y, w)):  # a NaN or an infinity among them
        gf, xf, yf, wf = (float(v) for v in (g, x, y, w))
        d = xf * (1 - xf)  # -inf for x = +-inf; NaN for a NaN x
        m = d if d > 1e-12 else 1e-12  # max(d, 1e-12); a NaN d: NaN is not > eps ...
        if math.isnan(xf):
            return math.nan
        # sign and inf/NaN/zero of a product do not depend on its order; finite float32
        # factors cannot overflow or underflow float64 here
        return gf * wf * (xf - yf) / m
    d = x * (1 - x)
    m = d if d > EPS else EPS
    return g * w * (x - y) / m


SETTINGS: list[dict] = [{"reduction": 0}, {"reduction": 2}]
DOMAIN = {"gradOutput": (-4.0, 4.0), "self": (-0.25, 1.25), "target": (0.0, 1.0),
          "weightOptional": (-2.0, 2.0)}  # fmt: skip
SPECIAL = [0.0, 1.0, 0.5, 1e-7, 1 - 2**-20, -0.5, 2.0, float("inf"), float("-inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """FLOAT, FLOAT16 and BFLOAT16 on the page; the op_api's BF16 only with the 910B list (A2,
    A3, Ascend 950), not on Atlas inference / training."""
    base = {"FLOAT", "FLOAT16"}
    return base | ({"BF16"} if product in ("ascend950", "atlas-a3", "atlas-a2") else set())


def base_scalars() -> dict:
    return {"reduction": 0}
