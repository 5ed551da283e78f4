"""conformance.judge.compare: every expected value here is derived by hand (comments show how).

Every test runs twice: through the numpy pass and through the compiled pass (conformance/compiled/measure.py,
forced even for small arrays), so both are held to the same hand-derived figures.
"""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from aclnn_conformance.conformance.judge.accumulate import compare
from aclnn_conformance.conformance.judge.compare import Comparison, ulp_distance
from aclnn_conformance.conformance.spec.tolerances import Policy, policy_for

from tests.support.paths import HAVE_NUMBA

BF16 = ml_dtypes.bfloat16


@pytest.fixture(autouse=True, params=["numpy", "numba"])
def comparison_path(request, monkeypatch):
    if request.param == "numba" and not HAVE_NUMBA:
        pytest.skip("numba is not installed (pip install .[fast])")
    monkeypatch.setenv("ACLNN_CONFORM_KERNEL", request.param)
    return request.param


def _up(x: np.ndarray, index, steps: int) -> None:
    """Move x[index] `steps` representable values towards +inf, in place."""
    for _ in range(steps):
        x[index] = np.nextafter(x[index], x.dtype.type(np.inf))


# ---------------------------------------------------------------- policies


def test_policy_for_defaults_follow_the_published_thresholds():
    p = policy_for("FLOAT16")
    # dual thousandth (§9.1), MERE 2^-10 / MARE 10 * 2^-10 (§9.2), small domain 2^-11 / 2^-16 (§9.3)
    assert (p.rel, p.max_ratio) == (1e-3, 1e-3)
    assert (p.mere, p.mare) == (2.0**-10, 10 * 2.0**-10)
    assert (p.small_threshold, p.small_atol) == (2.0**-11, 2.0**-16)
    assert p.max_ulp is None and p.exact is False
    f = policy_for("FLOAT")
    assert (f.rel, f.max_ratio, f.mere, f.mare) == (1e-4, 1e-4, 2.0**-13, 10 * 2.0**-13)
    assert (f.small_threshold, f.small_atol) == (2.0**-14, 2.0**-30)
    b = policy_for("BF16")
    assert (b.rel, b.mere, b.mare, b.small_threshold) == (4e-3, 2.0**-7, 10 * 2.0**-7, 2.0**-8)


def test_policy_for_aliases_and_merges_overrides():
    assert policy_for("fp16") == policy_for("FLOAT16")
    overrides = {"FLOAT16": {"rel": 2e-3, "max_ulp": 4}, "FLOAT": {"rel": 0.5}}
    p = policy_for("FLOAT16", overrides)
    assert p.rel == 2e-3 and p.max_ulp == 4.0
    assert p.max_ratio == 1e-3 and p.mere == 2.0**-10  # untouched fields keep the defaults
    assert policy_for("BF16", overrides) == policy_for("BF16")  # other dtypes' overrides ignored
    # override keys may be aliases too
    assert policy_for("FLOAT", {"FLOAT32": {"mare": 1.0}}).mare == 1.0


def test_policy_for_int_and_bool_are_exact():
    for name in ("INT32", "INT64", "UINT8", "BOOL"):
        assert policy_for(name).exact is True


def test_policy_for_errors():
    with pytest.raises(ValueError, match="unknown tolerance field"):
        policy_for("FLOAT", {"FLOAT": {"rtol": 1.0}})
    with pytest.raises(ValueError, match="no tolerance policy"):
        policy_for("FLOAT8_E5M2")  # no default in specs/tolerances.yaml
    full = dict(rel=0.25, max_ratio=0.0, mere=0.1, mare=1.0, small_threshold=0.0, small_atol=0.0)
    assert policy_for("FLOAT8_E5M2", {"FLOAT8_E5M2": full}) == Policy(**full)


# ---------------------------------------------------------------- basic verdicts


