"""Reductions of the formula language (sum, mean, amax, amin, prod, logsumexp, any, all): the
language, the row sums, and the reference's results against independent oracles.

The oracles: `math.fsum` (the exact sum, correctly rounded) for row sums, and mpmath at 60
digits per element, rounded to the output dtype by tests/support/rounding.round_exact (which
enumerates neighbouring values: it never calls the engine's rounding), for softmax, log_softmax
and the other reductions; numpy's float64 reductions only where the result is exact anyway
(max, min, any, all). The formulas the engine evaluates are fixture specs written here; the
oracles never read them.
"""

from __future__ import annotations

import math
import textwrap
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, CallError, TensorArg
from aclnn_conformance.conformance.compiled import mode as compiled_mode
from aclnn_conformance.conformance.compiled import rowsum
from aclnn_conformance.conformance.spec.expr import ir
from aclnn_conformance.conformance.spec.expr.language import ExprError, compile_expr
from aclnn_conformance.conformance.spec.expr.mpeval import mp_arithmetic
from aclnn_conformance.conformance.spec.registry import Registry, load_spec
from aclnn_conformance.reference import engine

from tests.support.paths import HAVE_NUMBA
from tests.support.rounding import NP, mismatches, round_exact

mp = mpmath.mp


# -- the language ---------------------------------------------------------------------------------


def test_reduction_forms_lower_to_reduce_nodes():
    e = compile_expr("sum(x, -1) + amax(x, (0, 2)) + mean(x, all) + prod(x, dim)", ["x", "dim"])
    got = {(r.fn, r.dims, r.param) for r in ir.reductions(e.ir)}
    assert got == {("sum", (-1,), None), ("amax", (0, 2), None), ("mean", None, None),
                   ("prod", None, "dim")}  # fmt: skip
    assert "dim" in e.names and {"sum", "amax", "mean", "prod"} <= e.functions


@pytest.mark.parametrize(
    "text, message",
    [
        ("sum(x)", "takes 2 argument"),
        ("sum(x, 1.5)", "dim must be an int literal"),
        ("sum(x, y)", "not a parameter"),
        ("sum(x, 8)", "out of range"),
        ("sum(x, -9)", "out of range"),
        ("sum(x, ())", "empty tuple"),
        ("sum(x, x + 1)", "dim must be an int literal"),
    ],
)
def test_bad_reductions_are_rejected(text, message):
    with pytest.raises(ExprError, match=message):
        compile_expr(text, ["x"])


# -- row sums against math.fsum -------------------------------------------------------------------


def _paths():
    return ("numpy", "numba") if HAVE_NUMBA else ("numpy",)


def _exact_sum(row: np.ndarray) -> float:
    """The exact sum (Fraction), correctly rounded to float64 (past its range: the infinity)."""
    exact = sum((Fraction(float(v)) for v in row), Fraction(0))
    try:
        return float(exact)
    except OverflowError:
        return math.copysign(math.inf, exact)


def _hard_rows(rng: np.random.Generator) -> list[np.ndarray]:
    tiny = 2.0**-1074
    return [
        np.array([1e300, 1.0, -1e300, tiny]),  # catastrophic cancellation
        np.array([2.0**53, 1.0, 1.0, -(2.0**53)]),  # float64's naive sum loses both ones
        np.array([1e308, 1e308, -1e308]),  # an intermediate overflow, exact sum finite
        np.array([1.0, 2.0**-60, -1.0, 2.0**-120]),
        rng.normal(size=4096) * np.exp2(rng.integers(-300, 300, size=4096)),  # huge range
        np.concatenate([rng.normal(size=1000), -rng.normal(size=1000)]) * 1e200,
        np.zeros(0),
    ]


@pytest.mark.parametrize("path", _paths())
def test_row_sums_match_fsum(path):
    rng = np.random.default_rng(7)
    old = compiled_mode.set_mode(path)
    try:
        for row in _hard_rows(rng):
            got = rowsum.row_sum(row[None, :])[0]
            want = _exact_sum(row)
            if path == "numpy":  # exact, correctly rounded
                assert got == want, (row[:4], got, want)
            else:  # Sum2 within an ulp (its bound failing sends the row to fsum)
                assert abs(got - want) <= math.ulp(want), (row[:4], got, want)
    finally:
        compiled_mode.set_mode(old)


def test_row_sums_of_specials_follow_ieee():
    x = np.array([[1.0, np.inf], [np.inf, -np.inf], [np.nan, 1.0], [-np.inf, 2.0]])
    got = rowsum.row_sum(x)
    assert got[0] == np.inf and np.isnan(got[1]) and np.isnan(got[2]) and got[3] == -np.inf


