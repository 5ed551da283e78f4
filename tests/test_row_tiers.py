"""The compiled row tiers of a formula with reductions (reference/rowgen.py, rows.Compiled):
tier 1 in float64 with its error bound and the double-double rows, against mpmath and exact
sums on hard rows, and bit for bit against the numpy tiers on every registry spec with a
reduction."""

from __future__ import annotations

import contextlib
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.compiled import mode as compiled_mode
from aclnn_conformance.conformance.spec.interpret import attribute_env
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.spec.shapes import ShapeError, rule_order, shape_of
from aclnn_conformance.reference import engine, rows
from aclnn_conformance.reference.plan import plan

from tests.support.paths import HAVE_NUMBA
from tests.support.rounding import NP, mismatches, round_exact
from tests.test_reductions import _hard_softmax_rows, _log_softmax_mp, _run, _softmax_mp, _spec

pytestmark = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed (pip install .[fast])"
)

SOFTMAX = ("ex / sum(ex, -1)", "ex = exp(self - amax(self, -1))")
LOG_SOFTMAX = ("self - m - log(sum(exp(self - m), -1))", "m = amax(self, -1)")


@pytest.fixture
def numba_path():
    old = compiled_mode.set_mode("numba")
    yield
    compiled_mode.set_mode(old)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def _compiled(reg, x: np.ndarray, dtype: str):
    """rows.Compiled of the fixture's call on x (one row block), its raw rows and route."""
    spec = reg.get("reduce_fixture")
    t = TensorArg.from_array(x.astype(NP[dtype]), dtype)
    o = TensorArg.from_array(np.zeros(x.shape, t.storage.dtype), dtype)
    call = Call("aclnnReduceFixture", "atlas-a2", {"self": t, "out": o})
    env = attribute_env(spec, call)
    route = plan(spec, call, False)
    fast = rows.Compiled.make(spec, env, route, x.size, x.shape[1])
    assert fast is not None and fast.dd is not None
    return fast, {"self": t.storage.reshape(x.shape)}


# -- tier 1 and the double-double rows against mpmath ---------------------------------------------


@pytest.mark.kernels  # numba compiles a row kernel pair per formula (CI's kernels tier)
@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16", "BF16"])
@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
def test_compiled_softmax_rows_correctly_rounded(tmp_path, numba_path, dtype, which):
    """The hard rows of test_reductions (dominant element, underflow, equal values, the whole
    exp range, a large offset) plus a long row, through the compiled tiers: bit for bit the
    exact value rounded once (mpmath at 60 digits)."""
    value, let = SOFTMAX if which == "softmax" else LOG_SOFTMAX
    oracle = _softmax_mp if which == "softmax" else _log_softmax_mp
    reg = _spec(tmp_path, value, let)
    rng = np.random.default_rng(23)
    x = np.concatenate([_hard_softmax_rows(rng, 300), rng.normal(size=(2, 300)) * 8])
    x = x.astype(NP[dtype]).astype(np.float64)
    got = _run(reg, x, dtype)
    with mp.workdps(60):
        want = np.array(
            [[round_exact(v, dtype) for v in oracle([mp.mpf(float(a)) for a in r])] for r in x],
            dtype=NP[dtype],
        )
    bad = mismatches(got, want)
    assert not bad.size, (bad[:5], got.ravel()[bad[:5]], want.ravel()[bad[:5]])