def test_equal_arrays_pass_with_zero_stats():
    g = np.array([[1.5, -2.0, 0.0], [3.25, 2.0**-100, -7.0]])
    res = compare(g, g.astype(np.float32), "FLOAT", policy_for("FLOAT"))
    assert res.passed and res.reasons == [] and res.worst == []
    s = res.stats
    assert (s.n, s.compared, s.small_value_count) == (6, 6, 2)  # 0.0 and 2^-100 < 2^-14
    assert (s.max_abs, s.max_rel, s.mere, s.mare, s.max_ulp) == (0, 0, 0, 0, 0)
    assert (s.mismatches, s.mismatch_ratio, s.nan_mismatches, s.inf_mismatches) == (0, 0, 0, 0)


def test_two_ulp_float32():
    g = np.array([1.5, 3.0, -4.0], np.float32)
    a = g.copy()
    _up(a, 0, 2)
    res = compare(g, a, "FLOAT", policy_for("FLOAT"))
    # float32 spacing in [1, 2) is 2^-23: 2 ulp at 1.5 is 2^-22, rel 2^-22 / 1.5 ~ 1.6e-7 < 1e-4
    assert res.passed
    assert res.stats.max_ulp == 2
    assert res.stats.max_abs == 2.0**-22
    assert res.stats.max_rel == pytest.approx(2.0**-22 / 1.5, rel=1e-12)
    strict = policy_for("FLOAT", {"FLOAT": {"max_ulp": 1}})
    res = compare(g, a, "FLOAT", strict)
    assert not res.passed
    assert len(res.reasons) == 1 and "ulp" in res.reasons[0]


def test_ulp_counts_from_the_golden_rounded_to_the_output_dtype():
    a = np.array([1.0], np.float32)
    # 1 + 2^-25 rounds to 1.0 in float32 (a quarter ulp), so 0 ulp although abs_err = 2^-25
    res = compare(np.array([1.0 + 2.0**-25]), a, "FLOAT", policy_for("FLOAT"))
    assert res.stats.max_ulp == 0 and res.stats.max_abs == 2.0**-25
    # 1 + 0.75 * 2^-23 rounds up to 1 + 2^-23: one ulp away from 1.0
    res = compare(np.array([1.0 + 0.75 * 2.0**-23]), a, "FLOAT", policy_for("FLOAT"))
    assert res.stats.max_ulp == 1


def test_ulp_distance_float64_and_signed_zero():
    x = np.array([1.0, 0.0, -0.0, -1.0])
    y = np.array([np.nextafter(1.0, 2.0), -0.0, 0.0, np.nextafter(-1.0, 0.0)])
    assert ulp_distance(x, y).tolist() == [1.0, 0.0, 0.0, 1.0]
    # through zero: -tiny, -0/+0, +tiny is 2 steps; -max to +max is twice max's magnitude bits
    tiny, big = 5e-324, np.finfo(np.float64).max
    far = ulp_distance(np.array([-tiny, -big]), np.array([tiny, big]))
    assert far[0] == 2.0 and far[1] == 2.0 * 0x7FEFFFFFFFFFFFFF
    # fp16 / bf16: the same ordering on 16 bits (fp16 max 65504 is 0x7BFF)
    h = ulp_distance(np.array([-65504.0], np.float16), np.array([65504.0], np.float16))
    assert h[0] == 2 * 0x7BFF
    b = ulp_distance(np.array([1.0], BF16), np.array([2.0], BF16))
    assert b[0] == 128  # 7 mantissa bits: 2^7 steps per binade


# ---------------------------------------------------------------- NaN / inf / signed zero


def test_nan_against_number_fails():
    res = compare(
        np.array([np.nan, 1.0]), np.array([0.5, 1.0], np.float32), "FLOAT", policy_for("FLOAT")
    )
    assert not res.passed
    assert res.stats.nan_mismatches == 1 and res.stats.inf_mismatches == 0
    assert res.stats.compared == 1 and res.stats.mismatches == 0
    assert any("NaN" in r for r in res.reasons)
    assert res.worst[0].index == (0,) and np.isnan(res.worst[0].expected)


