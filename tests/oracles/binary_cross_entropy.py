"""aclnnBinaryCrossEntropy, from ops-nn loss/binary_cross_entropy/docs/aclnnBinaryCrossEntropy.md
(l = -w (y log x + (1 - y) log(1 - x))) and its kernel's clamp of each log below at -100
(interface: tests/oracles/__init__.py, KIND "elementwise"). Reduction none only: mean and sum
are one scalar of the whole tensor (tests/test_nulldefault.py checks them with math.fsum).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("self", "target", "weight")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def _clamped_log(v):
    """max(log v, -100): log 0 = -inf and tiny v clamp to -100; a negative v has no real log."""
    if v < 0:
        return math.nan
    if v == 0:
        return mpmath.mpf(-100)
    return max(mpmath.log(v), mpmath.mpf(-100))


def value(t: dict, s: dict):
    x, y, w = t["self"], t["target"], t["weight"]
    if any(isinstance(v, float) for v in (x, y, w)):  # NaN or an infinity: float64 semantics
        xf, yf, wf = float(x), float(y), float(w)
        lx = (
            -100.0
            if xf == 0
            else (math.nan if xf < 0 or math.isnan(xf) else max(math.log(xf), -100.0))
        )
        ly = 1 - xf
        l1x = (
            -100.0
            if ly == 0
            else (math.nan if ly < 0 or math.isnan(ly) else max(math.log(ly), -100.0))
        )
        return -wf * (yf * lx + (1 - yf) * l1x)
    lx, l1x = _clamped_log(x), _clamped_log(1 - x)
    if isinstance(lx, float) or isinstance(l1x, float):
        return math.nan
    return -w * (y * lx + (1 - y) * l1x)


SETTINGS: list[dict] = [{"reduction": 0}]
DOMAIN = {"self": (0.0, 1.0), "target": (0.0, 1.0), "weight": (-2.0, 2.0)}
SPECIAL = [0.0, 1.0, 0.5, 1e-30, 1 - 2**-20, 2**-20]


def allowed(param: str, product: str) -> set[str]:
    """FLOAT16, FLOAT and BFLOAT16; no BFLOAT16 on Atlas 推理系列产品 / 训练系列产品."""
    base = {"FLOAT", "FLOAT16"}
    return base | ({"BF16"} if product in ("ascend950", "atlas-a3", "atlas-a2") else set())


def base_scalars() -> dict:
    return {"reduction": 0}
