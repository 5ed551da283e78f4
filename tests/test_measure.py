"""The compiled comparison pass (conformance/compiled/measure.py) against numpy's casts and the numpy pass.

The compiled pass rounds the float64 golden to the output format with integer arithmetic; numpy
and ml_dtypes' casts (RNE, subnormals, overflow to inf) are the independent oracle for that. The
figures it reports must be the numpy pass's, bit for bit, whatever the values and the chunking.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from aclnn_conformance.conformance.judge.accumulate import Accumulator
from aclnn_conformance.conformance.spec.tolerances import policy_for

from tests.support.paths import HAVE_NUMBA

pytestmark = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed (pip install .[fast])"
)

NP = {"FLOAT": np.float32, "FLOAT16": np.float16, "BF16": ml_dtypes.bfloat16, "DOUBLE": np.float64}
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _accumulate(mode: str, dtype: str, g, a, chunk: int, monkeypatch, n_worst: int = 5):
    monkeypatch.setenv("ACLNN_CONFORM_KERNEL", mode)
    acc = Accumulator(dtype, policy_for(dtype), g.shape, None, n_worst)
    assert (acc.compiled is not None) == (mode == "numba")
    for start in range(0, g.size, chunk):
        acc.add(start, g[start : start + chunk], a[start : start + chunk])
    return acc.result()


def _step(x: np.ndarray, steps: int) -> np.ndarray:
    """x moved `steps` representable values away from zero (bit arithmetic, any float format)."""
    bits = x.view(UINT[x.dtype.itemsize])
    return (bits.astype(np.int64) + steps).astype(bits.dtype).view(x.dtype)


def _goldens(dtype: str, n: int, rng) -> np.ndarray:
    """float64 goldens for `dtype`: random magnitudes across its whole range and beyond, exact
    midpoints between neighbours (ties), the overflow threshold, subnormals, specials."""
    t = NP[dtype]
    info = ml_dtypes.finfo(t)
    lo, hi = np.log2(float(info.smallest_subnormal)) - 2, np.log2(float(info.max)) + 1
    mag = 2.0 ** rng.uniform(lo, hi, n) * rng.choice([-1.0, 1.0], n)
    with np.errstate(over="ignore"):
        v = mag.astype(t)
    v = v[np.isfinite(v.astype(np.float64))][: n // 4]
    ties = (v.astype(np.float64) + _step(v, 1).astype(np.float64)) / 2
    big = float(info.max)
    edges = [0.0, -0.0, np.nan, np.inf, -np.inf, big, -big, float(info.smallest_subnormal),
             float(info.smallest_subnormal) / 2, float(info.smallest_normal),
             float(info.smallest_normal) * (1 - 2.0**-30)]  # fmt: skip
    if dtype != "DOUBLE":  # max + half an ulp overflows to inf (a tie, even side); just below: max
        ulp_max = big - float(_step(np.array([info.max], t), -1)[0])
        edges += [big + ulp_max / 2, big + ulp_max / 2 * (1 - 2.0**-20)]
    out = np.concatenate([mag, ties, np.array(edges)])
    return rng.permutation(out)


def _rne_exact(g: np.ndarray, t) -> np.ndarray:
    """Round to nearest, ties to even, in exact rational arithmetic: of the cast's value and its
    two neighbours, the nearest to g (a cast through float32 may round twice: ml_dtypes' bf16)."""
    info = ml_dtypes.finfo(t)
    top = np.array([info.max], t)
    big = Fraction(float(info.max))
    overflow = big + (big - Fraction(float(_step(top, -1)[0]))) / 2  # a tie there goes to inf
    with np.errstate(over="ignore"):
        out = g.astype(t)
    for i, x in enumerate(g.tolist()):
        if not np.isfinite(x) or x == 0:
            continue
        fx = Fraction(x)
        if abs(fx) >= overflow:
            out[i] = np.array(np.inf if x > 0 else -np.inf).astype(t)
            continue
        base = out[i : i + 1] if np.isfinite(float(out[i])) else (top if x > 0 else -top)
        near = [v for v in np.concatenate([base, _step(base, 1), _step(base, -1)])
                if np.isfinite(float(v))]  # fmt: skip
        out[i] = min(near, key=lambda v: (abs(Fraction(float(v)) - fx), int(v.view(UINT[v.itemsize])) & 1))  # fmt: skip
    return out


@pytest.mark.parametrize("dtype", sorted(NP))
def test_golden_rounded_like_an_exact_rne(dtype, monkeypatch):
    """Actual = the golden rounded (RNE, exact arithmetic): 0 ulp everywhere; one further: 1."""
    rng = np.random.default_rng(7)
    g = _goldens(dtype, 20_000, rng)
    a = _rne_exact(g, NP[dtype])
    res = _accumulate("numba", dtype, g, a, 1 << 20, monkeypatch)
    finite = np.isfinite(a.astype(np.float64))
    assert res.stats.max_ulp == 0
    assert res.stats.nan_mismatches == res.stats.inf_mismatches == 0
    assert res.stats.compared == int(np.count_nonzero(finite))
    moved = np.where(finite & (np.abs(a.astype(np.float64)) < float(ml_dtypes.finfo(NP[dtype]).max)),
                     _step(a, 1), a)  # fmt: skip
    res1 = _accumulate("numba", dtype, g, moved, 1 << 20, monkeypatch)
    assert res1.stats.max_ulp == 1
    assert [w.ulp for w in res1.worst] == [1] * 5


def _actuals(dtype: str, g: np.ndarray, rng) -> np.ndarray:
    t = NP[dtype]
    with np.errstate(over="ignore", invalid="ignore"):
        a = g.astype(t)
        i = rng.integers(0, g.size, g.size // 5)
        a[i] = (g[i] * (1 + rng.standard_normal(i.size) * 1e-3)).astype(t)
    i = rng.integers(0, g.size, 300)
    a[i] = np.array([np.nan, np.inf, -np.inf, 0.0]).astype(t)[rng.integers(0, 4, 300)]
    i = rng.integers(0, g.size, 300)
    a[i] = -a[i]
    i = rng.integers(0, g.size, 300)
    a[i] = _step(a[i], 3)
    return a


@pytest.mark.parametrize("dtype", sorted(NP))
def test_same_figures_as_the_numpy_pass(dtype, monkeypatch):
    rng = np.random.default_rng(11)
    g = _goldens(dtype, 50_000, rng)
    a = _actuals(dtype, g, rng)
    for chunk in (3 * 1024, 1 << 20):
        want = _accumulate("numpy", dtype, g, a, chunk, monkeypatch).to_dict()
        got = _accumulate("numba", dtype, g, a, chunk, monkeypatch).to_dict()
        assert got == want
    assert want["stats"]["mismatches"] > 0 and want["stats"]["nan_mismatches"] > 0


def test_complex_outputs_take_the_numpy_pass(monkeypatch):
    """A complex part is judged relative to its element's magnitude, which the compiled pass
    does not model: complex outputs never take it, so the figures are the same either way."""
    rng = np.random.default_rng(11)
    g = _goldens("FLOAT", 20_000, rng)[:20_000] + 1j * _goldens("FLOAT", 20_000, rng)[:20_000]
    a = np.empty(g.shape, np.complex64)
    a.real, a.imag = _actuals("FLOAT", g.real, rng), _actuals("FLOAT", g.imag, rng)
    results = []
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("ACLNN_CONFORM_KERNEL", mode)
        acc = Accumulator("COMPLEX64", policy_for("COMPLEX64"), g.shape, None, 5)
        assert acc.compiled is None
        acc.add(0, g, a)
        results.append(acc.result().to_dict())
    assert results[0] == results[1] and results[0]["stats"]["mismatches"] > 0


@pytest.mark.parametrize("dtype", sorted(NP))
def test_outputs_of_zeros_and_infinities_give_the_numpy_pass_figures(dtype, monkeypatch):
    """Whole blocks of zeros, infinities and NaN (the vendor's cases with an infinite input make
    every element infinite), matched and not, and a zero threshold (a zero is then a normal)."""
    rng = np.random.default_rng(5)
    n = 3 * 1024 + 17
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    g = specials[rng.integers(0, 5, n)]
    g[: 2 * 1024] = np.where(np.arange(2048) < 1024, np.inf, 0.0)  # one block each, matched
    a = g.astype(NP[dtype])
    flip = rng.integers(0, n, 40)
    a[flip] = specials[rng.integers(0, 5, 40)].astype(NP[dtype])  # some mismatched
    for pol in (policy_for(dtype), dataclasses.replace(policy_for(dtype), small_threshold=0.0)):
        got, want = [], []
        for mode, out in (("numba", got), ("numpy", want)):
            monkeypatch.setenv("ACLNN_CONFORM_KERNEL", mode)
            acc = Accumulator(dtype, pol, g.shape, None, 5)
            acc.add(0, g, a)
            out.append(acc.result().to_dict())
        assert got == want
    assert want[0]["stats"]["compared"] > 0 and want[0]["stats"]["nan_mismatches"] > 0


def test_chunking_does_not_change_the_figures(monkeypatch):
    rng = np.random.default_rng(3)
    g = rng.standard_normal(300_000) * 10.0 ** rng.integers(-6, 6, 300_000)
    a = _actuals("FLOAT", g, rng)
    runs = [_accumulate("numba", "FLOAT", g, a, c, monkeypatch).to_dict() for c in (1024, 7 * 1024, 1 << 20)]  # fmt: skip
    assert runs[0] == runs[1] == runs[2]


def test_auto_keeps_small_outputs_on_the_numpy_pass(monkeypatch):
    monkeypatch.setenv("ACLNN_CONFORM_KERNEL", "auto")
    assert Accumulator("FLOAT", policy_for("FLOAT"), (1024,)).compiled is None
    assert Accumulator("FLOAT", policy_for("FLOAT"), (4096, 1024)).compiled is not None
    assert Accumulator("INT32", policy_for("INT32"), (4096, 1024)).compiled is None