def test_number_against_nan_is_also_an_element_mismatch():
    res = compare(
        np.array([2.0, 1.0]), np.array([np.nan, 1.0], np.float32), "FLOAT", policy_for("FLOAT")
    )
    assert not res.passed
    assert res.stats.nan_mismatches == 1
    assert res.stats.mismatches == 1 and res.stats.mismatch_ratio == 0.5
    assert res.stats.max_abs == np.inf
    assert res.stats.mere == 0 and res.stats.mare == 0  # the NaN is reported as a NaN mismatch


def test_matching_nan_and_inf_pass():
    g = np.array([np.nan, np.inf, -np.inf, 1.0])
    res = compare(g, g.astype(np.float16), "FLOAT16", policy_for("FLOAT16"))
    assert res.passed and res.stats.compared == 1 and res.worst == []


def test_inf_sign_mismatch_fails():
    res = compare(np.array([np.inf]), np.array([-np.inf], np.float32), "FLOAT", policy_for("FLOAT"))
    assert not res.passed
    assert res.stats.inf_mismatches == 1 and res.stats.nan_mismatches == 0
    assert any("inf" in r for r in res.reasons)


def test_inf_against_finite_fails():
    res = compare(np.array([5.0]), np.array([np.inf], np.float16), "FLOAT16", policy_for("FLOAT16"))
    assert not res.passed and res.stats.inf_mismatches == 1 and res.stats.mismatches == 1


def test_golden_overflowing_the_output_dtype_expects_inf():
    # fp16 max is 65504; 70000 rounds to +inf, which is then the right answer
    res = compare(
        np.array([70000.0]), np.array([np.inf], np.float16), "FLOAT16", policy_for("FLOAT16")
    )
    assert res.passed and res.stats.compared == 0
    res = compare(
        np.array([70000.0]), np.array([65504.0], np.float16), "FLOAT16", policy_for("FLOAT16")
    )
    assert not res.passed and res.stats.inf_mismatches == 1


def test_signed_zero_is_not_a_mismatch():
    res = compare(
        np.array([-0.0, 0.0]),
        np.array([0.0, -0.0], np.float32),
        "FLOAT",
        policy_for("FLOAT", {"FLOAT": {"max_ulp": 0}}),
    )
    assert res.passed and res.stats.max_ulp == 0 and res.stats.max_abs == 0


def test_bf16_ulp_across_zero():
    tiny = 2.0**-133  # bf16 smallest subnormal: 2^(-126 - 7)
    res = compare(np.array([-tiny]), np.array([tiny], BF16), "BF16", policy_for("BF16"))
    # -tiny -> -0 -> +0 -> +tiny: two steps; abs err 2^-132 is far below small_atol 2^-16
    assert res.stats.max_ulp == 2
    assert res.stats.max_abs == 2.0**-132
    assert res.stats.small_value_count == 1
    assert res.passed
    assert not compare(
        np.array([-tiny]),
        np.array([tiny], BF16),
        "BF16",
        policy_for("BF16", {"BF16": {"max_ulp": 1}}),
    ).passed


# ---------------------------------------------------------------- small-value domain


def test_fp16_small_value_domain_uses_the_absolute_bound():
    p = policy_for("FLOAT16")  # small_threshold 2^-11 ~ 4.9e-4, small_atol 2^-16 ~ 1.53e-5
    g = np.array([1e-6])
    # fp16 spacing near 1e-5 is 2^-24 ~ 6e-8, so the actual error is 1e-5 (or 2e-5) +- 3e-8
    near = np.array([1e-6 + 1e-5], np.float16)
    res = compare(g, near, "FLOAT16", p)
    assert res.stats.max_abs == pytest.approx(1e-5, abs=3e-8)
    assert res.stats.small_value_count == 1
    assert res.passed  # 1e-5 <= 2^-16; MERE/MARE skip the small domain (relative error ~10)
    assert res.stats.mere == 0 and res.stats.mare == 0
    far = np.array([1e-6 + 2e-5], np.float16)
    res = compare(g, far, "FLOAT16", p)
    assert not res.passed
    assert res.stats.mismatches == 1
    assert len(res.reasons) == 1 and "mismatch ratio" in res.reasons[0]


