"""aclnnSmoothL1Loss, from ops-nn loss/smooth_l1_loss_v2/docs/aclnnSmoothL1Loss.md (interface:
tests/oracles/__init__.py, KIND "loss").

l_n = 0.5 (x_n - y_n)^2 / beta where |x_n - y_n| < beta, else |x_n - y_n| - 0.5 beta, over the
broadcast of self and target; reduction 0 keeps them, 1 their mean, 2 their sum. beta is a C
`float` in the prototype (`float beta`): the library computes with beta rounded to float32, so
0.1 stands for 13421773 * 2^-27 here (written out, not computed by the code under test).
Dtypes: FLOAT, FLOAT16 everywhere; BFLOAT16 on the A2 / A3 / 950 products (DAV_2201, regbase).
"""

from __future__ import annotations

import mpmath

from tests.oracles._common import bf16_if_a2

KIND = "loss"
OUT = "result"
INPUTS = ("self", "target")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")
REDUCTION = "reduction"
FLOAT32_BETA = {
    0.1: mpmath.mpf(13421773) * mpmath.mpf(2) ** -27,
    1.0: mpmath.mpf(1),
    0.0: mpmath.mpf(0),
}


def element(t: dict, s: dict):
    d = t["self"] - t["target"]
    beta = FLOAT32_BETA[float(s["beta"])]
    if abs(d) < beta:
        return d * d / (2 * beta)
    return abs(d) - beta / 2


SETTINGS: list[dict] = [{"beta": 1.0}, {"beta": 0.1}, {"beta": 0.0}]
DOMAIN = {"self": (-2.0, 2.0), "target": (-2.0, 2.0)}


def allowed(param: str, product: str) -> set[str]:
    return bf16_if_a2(product, ["FLOAT", "FLOAT16"])


def base_scalars() -> dict:
    return {"reduction": 1, "beta": 1.0}