def test_mpmath_sum_is_exact_then_rounded():
    ar = mp_arithmetic(mp)
    with mpmath.workprec(53):
        s = ar.r_sum([mp.mpf(1e300), mp.mpf(1), mp.mpf(-1e300), mp.mpf(2) ** -2000])
    assert s == 1  # mpmath.fsum gives 0 here
    assert ar.r_amax([mp.mpf(1), mp.nan]) != ar.r_amax([mp.mpf(1), mp.nan])  # NaN
    assert ar.r_logsumexp([mp.mpf(1000), mp.mpf(1000)]) == 1000 + mp.log(2)


# -- the reference against mpmath -----------------------------------------------------------------


def _spec(tmp_path: Path, value: str, let: str = "", name: str = "reduce_fixture"):
    lets = ""
    if let:
        name_, value_ = (part.strip() for part in let.split("=", 1))
        lets = f'  let:\n    - {{id: l, name: {name_}, value: "{value_}", source: t}}\n'
    text = textwrap.dedent(
        f"""\
        format: 1
        op: aclnnReduceFixture
        name: {name}
        summary: a reduction fixture
        source:
          doc: none
        products: [atlas-a2]
        params:
          - {{name: self, kind: tensor, role: input, c_type: "const aclTensor*"}}
          - {{name: out, kind: tensor, role: output, c_type: "aclTensor*"}}
        dtype_sets:
          float:
            source: t
            default: [FLOAT, FLOAT16, BF16, DOUBLE]
        checks:
          - {{id: null-ptr, kind: not_null, params: [self, out], status: ACLNN_ERR_PARAM_NULLPTR, source: t}}
          - {{id: dtype-self, kind: dtype_in, params: [self], set: float, source: t}}
          - {{id: same-shape, kind: same_shape, params: [self, out], source: t}}
        formula:
          output: out
          source: t
        """  # noqa: E501
    )
    text += lets + f'  branches:\n    - {{id: v, when: otherwise, value: "{value}", source: t}}\n'
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return Registry([load_spec(path)])


def _run(reg: Registry, x: np.ndarray, dtype: str, out_shape=None) -> np.ndarray:
    t = TensorArg.from_array(x.astype(NP[dtype]) if dtype != "DOUBLE" else x, dtype)
    o = TensorArg.from_array(np.zeros(out_shape or x.shape, t.storage.dtype), dtype)
    call = Call("aclnnReduceFixture", "atlas-a2", {"self": t, "out": o})
    outcome = engine.evaluate(call, reg)
    assert outcome.status == 0, outcome.message
    return outcome.outputs["out"].reshape(o.shape)


def _softmax_mp(row: list) -> list:
    top = max(row)
    ex = [mp.exp(v - top) for v in row]
    s = mp.fsum(ex)
    return [v / s for v in ex]


def _log_softmax_mp(row: list) -> list:
    """x - top - log1p(the other terms' sum): exact at the working precision (log of a sum
    that rounded to 1 loses a term of e^-186 at 60 digits)."""
    top = max(row)
    k = row.index(top)
    rest = mp.fsum(mp.exp(v - top) for i, v in enumerate(row) if i != k)
    return [v - top - mp.log1p(rest) for v in row]


def _hard_softmax_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = [
        rng.normal(size=n),
        rng.normal(size=n) * 30,  # most terms underflow
        np.where(np.arange(n) == 3, 80.0, rng.normal(size=n)),  # one dominates
        np.full(n, 0.5),  # all equal: 1/n exactly, a power of two or not
        np.linspace(-88, 88, n),  # the whole float32 exp range
        rng.normal(size=n) * 1e-6 + 1e4,  # large offset, tiny spread
    ]
    return np.stack(rows)


@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16", "BF16", "DOUBLE"])
@pytest.mark.parametrize("which", ["softmax", "log_softmax"])
def test_softmax_rows_correctly_rounded(tmp_path, dtype, which):
    if which == "softmax":
        reg = _spec(tmp_path, "ex / sum(ex, -1)", "ex = exp(self - amax(self, -1))")
        oracle = _softmax_mp
    else:
        reg = _spec(tmp_path, "self - m - log(sum(exp(self - m), -1))", "m = amax(self, -1)")
        oracle = _log_softmax_mp
    rng = np.random.default_rng(11)
    x = _hard_softmax_rows(rng, 37)
    if dtype != "DOUBLE":
        x = x.astype(NP[dtype]).astype(np.float64)
    got = _run(reg, x, dtype)
    if dtype == "DOUBLE":  # faithful: within 1 ulp of the exact value
        with mp.workdps(60):
            exact = [oracle([mp.mpf(float(a)) for a in row]) for row in x]
        err = [
            abs(mp.mpf(float(g)) - e) / mp.mpf(math.ulp(float(e)))
            for g, e in zip(got.ravel(), [v for row in exact for v in row], strict=True)
        ]
        assert max(err) <= 1
        return
    with mp.workdps(60):
        want = np.array(
            [[round_exact(v, dtype) for v in oracle([mp.mpf(float(a)) for a in row])] for row in x],
            dtype=NP[dtype],
        )
    bad = mismatches(got, want)  # a row's maximum gives -log(1 + tiny): a zero's sign open
    assert not bad.size, (bad[:5], got.ravel()[bad[:5]], want.ravel()[bad[:5]])