@pytest.mark.slow  # a kernel pair compiled per formula
@pytest.mark.parametrize(
    "value",
    [
        "sum(self, -1) + 0 * self",  # cancellation: the rows below sum to tiny values
        "mean(self, -1) - self",
        "prod(self, -1) + self",
        "logsumexp(self, -1) + 0 * self",
        "amin(self, -1) * self",
        "where(self > 0, self / sum(abs(self), -1), 0 - self)",
    ],
)
def test_compiled_reductions_match_exact(tmp_path, numba_path, value):
    """Each reduction of the language through the compiled tiers, FLOAT: the exact value
    (math.fsum-grade exact sums as fractions, mpmath at 80 digits) rounded once."""
    reg = _spec(tmp_path, value)
    rng = np.random.default_rng(7)
    half = (rng.normal(size=(3, 32)) * 1e4).astype(np.float32).astype(np.float64)
    cancel = np.concatenate([half, -half[:, ::-1] * (1 + 2.0**-20)], axis=1)
    spread = rng.normal(size=(3, 64)) * np.exp2(rng.integers(-30, 30, size=(3, 64)))
    near_one = 1 + rng.normal(size=(2, 64)) * 2.0**-12  # products near 1, sums of like terms
    x = np.concatenate([cancel, spread, near_one]).astype(np.float32).astype(np.float64)
    got = _run(reg, x, "FLOAT")
    with mp.workdps(80):
        for i, row in enumerate(x):
            exact = sum((Fraction(float(v)) for v in row), Fraction(0))
            s = mp.mpf(exact.numerator) / exact.denominator
            vals = [mp.mpf(float(v)) for v in row]
            env = {
                "sum": s,
                "mean": s / len(row),
                "prod": mp.fprod(vals),
                "logsumexp": mp.log(mp.fsum(mp.exp(v) for v in vals)),
                "amin": min(vals),
                "abs": mp.fsum(abs(v) for v in vals),
            }
            for j, v in enumerate(vals):
                want = _exact(value, v, env)
                assert got[i, j] == round_exact(want, "FLOAT"), (i, j, value)


def _exact(value: str, v, env: dict):
    if value.startswith("sum"):
        return env["sum"]
    if value.startswith("mean"):
        return env["mean"] - v
    if value.startswith("prod"):
        return env["prod"] + v
    if value.startswith("logsumexp"):
        return env["logsumexp"]
    if value.startswith("amin"):
        return env["amin"] * v
    return v / env["abs"] if v > 0 else -v


@pytest.mark.kernels  # numba compiles a row kernel pair per formula (CI's kernels tier)
def test_double_double_rows_decide_what_float64_cannot(tmp_path, numba_path):
    """Rows whose float64 sum is exactly a FLOAT midpoint: tier 1 flags the two whose sum
    rounded (a TwoSum error); the double-double rows decide them (up and down, as exact
    arithmetic says). The true tie, summed without one rounding, tier 1 decides itself."""
    reg = _spec(tmp_path, "sum(self, -1) + 0 * self")
    h = 2.0**-24  # half a FLOAT ulp at 1
    x = np.array([[1.0, h, 2.0**-60, 0.0], [1.0, h, -(2.0**-60), 0.0], [1.0, h, 0.0, 0.0]])
    fast, raw = _compiled(reg, x, "FLOAT")
    y, flags, bad = fast.tier1(raw, x.shape)
    assert not bad.size and (y == 1 + h).all()  # float64's sum is 1 + 2^-24 on every row
    assert (flags[:2] != 0).all() and (flags[2] == 0).all()  # the exact tie: no error to bound
    left = fast.settle(raw, y, np.flatnonzero(flags.ravel()))
    assert left.size == 0
    exact = [sum((Fraction(v) for v in row), Fraction(0)) for row in x[:2]]
    for i in range(2):
        assert np.float32(y[i, 0]) == round_exact(exact[i], "FLOAT")
    assert np.float32(y[0, 0]) > np.float32(y[1, 0])
    got = _run(reg, x, "FLOAT")  # and the whole call: the tie to even
    assert got[2, 0] == np.float32(1.0) and got[0, 0] == np.float32(1 + 2.0**-23)


@pytest.mark.kernels  # numba compiles a row kernel pair per formula (CI's kernels tier)
def test_double_double_decisions_agree_with_mpmath(tmp_path, numba_path):
    """Every element the double-double rows decide (tier 1 asked for all of them) is the exact
    value rounded once (mpmath): softmax over rows of normal values, FLOAT16 (coarse, so that
    many elements are near a midpoint)."""
    value, let = SOFTMAX
    reg = _spec(tmp_path, value, let)
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(6, 200)) * 3).astype(np.float16).astype(np.float64)
    fast, raw = _compiled(reg, x, "FLOAT16")
    y, _, _ = fast.tier1(raw, x.shape)
    everything = np.arange(x.size)
    left = fast.settle(raw, y, everything)
    # the pairs decide nearly all of them: not those below FLOAT16's smallest subnormal (under
    # 2^-24 the output keeps no bit of the float64 value's; mpmath rounds them)
    assert left.size < x.size // 50
    assert (np.abs(y.ravel()[left]) < 2.0**-23).all()
    decided = np.setdiff1d(everything, left)
    with mp.workdps(60):
        want = [_softmax_mp([mp.mpf(float(a)) for a in r]) for r in x]
    for k in decided:
        i, j = divmod(int(k), x.shape[1])
        got = dt.round_to(np.array([y[i, j]]), dt.get("FLOAT16"))[0]
        assert got == round_exact(want[i][j], "FLOAT16"), (i, j)


