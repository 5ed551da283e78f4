"""aclnnL1Loss, from ops-nn loss/lp_loss/docs/aclnnL1Loss.md (interface: tests/oracles/__init__.py,
KIND "loss").

l_n = |x_n - y_n| over the broadcast of self and target; reduction 0 keeps them, 1 their mean,
2 their sum. Float dtypes: FLOAT, FLOAT16 everywhere; BFLOAT16 on Atlas A2 and A3 only (the
op_api's ASCEND910B..ASCEND910E list, not Ascend 950). The INT64 path is left to the op-generic
tests (this interface checks the float dtypes).
"""

from __future__ import annotations

KIND = "loss"
OUT = "out"
INPUTS = ("self", "target")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")
REDUCTION = "reduction"


def element(t: dict, s: dict):
    return abs(t["self"] - t["target"])


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-1000.0, 1000.0), "target": (-2.0, 2.0)}


def allowed(param: str, product: str) -> set[str]:
    base = {"FLOAT", "FLOAT16", "INT64"}
    return base | ({"BF16"} if product in ("atlas-a3", "atlas-a2") else set())


def base_scalars() -> dict:
    return {"reduction": 1}