def test_refinement_decides_near_midpoint_sums(tmp_path):
    """sum(x) whose exact value lies next to a FLOAT midpoint: float64's own sum of the row
    (the tier-1 value) is the midpoint, so only the refinement of the row decides."""
    reg = _spec(tmp_path, "sum(self, -1) + 0 * self")
    h = 2.0**-24  # half a float32 ulp at 1
    x = np.array([[1.0, h, 2.0**-80, 0.0], [1.0, h, -(2.0**-80), 0.0], [1.0, h, 0.0, 0.0]])
    got = _run(reg, x, "DOUBLE")
    assert got[0, 0] == 1.0 + h + 2.0**-80 or got[0, 0] == math.fsum(x[0])
    got32 = _run(reg, x, "FLOAT")  # x in float32: 2^-80 is exact there too
    assert got32[0, 0] == np.float32(1 + 2.0**-23)  # above the midpoint: up
    assert got32[1, 0] == np.float32(1.0)  # below: down
    assert got32[2, 0] == np.float32(1.0)  # the tie: to even


@pytest.mark.parametrize(
    "dims, axes",
    [("0", (0,)), ("1", (1,)), ("-1", (2,)), ("(0, 2)", (0, 2)), ("all", (0, 1, 2)),
     ("-3", (0,))],
)  # fmt: skip
def test_reductions_over_any_dims(tmp_path, dims, axes):
    reg = _spec(tmp_path, f"self - amax(self, {dims}) + sum(self, {dims}) + mean(self, {dims})")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 4, 5))
    got = _run(reg, x, "DOUBLE")
    want = np.empty_like(x)
    for idx in np.ndindex(*x.shape):
        sl = tuple(slice(None) if a in axes else idx[a] for a in range(3))
        row = x[sl].ravel()
        with mp.workdps(50):
            s = mp.fsum(mp.mpf(v) for v in row)  # exact at 50 digits for these rows
            want[idx] = float(mp.mpf(x[idx]) - max(row) + s + s / len(row))
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 1, ulps.max()  # DOUBLE: faithful


def test_prod_any_all_amin(tmp_path):
    value = "prod(self, 1) + any(self > 1, 1) * 10 + all(self > 0, 1) * 100 + amin(self, 1)"
    reg = _spec(tmp_path, value)
    x = np.array([[1.5, 2.0, 0.25], [-1.0, 0.5, 3.0]])
    got = _run(reg, x, "DOUBLE")
    want = [0.75 + 10 + 100 + 0.25, -1.5 + 10 + 0 - 1.0]
    assert got[:, 0].tolist() == want and np.all(got == got[:, :1])


def test_logsumexp_matches_mpmath(tmp_path):
    reg = _spec(tmp_path, "where(self == self, logsumexp(self, -1), 0)")
    x = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, -np.inf], [1.0, 2.0, 3.0]])
    got = _run(reg, x, "FLOAT")[:, 0]
    assert got[0] == np.float32(1000 + math.log(2))
    assert got[1] == -np.inf
    assert got[2] == round_exact(mp.log(mp.exp(1) + mp.exp(2) + mp.exp(3)), "FLOAT")


def test_nan_and_inf_propagate_through_rows(tmp_path):
    reg = _spec(tmp_path, "ex / sum(ex, -1)", "ex = exp(self - amax(self, -1))")
    x = np.array([[0.0, np.nan, 1.0], [0.0, np.inf, 1.0], [1.0, 2.0, 3.0]])
    got = _run(reg, x, "FLOAT")
    assert np.isnan(got[0]).all()  # torch: a NaN in the row makes the row NaN
    assert np.isnan(got[1]).all()  # exp(inf - inf) = NaN enters the sum: torch's NaN row too
    assert np.isfinite(got[2]).all()


def test_rank0_and_bad_dims(tmp_path):
    reg = _spec(tmp_path, "ex / sum(ex, -1)", "ex = exp(self - amax(self, -1))")
    assert _run(reg, np.array(3.0), "FLOAT") == 1.0
    reg2 = _spec(tmp_path, "sum(self, 2) + self", name="reduce_fixture")
    with pytest.raises(CallError, match="out of range"):
        _run(reg2, np.ones((2, 3)), "FLOAT")
    reg3 = _spec(tmp_path, "sum(self, 0) + sum(self, 1)", name="reduce_fixture")
    with pytest.raises(CallError, match="one set of dims per formula"):
        _run(reg3, np.ones((2, 3)), "FLOAT")