# ---------------------------------------------------------------- dual thousandth, MERE, MARE


def _fp16_ones_with(n_off: int, actual_off: float, n: int = 10000) -> Comparison:
    a = np.ones(n, np.float16)
    a[:n_off] = actual_off
    return compare(np.ones(n), a, "FLOAT16", policy_for("FLOAT16"))


def test_fp16_dual_thousandth_ratio():
    # 1 + 9 * 2^-10 is exact in fp16: rel err 9/1024 ~ 0.88 % > 1e-3, so each is a mismatch,
    # while per element 9/1024 / (1 + 1e-7) < MARE bound 10/1024 and MERE stays tiny.
    off = 1 + 9 / 1024
    res = _fp16_ones_with(20, off)  # 0.2 % of 10000
    assert not res.passed
    assert res.stats.mismatches == 20 and res.stats.mismatch_ratio == 0.002
    assert res.stats.mare == pytest.approx((9 / 1024) / (1 + 1e-7), rel=1e-12)
    assert res.stats.mere == pytest.approx(20 * (9 / 1024) / (1 + 1e-7) / 10000, rel=1e-12)
    assert len(res.reasons) == 1 and "mismatch ratio" in res.reasons[0]
    res = _fp16_ones_with(5, off)  # 0.05 %
    assert res.passed and res.stats.mismatches == 5 and res.stats.mismatch_ratio == 0.0005
    res = _fp16_ones_with(10, off)  # exactly 0.1 %: ratio <= max_ratio passes
    assert res.passed


def test_single_far_element_trips_mare_only():
    # one element off by 20/1024 ~ 1.95 %: ratio 1e-4 <= 1e-3, MERE ~2e-6, but MARE > 10/1024
    res = _fp16_ones_with(1, 1 + 20 / 1024)
    assert not res.passed
    assert res.stats.mismatches == 1
    assert len(res.reasons) == 1 and res.reasons[0].startswith("MARE")


def test_uniform_small_error_trips_mere_only():
    # golden 253/256 and actual 2026/2048 are both fp16 values: error 2^-10, rel 0.98814e-3
    # <= 1e-3 (no mismatch), but MERE = 2^-10 / (253/256 + 1e-7) > 2^-10.
    g = np.full(100, 253 / 256)
    a = np.full(100, 2026 / 2048, np.float16)
    res = compare(g, a, "FLOAT16", policy_for("FLOAT16"))
    assert res.stats.mismatches == 0
    expected = 2.0**-10 / (253 / 256 + 1e-7)
    assert res.stats.mere == pytest.approx(expected, rel=1e-12)
    assert res.stats.mare == pytest.approx(expected, rel=1e-12)
    assert res.stats.max_ulp == 2  # fp16 spacing in [0.5, 1) is 2^-11
    assert not res.passed
    assert len(res.reasons) == 1 and res.reasons[0].startswith("MERE")


