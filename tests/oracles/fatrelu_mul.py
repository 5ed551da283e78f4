"""aclnnFatreluMul, from ops-nn activation/fatrelu_mul/docs/aclnnFatreluMul.md 计算公式 (KIND
"halves").

x1, x2 the first and second half of input along the last dim; out = Threshold(x1) * x2,
Threshold(x) = 0 if x < threshold, x if x >= threshold; threshold a one-element tensor.
"""

from __future__ import annotations

KIND = "halves"
SPLIT = "input"
DIM = -1  # always the last dim (no dim parameter)
GRAD = None
OUT = "out"
FULL_OUT = False
PRODUCTS = ("atlas-a3", "atlas-a2")
TENSORS = {"threshold": (1,)}  # filled with the setting's threshold
SETTINGS = [{"threshold": 0.0}, {"threshold": 0.5}, {"threshold": -1.0}, {"threshold": 20.0}]


def value(a, b, g, s: dict):
    """The exact output element from the halves' elements a (x1), b (x2)."""
    return (0 if a < s["threshold"] else a) * b


def allowed(param: str, product: str) -> set[str]:
    """input, threshold, out: BFLOAT16, FLOAT16, FLOAT."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {}