@pytest.mark.slow
@pytest.mark.parametrize("path", _paths())
def test_long_row_sum_matches_fsum(tmp_path, path):
    """A 2^20-long row of float32 values with cancellation: the FLOAT result is the exact sum
    rounded once."""
    reg = _spec(tmp_path, "sum(self, -1) + 0 * self")
    rng = np.random.default_rng(5)
    half = (rng.normal(size=1 << 19) * 1e4).astype(np.float32).astype(np.float64)
    row = np.concatenate([half, -half[::-1] * (1 + 2.0**-20)]).astype(np.float32)
    x = row.astype(np.float64).reshape(1, -1)
    old = compiled_mode.set_mode(path)
    try:
        got = _run(reg, x, "FLOAT")[0, 0]
    finally:
        compiled_mode.set_mode(old)
    exact = sum((Fraction(float(v)) for v in x[0]), Fraction(0))
    assert got == round_exact(exact, "FLOAT")


# -- dims: the check kind, case generation, lint, the torch binding's consts ----------------------


def _softmax_call(shape, dim, dtype="FLOAT"):
    x = np.random.default_rng(0).normal(size=shape)
    t = TensorArg.from_array(x.astype(NP[dtype]), dtype)
    o = TensorArg.from_array(np.zeros(shape, NP[dtype]), dtype)
    return Call("aclnnSoftmax", "atlas-a2", {"self": t, "dim": dim, "out": o})


@pytest.mark.parametrize(
    "shape, dim, ok",
    [((3, 5), -2, True), ((3, 5), 1, True), ((3, 5), 2, False), ((3, 5), -3, False),
     ((), 0, True), ((), -1, True), ((), 1, False), ((), -2, False), ((7,), -1, True)],
)  # fmt: skip
def test_dim_in_range_as_the_vendor_checks_it(shape, dim, ok):
    """[-n, n - 1] with n = max(rank, 1) (op_api CheckDim of softmax: a 0-d tensor counts as 1)."""
    outcome = engine.evaluate(_softmax_call(shape, dim))
    assert (outcome.status == 0) == ok, outcome.message
    if not ok:
        assert outcome.status == 161002 and "dim-range" in str(outcome.clause)


def test_softmax_spec_matches_torch_along_every_dim():
    """The shipped spec's reference against torch.softmax in float64 (an independent
    implementation), every dim of a 3-d tensor, negative ones too."""
    torch = pytest.importorskip("torch")
    for dim in range(-3, 3):
        call = _softmax_call((3, 4, 5), dim, "DOUBLE")
        got = engine.evaluate(call).outputs["out"].reshape(3, 4, 5)
        x = torch.from_numpy(call.tensor("self").storage.reshape(3, 4, 5))
        want = torch.softmax(x, dim).numpy()
        assert np.allclose(got, want, rtol=1e-15, atol=0), dim


def test_dim_cases_cover_every_dim_of_every_rank_and_the_negatives():
    from aclnn_conformance.conformance.cases.generate import plan_op
    from aclnn_conformance.conformance.spec.registry import default_registry

    spec = default_registry().get("softmax")
    plans = plan_op(spec, ["atlas-a2"])
    tags = {p.id.split("/", 4)[-1] for p in plans}
    for shape in ((7,), (3, 5), (2, 3, 4), (2, 3, 1, 4)):
        s = "x".join(map(str, shape))
        for d in range(-len(shape), len(shape)):
            assert f"dim=dim:{d}@{s}" in tags
    assert "dim=dim:1@2x0x3" in tags  # an empty reduced axis
    negs = [p.id for p in plans if "/neg/dim-range/" in p.id]
    assert any(i.endswith("dim:rank") for i in negs) and any(
        i.endswith("dim:-rank-1") for i in negs
    )


def test_lint_refuses_a_reduction_over_a_float_parameter(tmp_path):
    from aclnn_conformance.conformance.spec.registry import SpecError

    text = Path("specs/ops/softmax.yaml").read_text()
    text = text.replace("kind: int, role: input, c_type: int64_t, default: -1",
                        "kind: float, role: input, c_type: double, default: -1.0")  # fmt: skip
    path = tmp_path / "softmax.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match="must be an int or int_array"):
        load_spec(path)


def test_aten_consts_fill_the_positional_arguments():
    from aclnn_conformance.conformance.run.backends.torch_backend import (
        parse_aten_binding,
        positional,
    )
    from aclnn_conformance.conformance.spec.registry import default_registry

    b = parse_aten_binding(default_registry().get("softmax_backward"))
    got = positional(b, ["grad_output", "output", "dim", "input_dtype"])
    assert got == [("arg", "gradOutput"), ("arg", "output"), ("arg", "dim"),
                   ("const", {"dtype_of": "gradOutput"})]  # fmt: skip
