"""`cumsum(x, dim)` of the expression language: each element's prefix sum along dim, correctly
rounded to the output dtype (FLOAT) or faithful (DOUBLE), alone and nested in a reduction.

The fixtures tests/data/cumsum/toy_cumsum.yaml (out = cumsum(self, dim)) and toy_cumsum_total.yaml
(out = sum(cumsum(self, dim), all)) are made-up ops. Expected values are exact sums of Fractions
worked out here, on inputs where float64's own prefix sums are wrong (a huge term and its
negation around a tiny one: the float64 cumsum loses the tiny term) and on long rows.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import accumulate
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import load_registry
from aclnn_conformance.reference import engine

DIR = Path(__file__).parent / "data" / "cumsum"
REG = load_registry(sorted(DIR.glob("*.yaml")))


def _run(name: str, x: np.ndarray, dim: int, dtype: str, out_shape: tuple[int, ...]):
    call = Call(name, "atlas-a2", {
        "self": TensorArg.from_array(x, dtype), "dim": dim,
        "out": TensorArg.from_array(np.zeros(out_shape), dtype),
    })  # fmt: skip
    got = engine.evaluate(call, REG)
    assert got.status == 0, got.message
    return got.outputs["out"].reshape(out_shape)


def _prefixes(x: np.ndarray, dim: int) -> np.ndarray:
    """Exact prefix sums along dim, as Fractions (an object array of x's shape)."""
    moved = np.moveaxis(x.astype(np.float64), dim, -1)
    out = np.empty(moved.shape, dtype=object)
    for idx in np.ndindex(moved.shape[:-1]):
        out[idx] = list(accumulate((Fraction(float(v)) for v in moved[idx]), initial=None))
    return np.moveaxis(out, -1, dim)


def _float32(values: np.ndarray) -> np.ndarray:
    """Fractions rounded to float32: to float64 (correctly rounded) and then to float32, which
    is the correct rounding unless the float64 value lands on a float32 midpoint it was not on
    (the values here are checked to be exact in float64 or far from one)."""
    return (
        np.array([float(v) for v in values.reshape(-1)], np.float64)
        .astype(np.float32)
        .reshape(values.shape)
    )


def test_the_fixtures_lint_clean():
    for f in sorted(DIR.glob("*.yaml")):
        spec, problems = lint_file(f)
        assert problems == [] and spec is not None, (f, problems)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_cumsum_along_every_dim_of_a_3d_tensor_is_exact(dim):
    x = np.random.default_rng(3).standard_normal((3, 4, 5)).astype(np.float32)
    got = _run("toy_cumsum", x, dim, "FLOAT", x.shape)
    np.testing.assert_array_equal(got, _float32(_prefixes(x, dim)))


def test_float64s_own_prefix_sums_lose_a_tiny_term_the_reference_keeps():
    # 2^40 + t rounds t away in float64 (ulp 2^-12 at 2^40); after -2^40 the float64 prefix is 0
    t = np.float32(2.0**-20 * (1 + 2.0**-23))
    x = np.array([[2.0**40, t, -(2.0**40), 3.0, t, -3.0]], np.float32)
    naive = np.cumsum(x.astype(np.float64), axis=1)
    assert naive[0, 2] != float(t)  # the float64 cumsum is wrong here
    got = _run("toy_cumsum", x, 1, "FLOAT", x.shape)
    want = _float32(_prefixes(x, 1))
    assert want[0, 2] == t and want[0, 5] == np.float32(2 * float(t))
    np.testing.assert_array_equal(got, want)


def test_a_long_row_of_cancelling_terms():
    rng = np.random.default_rng(5)
    n = 1 << 14
    big = rng.uniform(1e6, 1e7, n // 2).astype(np.float32)
    x = np.empty(n, np.float32)
    x[0::2], x[1::2] = big, -big  # prefix sums alternate between a term and 0
    x[:: n // 8] += np.float32(1e-3)
    got = _run("toy_cumsum", x, 0, "FLOAT", x.shape)
    np.testing.assert_array_equal(got, _float32(_prefixes(x, 0)))


def test_double_prefix_sums_are_faithful():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 300)) * np.exp(rng.uniform(-30, 30, (4, 300)))
    got = _run("toy_cumsum", x, 1, "DOUBLE", x.shape)
    want = _prefixes(x, 1)
    for g, w in zip(got.reshape(-1), want.reshape(-1), strict=True):
        lo, hi = np.nextafter(float(w), -np.inf), np.nextafter(float(w), np.inf)
        assert lo <= g <= hi  # within one ulp of the exact value: faithful


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_a_cumsum_inside_a_reduction_over_every_dim(dim):
    x = np.random.default_rng(11).standard_normal((6, 7)).astype(np.float32)
    got = _run("toy_cumsum_total", x, dim, "FLOAT", ())
    total = sum(_prefixes(x, dim).reshape(-1), Fraction(0))
    assert got == np.float32(float(total))


def test_nan_and_inf_propagate_along_the_row_only():
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, -np.inf]], np.float32)
    got = _run("toy_cumsum", x, 1, "FLOAT", x.shape)
    assert got[0, 0] == 1.0 and np.isnan(got[0, 1]) and np.isnan(got[0, 2])
    assert got[1, 0] == np.inf and got[1, 1] == np.inf and np.isnan(got[1, 2])


@pytest.mark.parametrize(
    "value,says",
    [
        ('"cumsum(self, (0, 1))"', "splits along one dim"),
        ('"cumsum(self, dims)"', "dims is an int_array"),
        ('"cumsum(self, nodim)"', "'nodim' is not a parameter"),
        ('"cumsum(self)"', "takes 2 argument"),
    ],
)
def test_lint_refuses_a_cumsum_over_anything_but_one_dim(tmp_path, value, says):
    text = (DIR / "toy_cumsum.yaml").read_text("utf-8")
    text = text.replace(
        "  - {name: dim, kind: int, c_type: int64_t, default: 0}",
        "  - {name: dim, kind: int, c_type: int64_t, default: 0}\n"
        "  - {name: dims, kind: int_array, c_type: aclIntArray*, default: [0]}",
    ).replace('value: "cumsum(self, dim)"', f"value: {value}")
    path = tmp_path / "toy_cumsum.yaml"
    path.write_text(text, "utf-8")
    spec, problems = lint_file(path)
    assert spec is None or problems
    assert any(says in str(p) for p in problems), problems