def test_mere_mare_hand_computed():
    g = np.array([1.0, 2.0, 4.0, -8.0])
    a = np.array([1.0, 2.25, 4.0, -9.0])
    res = compare(g, a, "DOUBLE", policy_for("DOUBLE"))
    e1, e3 = 0.25 / (2 + 1e-7), 1.0 / (8 + 1e-7)
    assert res.stats.mere == pytest.approx((e1 + e3) / 4, rel=1e-14)
    # both are ~0.125, and 1/(8+1e-7) = 0.125/(1+1.25e-8) beats 0.25/(2+1e-7) = 0.125/(1+5e-8)
    assert res.stats.mare == pytest.approx(e3, rel=1e-15) and e3 > e1
    assert res.stats.max_abs == 1.0 and res.stats.max_rel == 0.125
    assert res.stats.mismatches == 2 and res.stats.mismatch_ratio == 0.5
    text = " ".join(res.reasons)
    assert "mismatch ratio" in text and "MERE" in text and "MARE" in text


# ---------------------------------------------------------------- worst elements


def test_worst_order_and_inputs():
    g = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    a = g.astype(np.float32)
    _up(a, (0, 1), 3)  # 2 + 3 * 2^-22
    a[1, 0] = np.nan
    _up(a, (1, 2), 1)  # 6 + 2^-21: 1 ulp, abs 2^-21
    _up(a, (0, 0), 1)  # 1 + 2^-23: 1 ulp, abs 2^-23 (ranks below (1, 2))
    x = g * 10
    res = compare(g, a, "FLOAT", policy_for("FLOAT"), inputs={"x": x, "alpha": np.ones(3)})
    assert [w.index for w in res.worst] == [(1, 0), (0, 1), (1, 2), (0, 0)]
    w = res.worst
    assert np.isnan(w[0].actual) and w[0].expected == 4.0 and w[0].inputs == {"x": 40.0}
    assert (w[1].ulp, w[1].abs_err, w[1].expected) == (3, 3 * 2.0**-22, 2.0)
    assert w[1].actual == 2.0 + 3 * 2.0**-22
    assert w[1].rel_err == 3 * 2.0**-23
    assert w[1].inputs == {"x": 20.0}  # alpha has another shape: skipped
    assert (w[2].ulp, w[2].abs_err) == (1, 2.0**-21)
    assert (w[3].ulp, w[3].abs_err) == (1, 2.0**-23)
    top2 = compare(g, a, "FLOAT", policy_for("FLOAT"), n_worst=2).worst
    assert [t.index for t in top2] == [(1, 0), (0, 1)]
    # memory layout does not matter: Fortran-ordered arrays give the same answer
    fortran = compare(np.asfortranarray(g), np.asfortranarray(a), "FLOAT", policy_for("FLOAT"))
    assert [w.index for w in fortran.worst] == [(1, 0), (0, 1), (1, 2), (0, 0)]
    assert fortran.stats == res.stats


def test_worst_on_a_large_array_breaks_ties_by_index():
    g = np.ones(200_000, np.float32)
    a = g.copy()
    for i in (10, 500, 150_000):
        _up(a, i, 1)
    _up(a, 70_000, 2)
    res = compare(g, a, "FLOAT", policy_for("FLOAT"), n_worst=3)
    assert [w.index for w in res.worst] == [(70_000,), (10,), (500,)]


# ---------------------------------------------------------------- exact (int / bool)


def test_int_exact_policy():
    g = np.array([1, -2, 3, 4], np.int32)
    p = policy_for("INT32")
    assert compare(g, g.copy(), "INT32", p).passed
    a = g.copy()
    a[2] = 4
    res = compare(g, a, "INT32", p)
    assert not res.passed
    assert res.stats.mismatches == 1 and res.stats.max_abs == 1
    assert res.worst[0].index == (2,) and (res.worst[0].expected, res.worst[0].actual) == (3, 4)
    assert "exact" in res.reasons[0]


def test_int64_exact_beyond_float64_precision():
    g = np.array([2**62 + 1], np.int64)  # differs from 2**62 by 1, equal once cast to float64
    assert not compare(g, np.array([2**62], np.int64), "INT64", policy_for("INT64")).passed


