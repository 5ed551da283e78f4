"""aclnnLeakyReluBackward, from seed 000 and aclnn-facts.md §2 (interface: tests/oracles/__init__.py).

facts §2.4: out = gradOutput if self > 0; gradOutput * negativeSlope if self <= 0.
"""

from __future__ import annotations

import itertools

import mpmath
import numpy as np

from tests.oracles._common import (
    A2,
    A3,
    A950,
    INFER,
    INTEGRAL,
    INVALID,
    NULLPTR,
    OK,
    ONE,
    R9,
    TRAIN,
    F,
    Scalar,
    bf16_if_a2,
    broadcast_cases,
    float_castable_to,
    pos,
)

X = "self"
OUT = "out"
PRODUCTS = (INFER, TRAIN, A2, A3, A950)

# -- the formula ---------------------------------------------------------------------------------

DTYPES = ("FLOAT", "FLOAT16", "BF16", "DOUBLE")


def factor(x: float, s: dict):
    if x > 0:
        return "positive", ONE
    return "nonpositive", mpmath.mpf(s["negativeSlope"])


BRANCHES = {
    "positive": (
        [
            {"negativeSlope": 0.01, "selfIsResult": False},
            {"negativeSlope": 1.7, "selfIsResult": True},
        ],
        lambda rng, n, s: pos(rng, n, -30, 10),
    ),
    "nonpositive": (
        [
            {"negativeSlope": 0.01, "selfIsResult": False},
            {"negativeSlope": -0.37, "selfIsResult": False},
            {"negativeSlope": 1.7, "selfIsResult": True},
        ],
        lambda rng, n, s: np.where(rng.random(n) < 0.05, -0.0, -pos(rng, n, -30, 10)),
    ),
}

SPECIAL_SETTINGS = [
    {"negativeSlope": 0.01, "selfIsResult": False},
    {"negativeSlope": 0.0, "selfIsResult": True},
    {"negativeSlope": -0.5, "selfIsResult": False},
]


def special_x(s: dict, dtype: str, neighbours) -> list[float]:
    return [-2.0, 2.0]  # the boundary x = 0 is in every dtype's general special values


SPECIAL_POINTS = {
    "x-zero": ({}, lambda s: 0.0),
    "x-tiny-positive": ({}, lambda s: 6e-8),
    "x-slope-zero": ({"negativeSlope": 0.0}, lambda s: -1.0),
    "x-slope-negative": ({"negativeSlope": -0.5, "selfIsResult": False}, lambda s: -2.0),
}

MIXED = [
    ("FLOAT16", "BF16", "BF16", {"negativeSlope": 0.3, "selfIsResult": False}),
    ("DOUBLE", "FLOAT", "FLOAT16", {"negativeSlope": 0.01, "selfIsResult": False}),
]

REGRESSIONS: list = []

# -- error rules ---------------------------------------------------------------------------------

NULLABLE = ["gradOutput", "self", "negativeSlope", "out"]
SLOPE_DTYPES = ["FLOAT", "FLOAT16", "DOUBLE", "INT32", "INT64", "INT8", "BOOL", "INT16", "UINT8"]


def allowed(param: str, product: str) -> set[str]:
    """seed 000's dtype lists."""
    if param in ("gradOutput", "self"):
        return bf16_if_a2(product, ["FLOAT", "FLOAT16", "DOUBLE"])
    if param == "negativeSlope":
        return bf16_if_a2(product, SLOPE_DTYPES)
    if param == "out":  # the listed types plus those "supported through automatic cast"
        return bf16_if_a2(product, ["FLOAT", "FLOAT16", "DOUBLE", *INTEGRAL, "COMPLEX64",
                                    "COMPLEX128"])  # fmt: skip
    raise KeyError(param)


def base_scalars() -> dict:
    return {"negativeSlope": Scalar("FLOAT", 0.01), "selfIsResult": False}


SCALAR_RULES = [(["negativeSlope"], "dtype-negativeSlope", None)]