def _numpy_run(reg, x: np.ndarray, dtype: str) -> np.ndarray:
    """_run on the numpy tiers (the compiled switch set back to numba after)."""
    compiled_mode.set_mode("numpy")
    try:
        return _run(reg, x, dtype)
    finally:
        compiled_mode.set_mode("numba")


@pytest.mark.kernels  # numba compiles a row kernel pair per formula (CI's kernels tier)
def test_rows_with_specials_follow_ieee_as_numpy(tmp_path, numba_path):
    """A row whose reductions meet an infinity or NaN is evaluated by the numpy tier (IEEE):
    the same values as the numpy path; -inf elements (masking) stay on the compiled path."""
    value, let = SOFTMAX
    reg = _spec(tmp_path, value, let)
    x = np.array([[0.0, np.nan, 1.0], [0.0, np.inf, 1.0], [-np.inf, 2.0, 3.0], [-np.inf] * 3])
    got = _run(reg, x, "FLOAT")
    assert np.array_equal(_bits(got), _bits(_numpy_run(reg, x, "FLOAT")))
    assert got[2, 0] == 0 and got[2, 2] == np.float32(1 / (1 + np.exp(-1)))


@pytest.mark.kernels  # numba compiles a row kernel pair per formula (CI's kernels tier)
def test_rows_of_nan_take_ieee_values_without_bounds(tmp_path, numba_path, monkeypatch):
    """Rows whose every value is NaN (an ATK case of NaN inputs: 14 M elements) take numpy's
    IEEE values (rows.ieee) and never the bounded numpy tier; a row with a finite value among
    its specials still does (rows.tier1), and both agree with the numpy path."""
    value, let = SOFTMAX
    reg = _spec(tmp_path, value, let)
    calls: list[int] = []
    real = rows.tier1
    monkeypatch.setattr(rows, "tier1", lambda *a, **k: (calls.append(a[3][0]), real(*a, **k))[1])
    nan = np.full((64, 5), np.nan)
    assert np.isnan(_run(reg, nan, "FLOAT")).all() and not calls
    x = np.array([[-np.inf, 2.0, np.inf], [np.nan, 1.0, 2.0], [-np.inf, 0.0, 1.0]])
    assert np.array_equal(_bits(_run(reg, x, "FLOAT")), _bits(_numpy_run(reg, x, "FLOAT")))


@pytest.mark.kernels  # numba compiles a row kernel pair per formula (CI's kernels tier)
@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
def test_double_outputs_through_the_pairs_are_faithful(tmp_path, numba_path, which):
    """DOUBLE on the compiled path: the double-double rows are tier 1 over every element
    (rows.Compiled.every, in parallel); what they leave goes through numpy's long double rows
    (rows._long_double), and every element is within an ulp of the exact value (mpmath at 60
    digits), rows of a wide range (where x - max loses bits) included."""
    value, let = SOFTMAX if which == "softmax" else LOG_SOFTMAX
    oracle = _softmax_mp if which == "softmax" else _log_softmax_mp
    reg = _spec(tmp_path, value, let)
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.normal(size=(3, 200)) * 300, _hard_softmax_rows(rng, 200)])
    calls = []
    real = rows.Compiled.tier1

    def spy(self, raw, shape, *rest):
        calls.append(self.every)
        return real(self, raw, shape, *rest)

    rows.Compiled.tier1 = spy
    try:
        got = _run(reg, x, "DOUBLE")
    finally:
        rows.Compiled.tier1 = real
    assert calls and all(calls)  # the pairs were tier 1
    with mp.workdps(60):
        for i, r in enumerate(x):
            want = oracle([mp.mpf(float(a)) for a in r])
            for j, w in enumerate(want):
                assert abs(mp.mpf(float(got[i, j])) - w) < mp.mpf(np.spacing(abs(float(w)))), (i, j)


