"""aclnnSoftMarginLoss, from ops-nn loss/soft_margin_loss/docs/aclnnSoftMarginLoss.md (interface:
tests/oracles/__init__.py, KIND "loss").

l_n = log(1 + exp(-y_n x_n)) over the broadcast of self and target; reduction 0 keeps them, 1
their mean (the sum over the element count), 2 their sum. Dtypes: FLOAT, FLOAT16 everywhere;
BFLOAT16 on the A2 / A3 / 950 products (the op_api's 910B list).
"""

from __future__ import annotations

import mpmath

from tests.oracles._common import bf16_if_a2

KIND = "loss"
OUT = "out"
INPUTS = ("self", "target")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training", "atlas-inference")
REDUCTION = "reduction"


def element(t: dict, s: dict):
    return mpmath.log(1 + mpmath.exp(-t["target"] * t["self"]))


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-30.0, 30.0), "target": (-2.0, 2.0)}


def allowed(param: str, product: str) -> set[str]:
    return bf16_if_a2(product, ["FLOAT", "FLOAT16"])


def base_scalars() -> dict:
    return {"reduction": 1}