def error_cases(case) -> None:
    for product in PRODUCTS:
        # out dtypes the doc lists "through automatic cast" but that a floating promote type
        # cannot be cast to (CanCast: float -> integral or bool is false)
        for d in sorted(allowed("out", product) & INTEGRAL):
            case(product, f"cast-out-{d}", INVALID, "cast-out", o=d)
    # PromoteType(gradOutput, self), then CanCast(promote, out) (facts §2.1 step 6)
    case(TRAIN, "promote-f16-f64-to-f16", OK, g="FLOAT16", x="DOUBLE", o="FLOAT16")
    case(TRAIN, "promote-f16-f64-to-f64", OK, g="FLOAT16", x="DOUBLE", o="DOUBLE")
    case(TRAIN, "promote-f16-f64-to-i32", INVALID, "cast-out", g="FLOAT16", x="DOUBLE", o="INT32")
    case(TRAIN, "promote-f16-f64-to-bool", INVALID, "cast-out", g="FLOAT16", x="DOUBLE", o="BOOL")
    case(A2, "promote-f16-bf16-to-bf16", OK, g="FLOAT16", x="BF16", o="BF16")
    case(A2, "promote-f32-f32-to-c64", OK, o="COMPLEX64")
    case(A2, "promote-f32-f32-to-c128", OK, o="COMPLEX128")
    case(TRAIN, "bf16-out-not-on-training", INVALID, "dtype-out", o="BF16")
    case(A2, "bf16-out-on-a2", OK, o="BF16")
    broadcast_cases(case, PRODUCTS[-1], "out-shape")
    # "selfIsResult为true时,negativeSlope不可以是负数"; -0.0, 0 and NaN are not negative
    for v, bad in ((-0.1, True), (-1.0, True), (-0.0, False), (0.0, False), (0.25, False),
                   (float("nan"), False)):  # fmt: skip
        s = Scalar("FLOAT", v)
        if bad:
            case(A2, f"selfIsResult-slope-{v}", INVALID, "slope-nonneg-if-result",
                 selfIsResult=True, negativeSlope=s)  # fmt: skip
        else:
            case(A2, f"selfIsResult-slope-{v}", OK, selfIsResult=True, negativeSlope=s)
    case(A2, "not-result-negative-slope", OK, negativeSlope=Scalar(F, -0.1))
    case(A2, "selfIsResult-slope-int8-neg", INVALID, "slope-nonneg-if-result", selfIsResult=True,
         negativeSlope=Scalar("INT8", -1))  # fmt: skip
    case(A2, "selfIsResult-slope-bool", OK, selfIsResult=True, negativeSlope=Scalar("BOOL", True))
    # a FLOAT scalar holds float32(value): -1e-46 is -0.0 there, but negative as a DOUBLE
    case(A2, "selfIsResult-slope-f32-underflow", OK, selfIsResult=True,
         negativeSlope=Scalar(F, -1e-46))  # fmt: skip
    case(A2, "selfIsResult-slope-f64-tiny", INVALID, "slope-nonneg-if-result", selfIsResult=True,
         negativeSlope=Scalar("DOUBLE", -1e-46))  # fmt: skip
    # an empty self ends the call after every shape check (facts §2.1 step 7)
    case(A2, "empty-self-wrong-out", INVALID, "out-shape", gs=(0, 3), xs=(0, 3), os=(1, 3))
    case(A2, "empty-self-broadcast", OK, "empty", gs=(1, 3), xs=(0, 3), os=(0, 3))
    case(A2, "empty-grad-only", OK, gs=(0, 3), xs=(1, 3), os=(0, 3))
    case(A2, "empty-self-bad-dtype", INVALID, "dtype-self", x="INT32", gs=(0,), xs=(0,), os=(0,))
    # two violations: the rule checked first decides
    case(A2, "two-null-and-bad-dtype", NULLPTR, "null-ptr", x="INT32", gradOutput=None)
    case(A2, "two-bad-dtype-and-bad-shape", INVALID, "dtype-self", x="INT32", xs=(5, 7))
    case(A2, "two-bad-out-dtype-and-out-shape", INVALID, "dtype-out", o="UINT1", os=(9,))
    case(A2, "two-negative-slope-and-int-out", INVALID, "slope-nonneg-if-result", o="INT32",
         selfIsResult=True, negativeSlope=Scalar(F, -1.0))  # fmt: skip
    case(A2, "two-rank9-and-not-broadcastable", INVALID, "max-rank", gs=R9, xs=(5,))
    case(A2, "two-out-shape-and-negative-slope", INVALID, "out-shape", os=(3,),
         selfIsResult=True, negativeSlope=Scalar(F, -1.0))  # fmt: skip


UNREACHABLE = {
    "promotable": "the listed gradOutput/self dtypes are floats, and floats always promote",
}

# -- case generation -----------------------------------------------------------------------------


def dtype_combos(product: str) -> set[tuple[tuple[str, str], ...]]:
    """seed 000: out castable from promote(gradOutput, self)."""
    t = bf16_if_a2(product, ["FLOAT", "FLOAT16", "DOUBLE"])
    outs = bf16_if_a2(product, ["FLOAT", "FLOAT16", "DOUBLE", "INT8", "UINT8", "INT16", "UINT16",
                                "INT32", "UINT32", "INT64", "UINT64", "BOOL", "COMPLEX64",
                                "COMPLEX128"])  # fmt: skip
    return {
        (("gradOutput", g), ("self", s), ("out", o))
        for g, s, o in itertools.product(t, t, outs)
        if float_castable_to(o)
    }


def scalar_dtypes(product: str, param: str) -> set[str]:
    return bf16_if_a2(product, SLOPE_DTYPES)  # seed 000 negativeSlope list


POINT_VALUES = {"x-zero": 0.0, "x-tiny-positive": 6e-8, "x-slope-zero": -1.0,
                "x-slope-negative": -2.0}  # fmt: skip