@pytest.mark.kernels  # numba compiles a row kernel pair per formula (CI's kernels tier)
@pytest.mark.parametrize("scale", [1, -16, 20])
def test_division_by_a_row_value_is_correctly_rounded(tmp_path, numba_path, scale):
    """(x c) / sum(x c d, -1) in the row kernel divides by the row's reciprocal where the sum is
    a normal number below 2^1020 (two roundings in its bound), else by the sum itself: with
    c = d = 1 (rows of ordinary values, a zero sum, ties: x / 4 exact), c = 1e-300 and
    d = 1e-16 (a subnormal sum: its reciprocal overflows), c = 1e300 and d = 2^20 (a sum
    beyond 2^1020: its reciprocal subnormal). FLOAT: the exact quotient x / (d sum(x))
    (Fractions, the literals' doubles exact) rounded once."""
    c, d = {1: ("1.0", "1.0"), -16: ("1e-300", "1e-16"), 20: ("1e300", repr(2.0**20))}[scale]
    reg = _spec(tmp_path, f"(self * {c}) / sum(self * {c} * {d}, -1)")
    rng = np.random.default_rng(41)
    n = 64
    rows_ = [
        rng.normal(size=n),
        np.abs(rng.normal(size=n)) * 2,
        np.concatenate([np.ones(n // 2), -np.ones(n // 2)]),  # a zero sum
        np.full(n, 0.25),  # quotients 1 / n: exact
    ]
    x = np.array(rows_).astype(np.float32).astype(np.float64)
    got = _run(reg, x, "FLOAT")
    for i, r in enumerate(x):
        total = sum(Fraction(float(v)) for v in r) * Fraction(float(d))
        for j, v in enumerate(r):
            if total == 0:  # IEEE: a zero sum gives inf or NaN
                with np.errstate(all="ignore"):
                    want = np.float32(np.float64(v) / 0.0)
                assert np.array_equal(got[i, j], want, equal_nan=True), (i, j)
                continue
            assert got[i, j] == round_exact(Fraction(float(v)) / total, "FLOAT"), (i, j)


def _cross_entropy_call(x: np.ndarray, t: np.ndarray, reduction: str, smoothing: float) -> Call:
    n, c = x.shape
    rows_out = (n,) if reduction == "none" else (1,)
    args = {
        "input": TensorArg.from_array(x, "FLOAT"),
        "target": TensorArg.from_array(t, "INT64"),
        "weightOptional": None,
        "reductionOptional": reduction,
        "ignoreIndex": 2,
        "labelSmoothing": smoothing,
        "lseSquareScaleForZloss": 0.0,
        "returnZloss": False,
        "lossOut": TensorArg.from_array(np.zeros(rows_out, np.float32), "FLOAT"),
        "logProbOut": TensorArg.from_array(np.zeros((n, c), np.float32), "FLOAT"),
        "zlossOut": TensorArg.from_array(np.zeros(rows_out, np.float32), "FLOAT"),
        "lseForZlossOut": TensorArg.from_array(np.zeros(n, np.float32), "FLOAT"),
    }
    return Call("aclnnCrossEntropyLoss", "atlas-a2", args)


@pytest.mark.kernels  # numba compiles a row kernel per output, with and without the shared values
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_outputs_share_a_row_reduction_computed_once(numba_path, monkeypatch, smoothing):
    """Two outputs reading one row reduction (the cross entropy's loss and log-probabilities,
    logsumexp over the class dim): the loss's kernel writes each row's value, bound and flags,
    the log-probabilities' kernel reads them (it walks no row), and every output is bit for bit
    what each output computing its own gives, on rows of -inf, NaN, +inf, equal values and a
    dominant element, and the log-probabilities are the exact x - lse rounded once."""
    from aclnn_conformance.reference import rowgen

    rng = np.random.default_rng(17)
    n, c = 40, 700
    x = (rng.normal(size=(n, c)) * 3).astype(np.float32)
    x[0, :] = -np.inf
    x[1, 3], x[2, 5], x[4, 2], x[6, 0] = np.nan, np.inf, -np.inf, 90.0
    x[3, :] = 7.0
    t = rng.integers(0, c, n)
    reg = default_registry()
    given = []
    real = rowgen.generate

    def spy(*a, **k):
        given.append(bool(k.get("given")))
        return real(*a, **k)

    monkeypatch.setattr(rowgen, "generate", spy)
    shared = engine.evaluate(_cross_entropy_call(x, t, "none", smoothing), reg)
    assert shared.status == 0, shared.message
    assert any(given)  # a kernel read the shared rows
    monkeypatch.setattr(rows.Shared, "among", classmethod(lambda cls, outs: None))
    alone = engine.evaluate(_cross_entropy_call(x, t, "none", smoothing), reg)
    for k in ("lossOut", "logProbOut"):
        a, b = np.asarray(shared.outputs[k]), np.asarray(alone.outputs[k])
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), k
    with mp.workdps(60):
        for r in (1, 4, 5, 6):  # a NaN row, a -inf entry, an ordinary row, a dominant element
            row = [mp.mpf(float(v)) for v in x[r]]
            if any(mp.isnan(v) for v in row):
                assert np.isnan(shared.outputs["logProbOut"].reshape(n, c)[r]).all()
                continue
            lse = mp.log(mp.fsum(mp.exp(v) for v in row))
            want = [round_exact(v - lse, "FLOAT") for v in row]
            got = shared.outputs["logProbOut"].reshape(n, c)[r]
            assert np.array_equal(got, np.array(want, np.float32)), r


@pytest.mark.kernels  # numba compiles the row kernels of both outputs
def test_prepare_makes_the_kernels_that_share_a_reduction(numba_path, monkeypatch):
    """engine.prepare (before a case's clock starts) makes every kernel the evaluation then
    runs, the one reading the shared logsumexp included: the evaluation makes no new one."""
    from aclnn_conformance.reference import kernel

    rng = np.random.default_rng(8)
    x = rng.normal(size=(300, 500)).astype(np.float32)
    call = _cross_entropy_call(x, rng.integers(0, 500, 300), "none", 0.0)
    made: list[str] = []
    real = kernel._compiled
    monkeypatch.setattr(kernel, "_compiled", lambda src: (made.append(src.text), real(src))[1])
    engine.prepare(call, default_registry())
    prepared = set(made)
    assert any("sv[r, 0]" in t and "= sv[r, 0]" in t for t in prepared)  # the reading kernel
    made.clear()
    assert engine.evaluate(call, default_registry()).status == 0
    assert set(made) <= prepared


# -- the compiled tiers give the numpy tiers' bits on every spec with a reduction ---------------


def _reduction_specs() -> list[str]:
    reg = default_registry()
    return [  # a reduction in any output's formula (aclnnPreluBackward's second)
        n
        for n in reg.names()
        if any(rows.reductions(s) for s in reg.get(n).computed) and not reg.get(n).inplace_of
    ]


def _call(spec, dtype: str, shape, rng) -> Call:
    """Every tensor of `shape`, but a tensor with a shape rule (a loss's per-row output) of the
    shape its rule gives."""
    attrs = {p.name: p.default for p in spec.params if not p.is_tensor}
    shapes = {p.name: tuple(shape) for p in spec.params if p.is_tensor}
    for p in rule_order(spec.params):
        with contextlib.suppress(ShapeError):  # a rule the case cannot meet: evaluation says so
            shapes[p.name] = shape_of(p.shape, shapes, attrs)
    args = {}
    for p in spec.params:
        if p.is_tensor:
            a = rng.normal(size=shapes[p.name]) * 3
            if a.ndim == 2:
                a[0, :3] = [40.0, -40.0, 0.0]  # a dominant element, a vanishing one, a zero
            args[p.name] = TensorArg.from_array(a.astype(NP[dtype]), dtype)
        else:
            args[p.name] = p.default
    return Call(spec.op, spec.products[0], args)


def _planned_call(spec, dtype: str, shape) -> Call | None:
    """A call the generator builds (index tensors drawn in range, each tensor of its own dtype)
    from the spec's first valid dtype combination whose float tensors are all `dtype`, the
    planner's base call of `shape`; None where the spec has no such combination."""
    from aclnn_conformance.conformance.cases.generate import build, dtype_combos
    from aclnn_conformance.conformance.cases.plan import base_args, make_plan

    product = spec.products[0]
    for combo in dtype_combos(spec, product):
        floats = {d for d in combo.values() if dt.get(d).category == "float"}
        if floats != {dtype}:
            continue
        args = base_args(spec, combo, tuple(shape))  # the checks' fits (a 4-D self), the rules
        plan_ = make_plan(spec, product, "positive", args, "rows", [])
        return build(spec, plan_, 0).call
    return None


@pytest.mark.slow  # a kernel pair compiled per spec and input type
@pytest.mark.parametrize("name", _reduction_specs())
@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16", "BF16"])
def test_compiled_rows_equal_numpy_rows(name, dtype):
    """Every registry spec with a reduction, on random rows: the compiled tiers' output is the
    numpy tiers' bit for bit (both correctly rounded, so any difference is a bug of one)."""
    spec = default_registry().get(name)
    call = _call(spec, dtype, (23, 57), np.random.default_rng(len(name)))
    if engine.evaluate(call).status != 0:  # one dtype for every tensor is refused (an int
        call = _planned_call(spec, dtype, (23, 57))  # target): a generated call instead
        if call is None:
            pytest.skip(f"{name} has no valid call whose float tensors are all {dtype}")
    out = {}
    for path in ("numpy", "numba"):
        old = compiled_mode.set_mode(path)
        try:
            res = engine.evaluate(call)
        finally:
            compiled_mode.set_mode(old)
        assert res.status == 0, res.message
        out[path] = {k: v.copy() for k, v in res.outputs.items()}
    for k, v in out["numpy"].items():  # bit for bit, a NaN's sign and payload aside
        w = out["numba"][k]
        assert np.array_equal(np.isnan(v), np.isnan(w)), k
        keep = ~np.isnan(v)
        assert np.array_equal(v[keep].view(np.uint8), w[keep].view(np.uint8)), k


# -- the building blocks -----------------------------------------------------------------------


@pytest.mark.kernels  # numba compiles a row kernel pair per formula (CI's kernels tier)
def test_dlog_matches_mpmath():
    """ddmath.dlog within 2^-56 relative of log(hi + lo) (mpmath at 300 bits), near 1 (the
    log1p branch) and far from it (the Newton step)."""
    from aclnn_conformance.conformance.compiled.ddmath import dlog
    from numba import njit

    @njit(error_model="numpy")
    def run(hi, lo, oh, ol):
        for i in range(hi.size):
            oh[i], ol[i] = dlog((hi[i], lo[i]))

    rng = np.random.default_rng(1)
    hi = np.concatenate([1 + rng.normal(size=300) * 2.0 ** rng.integers(-50, -1, 300),
                         np.exp2(rng.uniform(-900, 900, 300)), rng.uniform(0.3, 3, 300)])  # fmt: skip
    lo = hi * rng.uniform(-1, 1, hi.size) * 2.0**-54
    lo = (hi + lo) - hi  # a normalized pair
    oh, ol = np.empty_like(hi), np.empty_like(hi)
    run(hi, lo, oh, ol)
    with mp.workprec(300):
        for a, b, h, ll in zip(hi, lo, oh, ol, strict=True):
            exact = mp.log(mp.mpf(float(a)) + mp.mpf(float(b)))
            assert abs(mp.mpf(float(h)) + mp.mpf(float(ll)) - exact) <= abs(exact) * 2.0**-56


def test_flag_is_sound_against_numpy_rounding():
    """rowmath.flag_f64: wherever it says decided (0), y - 4 err and y + 4 err round to the
    same FLOAT (the test rows.tier1 makes in numpy), and the guard's near-midpoint values are
    flagged where the value carries any error; an error bound of 0 (every operation exact) is
    decided, on a midpoint too (its rounding is the exact value's)."""
    from aclnn_conformance.conformance.compiled.rowmath import flag_f64
    from numba import njit

    @njit
    def run(y, e, out, drop, guard, emin):
        for i in range(y.size):
            out[i] = flag_f64(y[i], e[i], False, drop, guard, emin)

    rng = np.random.default_rng(2)
    n = 200_000
    base = rng.normal(size=n).astype(np.float32).astype(np.float64)
    ulp = np.spacing(np.abs(base).astype(np.float32)).astype(np.float64)
    y = base + ulp * rng.choice([0.5, 0.5 + 2.0**-22, 0.5 - 2.0**-30, 0.25, 0.999], n)
    err = np.abs(y) * 2.0 ** rng.uniform(-60, -30, n)
    err[::7] = 0.0
    out = np.empty(n, np.uint8)
    run(y, err, out, 29, int(2.0**-20 * 2**29), 1023 - 126)
    f32 = dt.get("FLOAT")
    lo = dt.round_to(y - 4 * err, f32)
    hi = dt.round_to(y + 4 * err, f32)
    decided = out == 0
    assert (lo[decided] == hi[decided]).all()
    near = (np.abs(y - (base + ulp * 0.5)) < ulp * 2.0**-20) & (err > 0)
    assert near.sum() > n // 10 and (out[near] == 1).all()  # the guard, whatever err's size
    assert (out[err == 0] == 0).all()  # exact: the tie's rounding is y's own


@pytest.mark.parametrize("n", [1, 2, 3, 5, 64])
def test_short_rows_sum_like_fsum(n):
    """rowsum.row_sum_exact on many short rows (the vectorized paths: IEEE addition for one or
    two elements, Sum2 in numpy up to SHORT): math.fsum's value on finite rows, cancellation
    and overflow included, and IEEE's NaN and infinities where a row holds them."""
    import math

    from aclnn_conformance.conformance.compiled import rowsum

    rng = np.random.default_rng(n)
    x = rng.normal(size=(4000, n)) * np.exp2(rng.integers(-40, 40, size=(4000, n)))
    h = n // 2  # cancellation: a half and its negation, slightly off
    x[1::5, h : 2 * h] = -x[1::5, :h] * (1 + 2.0**-40)
    x[2] = 1.7e308
    x[3, 0] = np.nan
    x[4, 0], x[4, -1] = np.inf, (-np.inf if n > 1 else np.inf)
    x[5, 0] = -np.inf
    got = rowsum.row_sum_exact(x)
    for i, row in enumerate(x):
        if np.isfinite(row).all():
            exact = sum((Fraction(float(v)) for v in row), Fraction(0))
            want = float(round_exact(exact, "DOUBLE")) if abs(exact) < 2**1024 else math.inf
        else:
            with np.errstate(invalid="ignore"):
                want = float(np.sum(row))
        assert got[i] == want or (math.isnan(got[i]) and math.isnan(want)), (i, got[i], want)


# -- long rows: each reduction's row in segments, reduced in parallel, joined error-free -------


@pytest.fixture
def short_long_rows(monkeypatch, numba_path):
    """rowgen's long-row kernel from rows of 1024 elements on, in segments of 256 (the shipped
    thresholds, 2^18 and 2^14, made small so that a short row takes the long path)."""
    from aclnn_conformance.reference import rowgen

    monkeypatch.setattr(rowgen, "LONG", 1024)
    monkeypatch.setattr(rowgen, "SEG", 256)


def _exact_mse(x: np.ndarray, t: np.ndarray, reduction: int) -> Fraction:
    s = sum((Fraction(float(a)) - Fraction(float(b))) ** 2 for a, b in zip(x, t, strict=True))
    return s / len(x) if reduction == 1 else s


@pytest.mark.kernels  # numba compiles the long-row kernel per formula (CI's kernels tier)
@pytest.mark.parametrize("reduction", [1, 2])
def test_long_row_mean_and_sum_over_all_exact(short_long_rows, reduction):
    """mse_loss's mean and sum over every element (one row, 3001 elements: segments of 256 and
    a tail) on a huge dynamic range (1e18 next to 1e-20 and 1): the exact value (Fractions)
    rounded once, through the long-row kernel (one value per row)."""
    rng = np.random.default_rng(5)
    n = 3001
    x = rng.normal(size=n) * np.choose(rng.integers(0, 3, n), [1e18, 1.0, 1e-20])
    t = rng.normal(size=n)
    x, t = x.astype(np.float32), t.astype(np.float32)
    spec = default_registry().get("mse_loss")
    args = {"self": TensorArg.from_array(x, "FLOAT"), "target": TensorArg.from_array(t, "FLOAT"),
            "reduction": reduction, "out": TensorArg.from_array(np.zeros((), np.float32), "FLOAT")}  # fmt: skip
    from tests.support.tiers import row_path

    with row_path("numba") as seen:
        res = engine.evaluate(Call(spec.op, "atlas-a2", args))
    assert res.status == 0, res.message
    assert seen == [(1, 1)]  # one row, one value: the compiled tier ran it
    want = round_exact(_exact_mse(x, t, reduction), "FLOAT")
    assert res.outputs["out"].reshape(-1).view(np.uint32).tolist() == [
        np.float32(want).view(np.uint32)
    ]


@pytest.mark.kernels  # numba compiles the long-row kernel per formula (CI's kernels tier)
@pytest.mark.parametrize("which", ["softmax", "log_softmax", "sum"])
def test_long_rows_correctly_rounded(tmp_path, short_long_rows, which):
    """Rows of 2500 elements through the long-row kernel (amax, then the sum of exp(x - amax) in
    segments; a plain sum with cancellation): bit for bit the exact value rounded once (mpmath
    at 60 digits; Fractions for the sum)."""
    rng = np.random.default_rng(29)
    n = 2500
    if which == "sum":
        reg = _spec(tmp_path, "sum(self, -1)")
        big = rng.normal(size=n // 2) * 1e8
        x = np.stack([np.concatenate([big, -big]) + rng.normal(size=n) * 1e-3,  # cancellation
                      rng.normal(size=n) * np.logspace(-30, 30, n)])  # fmt: skip
    else:
        value, let = SOFTMAX if which == "softmax" else LOG_SOFTMAX
        reg = _spec(tmp_path, value, let)
        x = _hard_softmax_rows(rng, n)[[0, 2, 4]]
    x = x.astype(np.float32).astype(np.float64)
    from tests.support.tiers import row_path

    with row_path("numba") as seen:
        got = _run(reg, x, "FLOAT")
    assert seen, "the compiled row tiers did not run"
    with mp.workdps(60):
        if which == "sum":
            want = [[round_exact(sum(map(Fraction, r)), "FLOAT")] * n for r in x.tolist()]
        else:
            oracle = _softmax_mp if which == "softmax" else _log_softmax_mp
            want = [[round_exact(v, "FLOAT") for v in oracle([mp.mpf(a) for a in r])] for r in x]
    want = np.array(want, dtype=np.float32)
    bad = mismatches(got, want)
    assert not bad.size, (bad[:5], got.ravel()[bad[:5]], want.ravel()[bad[:5]])


def test_a_node_kind_rowgen_does_not_know_keeps_the_numpy_tiers(tmp_path, monkeypatch):
    """The gate is on IR node kinds, not on ops: a formula holding a kind missing from
    rowgen.KINDS (here Reduce, as a kind added to the language later would be) is not compiled,
    and the numpy tiers still give the exact sum rounded once."""
    from aclnn_conformance.conformance.spec.expr import ir
    from aclnn_conformance.reference import rowgen

    from tests.support.tiers import row_path

    monkeypatch.setattr(rowgen, "KINDS", tuple(k for k in rowgen.KINDS if k is not ir.Reduce))
    reg = _spec(tmp_path, "sum(self, -1)")
    x = np.array([[1e8, 1.0, -1e8, 2.0**-30], [3.0, 0.5, 0.25, -7.0]])
    with row_path("numba") as seen:
        got = _run(reg, x, "FLOAT")
    assert seen == []  # the compiled tier 1 never ran
    want = [round_exact(sum(map(Fraction, r)), "FLOAT") for r in x.tolist()]
    assert got[:, 0].tolist() == [float(w) for w in want]
