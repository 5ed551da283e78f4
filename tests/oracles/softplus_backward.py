"""aclnnSoftplusBackward, from seed 002 and aclnn-facts.md §4 (interface:
tests/oracles/__init__.py).

seed 002: gradOutput * (1 / (1 + e^(-beta*self)) if beta*self <= threshold; 1 otherwise).
"""

from __future__ import annotations

import itertools
import math

import mpmath

from tests.oracles._common import (
    A2,
    A3,
    A950,
    COMPLEX,
    INVALID,
    OK,
    ONE,
    R9,
    REAL_SCALARS,
    TRAIN,
    Regression,
    Scalar,
    bf16_if_a2,
    equal_shape_cases,
    pos,
)

X = "self"
OUT = "gradInput"
PRODUCTS = (TRAIN, A2, A3, A950)

# -- the formula ---------------------------------------------------------------------------------

DTYPES = ("FLOAT", "FLOAT16", "BF16", "DOUBLE")


def factor(x: float, s: dict):
    beta, thr = s["beta"], s["threshold"]
    if math.isnan(x):
        return "sigmoid", math.nan
    if math.isinf(x):
        if beta == 0:
            raise NotImplementedError("beta = 0 with x = inf is not an oracle case")
        bx_inf = (beta > 0) == (x > 0)
        return ("linear", ONE) if bx_inf else ("sigmoid", mpmath.mpf(0))
    bx = mpmath.mpf(beta) * mpmath.mpf(x)  # exact (at most 77 significant bits)
    if bx > thr:
        return "linear", ONE
    return "sigmoid", 1 / (1 + mpmath.exp(-bx))


SETTINGS = [
    {"beta": 1.0, "threshold": 20.0},
    {"beta": 2.0, "threshold": 3.0},
    {"beta": 0.7, "threshold": 5.0},
]
BRANCHES = {
    "linear": (
        SETTINGS,
        lambda rng, n, s: s["threshold"] / s["beta"] * (1 + pos(rng, n, -9, 3)),
    ),
    "sigmoid": (
        SETTINGS,
        lambda rng, n, s: rng.uniform(-40, s["threshold"], n) / s["beta"],
    ),
}

SPECIAL_SETTINGS = SETTINGS


def special_x(s: dict, dtype: str, neighbours) -> list[float]:
    exact = s["threshold"] / s["beta"]  # float64 quotient; the neighbours bracket the tie
    return neighbours(exact, dtype) + [-1000.0, 88.0, -88.0]


SPECIAL_POINTS = {
    "at-threshold": ({}, lambda s: s["threshold"] / s["beta"]),
    "at-threshold-beta2": ({"beta": 2.0, "threshold": 3.0}, lambda s: s["threshold"] / s["beta"]),
    "above-threshold": ({}, lambda s: s["threshold"] / s["beta"] + 1),
    "x-zero": ({}, lambda s: 0.0),
    "beta-zero": ({"beta": 0.0}, lambda s: 3.0),
    "x-very-negative": ({}, lambda s: -1000.0),
}

MIXED = [
    ("FLOAT", "FLOAT16", "BF16", {"beta": 2.0, "threshold": 3.0}),
    ("FLOAT16", "FLOAT", "FLOAT16", {"beta": 0.7, "threshold": 5.0}),
]

REGRESSIONS = [
    # factor(x) = 1/2 + O(x) > 1/2 for a tiny x > 0; g = the smallest subnormal: the exact
    # product is just above half the smallest subnormal and rounds up to it. float64 holds
    # the factor as exactly 1/2, the tie rounds to even: the engine gave 0.
    Regression(
        "f32-subnormal-g-times-half", "FLOAT", 1e-38, 2.0**-149, {"beta": 1.0, "threshold": 20.0}
    ),  # fmt: skip
    # 3 * 0.33333333333333337 > 1 exactly (linear branch: g), but 3.0 * x == 1.0 in float64.
    Regression(
        "f64-branch-uses-rounded-product",
        "DOUBLE",
        0.33333333333333337,
        1.0,
        {"beta": 3.0, "threshold": 1.0},
        expect=1.0,
        branch="linear",
    ),  # fmt: skip
    Regression(
        "f64-inexact-beta",
        "DOUBLE",
        -37.15576715343177,
        -3.552500056563961,
        {"beta": 0.7, "threshold": 5.0},
    ),  # fmt: skip
    Regression("f64-exp-overflow", "DOUBLE", -720.0, 1e10, {"beta": 1.0, "threshold": 20.0}),
]

# -- error rules ---------------------------------------------------------------------------------

NULLABLE = ["gradOutput", "self", "beta", "threshold", "gradInput"]


def allowed(param: str, product: str) -> set[str]:
    """seed 002: gradOutput and gradInput FLOAT, FLOAT16, DOUBLE; self also integers and BOOL."""
    if param == "self":
        return bf16_if_a2(product, ["INT8", "INT16", "INT32", "INT64", "UINT8", "BOOL",
                                    "FLOAT16", "FLOAT", "DOUBLE"])  # fmt: skip
    return bf16_if_a2(product, ["FLOAT", "FLOAT16", "DOUBLE"])


def base_scalars() -> dict:
    return {"beta": Scalar("FLOAT", 1.0), "threshold": Scalar("FLOAT", 20.0)}


# beta and threshold: "数据类型支持可转换为FLOAT的类型" (only complex is rejected)
SCALAR_RULES = [(["beta", "threshold"], "scalar-castable", COMPLEX)]


def error_cases(case) -> None:
    # no promotion rule; integer self with a float gradOutput (UT)
    case(TRAIN, "int32-self-f32-grad", OK, x="INT32")
    case(TRAIN, "bool-self-f16-out", OK, x="BOOL", o="FLOAT16")
    case(A2, "f16-grad-f64-self-bf16-out", OK, g="FLOAT16", x="DOUBLE", o="BF16")
    # equal shapes, no broadcasting; softplus checks ranks before shapes (facts §4.1)
    equal_shape_cases(case, PRODUCTS[-1], "shape-equal", "max-rank")
    # empty tensors: shapes must still match
    case(A2, "empty-shapes-differ", INVALID, "shape-equal", gs=(0, 3), xs=(0, 3), os=(0, 4))
    # two violations: the rule checked first decides
    case(A2, "two-bad-grad-and-rank9-out", INVALID, "dtype-gradOutput", g="INT32", os=R9)
    case(A2, "two-complex-beta-and-shape", INVALID, "scalar-castable", xs=(4,),
         beta=Scalar("COMPLEX64", 1.0))  # fmt: skip


UNREACHABLE: dict[str, str] = {}

# -- case generation -----------------------------------------------------------------------------


def dtype_combos(product: str) -> set[tuple[tuple[str, str], ...]]:
    """seed 002: independent lists, no promotion rule."""
    grad = allowed("gradOutput", product)
    self_ = allowed("self", product)
    return {
        (("gradOutput", g), ("self", s), ("gradInput", gi))
        for g, s, gi in itertools.product(grad, self_, grad)
    }


def scalar_dtypes(product: str, param: str) -> set[str]:
    return set(REAL_SCALARS)  # "可转换为FLOAT的类型"


POINT_VALUES = {"at-threshold": 20.0, "at-threshold-beta2": 1.5, "above-threshold": 21.0,
                "x-zero": 0.0, "beta-zero": 3.0, "x-very-negative": -1000.0}  # fmt: skip
