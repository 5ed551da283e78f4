"""aclnnEluBackward, from seed 004 and aclnn-facts.md §6 (interface: tests/oracles/__init__.py).

facts §6.4: x > 0 -> gradOutput * scale; x <= 0 -> gradOutput * inputScale * (x + alpha * scale)
when isResult, gradOutput * inputScale * alpha * scale * exp(x * inputScale) otherwise.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np

from tests.oracles._common import (
    A2,
    A3,
    A950,
    COMPLEX,
    INFER,
    INVALID,
    NULLPTR,
    OK,
    REAL_SCALARS,
    TRAIN,
    F,
    Regression,
    Scalar,
    bf16_if_a2,
    equal_shape_cases,
    pos,
)

X = "selfOrResult"
OUT = "gradInput"
PRODUCTS = (INFER, TRAIN, A2, A3, A950)

# -- the formula ---------------------------------------------------------------------------------

DTYPES = ("FLOAT", "FLOAT16", "BF16")


def factor(x: float, s: dict):
    alpha, scale, iscale = (mpmath.mpf(s[k]) for k in ("alpha", "scale", "inputScale"))
    if math.isnan(x) or x > 0:
        return "positive", scale
    if s["isResult"]:
        if math.isinf(x):
            return "result-nonpositive", -math.inf * float(iscale)
        return "result-nonpositive", iscale * (mpmath.mpf(x) + alpha * scale)
    if math.isinf(x):
        if iscale <= 0:
            raise NotImplementedError("x = -inf needs inputScale > 0 in the oracle")
        return "input-nonpositive", mpmath.mpf(0)
    return "input-nonpositive", iscale * alpha * scale * mpmath.exp(mpmath.mpf(x) * iscale)


BRANCHES = {
    "result-nonpositive": (
        [
            {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": True},
            {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": True},
            {"alpha": 0.3, "scale": 2.0, "inputScale": 1.7, "isResult": True},
        ],
        lambda rng, n, s: np.where(
            rng.random(n) < 0.7, rng.uniform(-3, 0, n), -pos(rng, n, -30, 2)
        ),
    ),
    "input-nonpositive": (
        [
            {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": False},
            {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": False},
            {"alpha": -0.6, "scale": 2.0, "inputScale": 1.7, "isResult": False},
        ],
        lambda rng, n, s: np.where(
            rng.random(n) < 0.7, rng.uniform(-30, 0, n), -pos(rng, n, -30, 7)
        ),
    ),
    "positive": (
        [
            {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": True},
            {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": False},
        ],
        lambda rng, n, s: pos(rng, n, -30, 10),
    ),
}

SPECIAL_SETTINGS = [
    {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": True},
    {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": False},
    {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": True},
    {"alpha": -0.6, "scale": 2.0, "inputScale": 1.7, "isResult": False},
]


def special_x(s: dict, dtype: str, neighbours) -> list[float]:
    return neighbours(-s["alpha"] * s["scale"], dtype) + [-200.0, -100.0]


SPECIAL_POINTS = {
    "x-zero": ({}, lambda s: 0.0),
    "x-tiny-positive": ({}, lambda s: 6e-8),
    "x-minus-alpha-scale": (
        {"isResult": True, "alpha": 0.5, "scale": 2.0},
        lambda s: -s["alpha"] * s["scale"],
    ),
    "x-very-negative": ({}, lambda s: -200.0),
}

MIXED = [
    ("FLOAT", "FLOAT", "FLOAT16",
     {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": False}),
]  # fmt: skip

REGRESSIONS = [
    # alpha*scale = 1549/2^10 * 10831/2^13 = 2 + 3*2^-23: the midpoint of 2 + 2^-22 (odd
    # mantissa) and 2 + 2^-21. x = -2^-100 moves the exact value just below it, so the correctly
    # rounded result is 2 + 2^-22; float64 loses the 2^-100 and the tie goes to 2 + 2^-21.
    Regression(
        "f32-double-rounding", "FLOAT", -(2.0**-100), 1.0,
        {"alpha": 1549 / 1024, "scale": 10831 / 8192, "inputScale": 1.0, "isResult": True},
        expect=2 + 2**-22,
    ),
]  # fmt: skip

# -- error rules ---------------------------------------------------------------------------------

NULLABLE = ["gradOutput", "alpha", "scale", "inputScale", "selfOrResult", "gradInput"]


def allowed(param: str, product: str) -> set[str]:
    """seed 004: every tensor FLOAT, FLOAT16 (+ BF16 on Atlas A2)."""
    return bf16_if_a2(product, ["FLOAT", "FLOAT16"])


def base_scalars() -> dict:
    return {
        "alpha": Scalar("FLOAT", 1.0),
        "scale": Scalar("FLOAT", 1.0),
        "inputScale": Scalar("FLOAT", 1.0),
        "isResult": False,
    }


# alpha, scale and inputScale: "可转换为FLOAT的数据类型" (only complex is rejected)
SCALAR_RULES = [(["alpha", "scale", "inputScale"], "scalar-castable", COMPLEX)]


def dtype_case(key: str, param: str, dtype: str) -> tuple[str, dict]:
    if key == "g":  # dtype-same (gradOutput == selfOrResult) comes first: change both
        return f"dtype-{param}", {"g": dtype, "x": dtype}
    if key == "x":  # selfOrResult alone differs from gradOutput
        return "dtype-same", {"x": dtype}
    return f"dtype-{param}", {key: dtype}


def error_cases(case) -> None:
    # gradOutput and selfOrResult identical, gradInput castable from gradOutput
    case(TRAIN, "f32-f16-mixed", INVALID, "dtype-same", x="FLOAT16")
    case(TRAIN, "f32-to-f16-out", OK, o="FLOAT16")
    case(A2, "bf16-to-f32-out", OK, g="BF16", x="BF16", o=F)
    # equal shapes, no broadcasting; elu checks shapes before ranks (facts §6.1)
    equal_shape_cases(case, PRODUCTS[-1], "shape-equal", "shape-equal")
    # "如果isResult为true, alpha必须大于等于0"
    for v, bad in ((-1.0, True), (-0.001, True), (-0.0, False), (0.0, False), (2.0, False),
                   (float("nan"), False)):  # fmt: skip
        s = Scalar(F, v)
        if bad:
            case(A2, f"isResult-alpha-{v}", INVALID, "alpha-nonneg-if-result", isResult=True,
                 alpha=s)  # fmt: skip
        else:
            case(A2, f"isResult-alpha-{v}", OK, isResult=True, alpha=s)
    case(A2, "not-result-negative-alpha", OK, alpha=Scalar(F, -1.0))
    case(A2, "isResult-alpha-int32-neg", INVALID, "alpha-nonneg-if-result", isResult=True,
         alpha=Scalar("INT32", -2))  # fmt: skip
    case(A2, "isResult-negative-scales-ok", OK, isResult=True, scale=Scalar(F, -1.0),
         inputScale=Scalar(F, -2.0))  # fmt: skip
    # empty tensors: shapes must still match
    case(A2, "empty-shapes-differ", INVALID, "shape-equal", gs=(0,), xs=(2,), os=(0,))
    case(A2, "empty-alpha-negative-isResult", INVALID, "alpha-nonneg-if-result", gs=(0,),
         xs=(0,), os=(0,), isResult=True, alpha=Scalar(F, -1.0))  # fmt: skip
    # two violations: the rule checked first decides
    case(A2, "two-dtype-same-and-shape", INVALID, "dtype-same", x="FLOAT16", xs=(4,))
    case(A2, "two-null-alpha-and-mixed-dtypes", NULLPTR, "null-ptr", x="FLOAT16", alpha=None)
    case(A2, "two-complex-scale-and-int-out", INVALID, "scalar-castable", o="INT32",
         scale=Scalar("COMPLEX128", 1.0))  # fmt: skip
    case(A2, "two-shape-and-negative-alpha", INVALID, "shape-equal", os=(3, 2), isResult=True,
         alpha=Scalar(F, -1.0))  # fmt: skip


UNREACHABLE = {
    "cast-gradInput": "every listed float dtype can be cast to every listed float gradInput dtype",
    # dtype-same makes selfOrResult's dtype gradOutput's, which dtype-gradOutput checks first
    "dtype-selfOrResult": "dtype-same and dtype-gradOutput come first",
}

# -- case generation -----------------------------------------------------------------------------


def dtype_combos(product: str) -> set[tuple[tuple[str, str], ...]]:
    """seed 004: selfOrResult "与gradOutput一致"; gradInput castable."""
    fl = bf16_if_a2(product, ["FLOAT", "FLOAT16"])
    return {
        (("gradOutput", g), ("selfOrResult", g), ("gradInput", gi))
        for g, gi in itertools.product(fl, fl)
    }


def scalar_dtypes(product: str, param: str) -> set[str]:
    return set(REAL_SCALARS)  # "可转换为FLOAT的数据类型"


POINT_VALUES = {"x-zero": 0.0, "x-tiny-positive": 6e-8, "x-minus-alpha-scale": -1.0,
                "x-very-negative": -200.0}  # fmt: skip