def test_bool_exact_policy():
    g = np.array([True, False, True])
    assert compare(g, g.copy(), "BOOL", policy_for("BOOL")).passed
    res = compare(g, np.array([True, True, True]), "BOOL", policy_for("BOOL"))
    assert not res.passed and res.stats.mismatches == 1


# ---------------------------------------------------------------- complex, shapes, JSON


def test_complex_compares_real_and_imaginary_parts():
    g = np.array([1 + 2j, 3 - 4j], np.complex64)
    a = g.copy()
    a[1] = np.complex64(complex(3, np.nextafter(np.float32(-4), np.float32(0))))
    res = compare(g, a, "COMPLEX64", policy_for("COMPLEX64"))
    assert res.stats.n == 4 and res.stats.compared == 4  # two parts per element
    assert res.stats.max_ulp == 1 and res.stats.max_abs == 2.0**-22  # just below 4: spacing 2^-22
    assert res.passed
    assert res.worst[0].index == (1, 1)  # element 1, imaginary part


def test_a_complex_part_is_judged_relative_to_the_elements_magnitude():
    """A part that cancels to near 0 is judged, as numpy.isclose and torch.isclose judge complex
    values, against |expected|: the real part of 1e-6 + 1j off by 1e-7 is 10 % of that part
    but 1e-7 of the element (passes FLOAT's rel 1e-4); off by 1e-3 it is 1e-3 of the element
    (fails)."""
    g = np.array([1e-6 + 1j, 3 - 4j], np.complex128)
    near = np.array([1.1e-6 + 1j, 3 - 4j], np.complex64)
    far = np.array([1e-3 + 1j, 3 - 4j], np.complex64)
    policy = policy_for("COMPLEX64")
    assert policy.rel == 1e-4  # the parts' (FLOAT) dual-ratio threshold, from the defaults
    for a, close in ((near, True), (far, False)):
        rel = abs(complex(a[0]) - complex(g[0])) / abs(complex(g[0]))  # independent: |a-e|/|e|
        assert (rel <= policy.rel) == close
        res = compare(g, a, "COMPLEX64", policy)
        assert res.stats.mismatches == (0 if close else 1), res.stats
        assert res.stats.max_rel == pytest.approx(float(abs(a[0].real - g[0].real)), rel=1e-6)


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match="shape"):
        compare(np.zeros(3), np.zeros(4, np.float32), "FLOAT", policy_for("FLOAT"))


def test_zero_dim_output():
    # 2 -> 2.5 in float32: 0.5 / 2^-22 (spacing in [2, 4)) = 2^21 ulps, rel 0.25
    res = compare(
        np.float64(2.0), np.float32(2.5), "FLOAT", policy_for("FLOAT"), inputs={"x": np.array(7.0)}
    )
    assert not res.passed and res.stats.n == 1 and res.stats.max_ulp == 2.0**21
    assert res.worst[0].index == () and res.worst[0].inputs == {"x": 7.0}
    assert res.worst[0].rel_err == 0.25


def test_empty_output_passes():
    res = compare(
        np.zeros((0, 3)),
        np.zeros((0, 3), np.float16),
        "FLOAT16",
        policy_for("FLOAT16", {"FLOAT16": {"mere": 0.0, "mare": 0.0}}),
    )
    assert res.passed and res.stats.n == 0 and res.stats.mismatch_ratio == 0


def test_to_dict_is_json_safe():
    g = np.array([1.0, 2.0])
    a = np.array([np.inf, 2.0], np.float32)
    d = compare(g, a, "FLOAT", policy_for("FLOAT"), inputs={"x": g}).to_dict()
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert back["passed"] is False and "inf mismatch" in back["reasons"][0]
    assert back["stats"]["max_abs"] == "inf"
    assert back["stats"]["mare"] == 0.0  # the inf actual is an inf mismatch, not in MARE
    assert back["worst"][0]["index"] == [0] and back["worst"][0]["ulp"] == "nan"
    assert back["worst"][0]["inputs"] == {"x": 1.0}
