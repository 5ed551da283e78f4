"""The refinement trigger: which float64 results lie within 2^-20 output-ulp of a rounding
midpoint. Points are constructed from the output format's own neighbours, by hand."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from aclnn_conformance.reference.precise import GUARD, _near_midpoint_float, near_midpoint

FORMATS = {"FLOAT": np.float32, "FLOAT16": np.float16, "BF16": ml_dtypes.bfloat16}


def neighbours(dtype, values):
    """(a, next value up) in the output dtype, as float64."""
    a = np.asarray(values, dtype=np.float64).astype(dtype)
    bits = a.view({2: np.uint16, 4: np.uint32}[np.dtype(dtype).itemsize])
    b = (bits + 1).view(dtype)
    return a.astype(np.float64), b.astype(np.float64)


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("where", ["normal", "subnormal", "large"])
def test_midpoints_and_their_guard_band(name, where):
    dtype = FORMATS[name]
    info = ml_dtypes.finfo(dtype)
    base = {"normal": [1.0, 1.5, 3.0, 1000.0, -7.25, 0.1],
            "subnormal": [float(info.smallest_subnormal) * k for k in (1, 2, 5)],
            "large": [float(info.max) / 2, float(info.max) / 1.5]}[where]  # fmt: skip
    a, b = neighbours(dtype, base)
    ulp = b - a
    mid = (a + b) / 2  # exact in float64: the formats have at most 24 bits
    inside = GUARD / 4
    outside = GUARD * 8
    assert near_midpoint(mid, name).all()
    assert near_midpoint(mid + inside * ulp, name).all()
    assert near_midpoint(mid - inside * ulp, name).all()
    assert not near_midpoint(mid + outside * ulp, name).any()
    assert not near_midpoint(mid - outside * ulp, name).any()
    assert not near_midpoint(a, name).any()  # representable values are never ambiguous


@pytest.mark.parametrize("name", FORMATS)
def test_specials_are_never_refined(name):
    y = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    assert not near_midpoint(y, name).any()


@pytest.mark.parametrize("name", FORMATS)
def test_the_bit_test_agrees_with_the_arithmetic_one(name):
    rng = np.random.default_rng(7)
    p, emin = {"FLOAT": (24, -126), "FLOAT16": (11, -14), "BF16": (8, -126)}[name]
    dtype = FORMATS[name]
    a, b = neighbours(dtype, rng.uniform(-1e3, 1e3, 20000))
    t = rng.uniform(0, 1, a.size) ** 40  # many offsets very close to 0 and to 1
    y = np.concatenate(
        [a + (b - a) * (0.5 + t * np.sign(rng.uniform(-1, 1, a.size))), rng.normal(0, 10, 20000)]
    )
    assert (near_midpoint(y, name) == _near_midpoint_float(y, p, emin)).all()


def test_64_bit_integers_beyond_2_to_53_keep_every_bit():
    """relu of INT64 values float64 cannot hold: the positive ones come back unchanged (the
    formula's `self` branch), the negative ones as 0. 2^62 + 1 and 2^63 - 1 are exact integers,
    so any trip through float64 would round them."""
    from aclnn_conformance.conformance.acl.call import Call, TensorArg
    from aclnn_conformance.reference.backend import ReferenceBackend

    values = np.array([2**62 + 1, 2**63 - 1, -(2**62) - 1, 2**53 + 1, 3], dtype=np.int64)
    x = TensorArg("INT64", (5,), (1,), 0, values.copy())
    out = TensorArg("INT64", (5,), (1,), 0, np.zeros(5, np.int64))
    got = ReferenceBackend().execute(Call("relu", "atlas-a2", {"self": x, "out": out}))
    assert got.status == 0
    assert got.outputs["out"].tolist() == [2**62 + 1, 2**63 - 1, 0, 2**53 + 1, 3]


@pytest.mark.kernels
@pytest.mark.parametrize("name", ["hardswish_backward", "hardswish_backward_v2"])
@pytest.mark.parametrize("dtype", ["BF16", "FLOAT16"])
def test_exact_ties_behind_a_division_by_three_round_to_even(name, dtype, monkeypatch):
    """g (x/3 + 1/2) is a rounding tie whenever 3 divides g's significand times 2x + 3: binary
    x/3 (float64 or mpmath) never shows it, the exact rational refinement does. Checked against
    the hand-written oracle in exact rationals (tests/oracles), rounded ties-to-even."""
    from fractions import Fraction

    import mpmath
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.reference import engine, precise

    from tests import oracles
    from tests.support.rounding import round_exact
    from tests.test_kernel import _call as call_of

    spec = default_registry().get(name)
    call = call_of(spec, "atlas-a2", dtype, 1 << 15, np.random.default_rng(2))
    for seed, arg in enumerate(call.args.values()):  # N(0, 2): most inputs in the linear part
        if hasattr(arg, "storage") and arg is not call.args.get(spec.formula.output):
            v = np.random.default_rng(seed).normal(0, 2, arg.storage.size)
            arg.storage[...] = v.astype(arg.storage.dtype)
    calls = {"rational": 0}
    original = precise._value_rational

    def counted(*a):
        calls["rational"] += 1
        return original(*a)

    monkeypatch.setattr(precise, "_value_rational", counted)
    got = engine.evaluate(call).outputs[spec.formula.output]
    oracle = oracles.load(name)
    g = call.args["gradOutput"].storage.astype(np.float64).tolist()
    x = call.args["self"].storage.astype(np.float64).tolist()
    exact = [oracle.value({"gradOutput": mpmath.mpf(a), "self": mpmath.mpf(b)}, {})
             for a, b in zip(g, x, strict=True)]  # fmt: skip
    want = np.array([round_exact(v, dtype) for v in exact]).astype(got.dtype)
    nudge = Fraction(1, 2**200)
    ties = [v for v in exact if isinstance(v, Fraction) and v
            and round_exact(v + nudge, dtype) != round_exact(v - nudge, dtype)]  # fmt: skip
    assert len(ties) > 10 and calls["rational"] > 0  # (x/3 exact in float64: no refinement)
    # the oracle's mpmath zero has no sign: compare values (-0 == +0)
    assert np.array_equal(got.astype(np.float64), want.astype(np.float64), equal_nan=True)


def test_repeated_elements_are_evaluated_once_each_and_scattered_back(monkeypatch):
    """A vendor case fills 1.7 M elements with one value: refinement evaluates each distinct
    input once and gives every repeat its value. Softplus log(1 + e^x) in DOUBLE against
    mpmath at 300 bits; -inf inputs have no finite value there and keep float64's."""
    import mpmath
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.reference import precise

    spec = default_registry().get("softplus")
    distinct = np.array([-3.25, 0.1, 7.0, -np.inf])
    rng = np.random.default_rng(3)
    pick = rng.integers(0, distinct.size, 40000)
    x = distinct[pick]
    y = np.full(x.size, 0.5)
    seen = []
    original = precise._value_at

    def counted(spec, attrs, inputs, bits):
        seen.append(float(inputs["self"]))
        return original(spec, attrs, inputs, bits)

    monkeypatch.setattr(precise, "_value_at", counted)
    env = {"beta": 1.0, "threshold": 20.0}
    got = precise.refine(spec, env, y, np.arange(x.size), {"self": x}, "DOUBLE")
    with mpmath.workprec(300):
        want = [float(mpmath.log(1 + mpmath.exp(mpmath.mpf(v)))) for v in distinct[:3]]
    want = np.array([*want, 0.5])[pick]
    assert np.array_equal(got, want)
    assert len(set(seen)) == 4 and len(seen) <= 4 * 4  # a few precisions each, not 40000


def test_an_infinite_attribute_leaves_every_element_as_float64_gave_it(monkeypatch):
    """beta = inf (a vendor case): mpmath has no finite value at any element, so refinement
    keeps float64's values without evaluating 277 k elements one by one."""
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.reference import precise

    def never(*a):
        raise AssertionError("evaluated")

    monkeypatch.setattr(precise, "_value_at", never)
    spec = default_registry().get("softplus")
    x = np.linspace(-5, 5, 1001)
    y = np.where(x > 0, x, 0.0)
    env = {"beta": float("inf"), "threshold": 20.0}
    got = precise.refine(spec, env, y.copy(), np.arange(x.size), {"self": x}, "FLOAT")
    assert np.array_equal(got, y)
