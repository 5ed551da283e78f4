"""Gathering by an integer target (`gather(x, target, dim)`, SHAPES.md section 4): the language,
the reference in every tier (float64 with an error bound, mpmath), per-row outputs (NLL's
`reduction: none`), a gather inside rows that span more dims (a mean over the batch), and the
index values generation draws (`values: {index_of: ...}`).

The oracles: hand-computed values, and mpmath at 60 digits per loss, rounded to the output
dtype by tests/support/rounding.round_exact (never the engine's rounding). The fixture specs
are written here; the oracles never read them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.cases import values as vals
from aclnn_conformance.conformance.spec.expr import ir
from aclnn_conformance.conformance.spec.expr.language import ExprError, compile_expr
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import Registry, load_spec
from aclnn_conformance.reference import engine

from tests.support.rounding import NP, round_exact
from tests.support.tiers import PATHS, row_path

mp = mpmath.mp

# -- the language ---------------------------------------------------------------------------------


def test_gather_lowers_to_a_gather_node():
    e = compile_expr("gather(x, t, -1) + gather(w, t, dim)", ["x", "t", "w", "dim"])
    got = {(g.dims, g.param, g.index) for g in ir.gathers(e.ir)}
    assert got == {((-1,), None, ir.Var("t")), (None, "dim", ir.Var("t"))}
    assert "gather" in e.functions and {"x", "t", "w", "dim"} <= e.names


@pytest.mark.parametrize(
    "text, message",
    [
        ("gather(x, t)", "takes 3 argument"),
        ("gather(x, t, 1.5)", "dim must be an int literal"),
        ("gather(x, t, nope)", "not a parameter"),
        ("gather(x, t, 9)", "out of range"),
    ],
)
def test_bad_gathers_are_rejected(text, message):
    with pytest.raises(ExprError, match=message):
        compile_expr(text, ["x", "t"])


# -- fixture specs ---------------------------------------------------------------------------------

NLL = (
    "sum(where(target == ignoreIndex, 0, -gather(weight, target, -1) * gather(self, target, -1)), all)"
    " / sum(where(target == ignoreIndex, 0, gather(weight, target, -1)), all)"
)


def _spec(tmp_path: Path, branches: str, name: str = "gather_fixture") -> Registry:
    text = textwrap.dedent(
        f"""\
        format: 1
        op: aclnnGatherFixture
        name: {name}
        summary: a gather fixture
        source:
          doc: none
        products: [atlas-a2]
        params:
          - {{name: self, kind: tensor, role: input, c_type: "const aclTensor*"}}
          - {{name: target, kind: tensor, role: input, c_type: "const aclTensor*", values: {{index_of: {{param: self, dim: -1, ignore: ignoreIndex}}}}}}
          - {{name: weight, kind: tensor, role: input, c_type: "const aclTensor*"}}
          - {{name: ignoreIndex, kind: int, c_type: int64_t, default: -100}}
          - {{name: out, kind: tensor, role: output, c_type: "aclTensor*"}}
        dtype_sets:
          float:
            source: t
            default: [FLOAT, FLOAT16, BF16, DOUBLE]
          index:
            source: t
            default: [INT64, INT32, UINT8]
        checks:
          - {{id: null-ptr, kind: not_null, params: [self, target, weight, out], status: ACLNN_ERR_PARAM_NULLPTR, source: t}}
          - {{id: dtype-self, kind: dtype_in, params: [self], set: float, source: t}}
          - {{id: dtype-target, kind: dtype_in, params: [target], set: index, source: t}}
        formula:
          output: out
          source: t
          branches:
        """  # noqa: E501
    )
    path = tmp_path / f"{name}.yaml"
    path.write_text(text + textwrap.indent(branches, "    "))
    return Registry([load_spec(path)])


def _run(reg, x, t, w, dtype, out_shape, ignore=-100, exact=False):
    args = {
        "self": TensorArg.from_array(x, dtype),
        "target": TensorArg.from_array(np.asarray(t), "INT64"),
        "weight": TensorArg.from_array(w, dtype),
        "ignoreIndex": ignore,
        "out": TensorArg.from_array(np.zeros(out_shape), dtype),
    }
    outcome = engine.evaluate(Call("aclnnGatherFixture", "atlas-a2", args), reg, exact=exact)
    assert outcome.status == 0, outcome.message
    return outcome.outputs["out"].reshape(out_shape)


NONE = (
    "- {id: ignored, when: target == ignoreIndex, value: 0, source: t}\n"
    '- {id: v, when: otherwise, value: "-gather(weight, target, -1) * gather(self, target, -1)", source: t}\n'  # noqa: E501
)


# -- hand-computed --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16", "BF16", "DOUBLE"])
def test_per_row_loss_by_hand(tmp_path, dtype):
    """NLL with reduction none: -w[t_n] x[n, t_n], 0 where t_n is the ignore index."""
    reg = _spec(tmp_path, NONE)
    x = np.array([[1.5, -2.0, 3.25], [0.5, 0.25, 0.75], [7, 8, 9], [1, 1, 1]])
    w = np.array([0.5, 2.0, 3.0])
    got = _run(reg, x, [2, 0, -100, 1], w, dtype, (4,))
    assert got.tolist() == [-9.75, -0.25, 0.0, -2.0]


def test_one_dimensional_self_and_scalar_target(tmp_path):
    """self (C), target () -- NLL's no-batch form: dim -1 is the class dim of both ranks."""
    reg = _spec(tmp_path, NONE)
    got = _run(reg, np.array([1.0, 2.0, 4.0]), np.array(2), np.array([1.0, 1.0, 0.5]), "FLOAT", ())
    assert float(got) == -2.0


def test_mean_over_the_batch_by_hand(tmp_path):
    """The mean over the rows: sum(w_t * -x_t) / sum(w_t), the ignored row left out."""
    reg = _spec(tmp_path, f'- {{id: v, when: otherwise, value: "{NLL}", source: t}}\n')
    x = np.array([[1.5, -2.0, 3.25], [0.5, 0.25, 0.75], [7, 8, 9], [1, 1, 1]])
    w = np.array([0.5, 2.0, 3.0])
    got = _run(reg, x, [2, 0, -100, 1], w, "DOUBLE", (1,))
    assert got.tolist() == [(-9.75 - 0.25 - 2.0) / (3.0 + 0.5 + 2.0)]


def test_an_index_out_of_range_gives_nan(tmp_path):
    reg = _spec(tmp_path, NONE)
    x = np.ones((3, 2))
    got = _run(reg, x, [2, -1, 1], np.ones(2), "FLOAT", (3,))
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == -1.0


# -- against mpmath --------------------------------------------------------------------------------


def _nll_mp(x, t, w, ignore, reduction):
    with mp.workdps(60):
        terms = [
            (mp.mpf(float(w[c])), mp.mpf(float(x[n, c]))) for n, c in enumerate(t) if c != ignore
        ]
        if reduction == "none":
            return [mp.mpf(0) if c == ignore else -mp.mpf(float(w[c])) * mp.mpf(float(x[n, c]))
                    for n, c in enumerate(t)]  # fmt: skip
        return [-mp.fsum(a * b for a, b in terms) / mp.fsum(a for a, _ in terms)]


def _ce_mp(x, t):
    out = []
    with mp.workdps(60):
        for n, c in enumerate(t):
            row = [mp.mpf(float(v)) for v in x[n]]
            top = max(row)
            out.append(top + mp.log(mp.fsum(mp.exp(v - top) for v in row)) - row[c])
    return out


def _rounded(values, dtype):
    """Each exact value rounded to dtype (at 60 digits: the rounding sees every digit)."""
    with mp.workdps(60):
        return np.array([round_exact(v, dtype) for v in values], dtype=NP[dtype])


def _hard(rng, n, c, dtype):
    x = rng.normal(size=(n, c)) * np.where(rng.random((n, 1)) < 0.5, 1.0, 30.0)
    x[0] = 1e4 + rng.normal(size=c) * 1e-3  # a large offset, a tiny spread
    return dt.round_to(x, dt.get(dtype)).astype(np.float64)


def _compiled_ran(path: str, dtype: str, seen: list) -> None:
    """On the compiled path a FLOAT, FLOAT16 or BF16 output went through rows.Compiled."""
    if path == "numba" and dtype != "DOUBLE":
        assert seen, "the compiled row tiers did not run"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16", "BF16", "DOUBLE"])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_nll_against_mpmath(tmp_path, dtype, reduction, path):
    value = (
        NONE
        if reduction == "none"
        else f'- {{id: v, when: otherwise, value: "{NLL}", source: t}}\n'
    )
    reg = _spec(tmp_path, value)
    rng = np.random.default_rng(7)
    n, c = 64, 11
    x = _hard(rng, n, c, dtype)
    w = dt.round_to(rng.uniform(0.1, 3.0, c), dt.get(dtype)).astype(np.float64)
    t = rng.integers(0, c, n)
    t[::7] = -100
    want = _nll_mp(x, t, w, -100, reduction)
    shape = (n,) if reduction == "none" else (1,)
    with row_path(path) as seen:
        got = _run(reg, x, t, w, dtype, shape)
    _compiled_ran(path, dtype, seen)
    exp = _rounded(want, dtype)
    if dtype == "DOUBLE":  # faithful: within an ulp
        assert np.all(np.abs(got - exp) <= np.spacing(np.abs(exp)))
    else:
        assert got.view(np.uint8).tolist() == exp.view(np.uint8).tolist()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16", "BF16", "DOUBLE"])
def test_cross_entropy_rows_against_mpmath(tmp_path, dtype, path):
    """logsumexp over the class dim minus the target's value: a gather inside a reduced row,
    one value per row (the numpy tiers, and the compiled ones: rowgen's inline gather)."""
    value = '- {id: v, when: otherwise, value: "logsumexp(self, -1) - gather(self, target, -1)", source: t}\n'  # noqa: E501
    reg = _spec(tmp_path, value)
    rng = np.random.default_rng(11)
    n, c = 48, 37
    x = _hard(rng, n, c, dtype)
    t = rng.integers(0, c, n)
    with row_path(path) as seen:
        got = _run(reg, x, t, np.ones(c), dtype, (n,))
    _compiled_ran(path, dtype, seen)
    exp = _rounded(_ce_mp(x, t), dtype)
    if dtype == "DOUBLE":
        assert np.all(np.abs(got - exp) <= np.spacing(np.abs(exp)))
    else:
        assert got.view(np.uint8).tolist() == exp.view(np.uint8).tolist()


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_mpmath_tier_gathers_like_float64(tmp_path, reduction):
    """exact=True sends every DOUBLE element to mpmath (walk.Row): the gather there picks the
    same element as numpy's, in a row of one dim and in a row spanning the batch too."""
    value = (
        NONE
        if reduction == "none"
        else f'- {{id: v, when: otherwise, value: "{NLL}", source: t}}\n'
    )
    reg = _spec(tmp_path, value)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(9, 5))
    w = rng.uniform(0.5, 2, 5)
    t = rng.integers(0, 5, 9)
    t[4] = -100
    shape = (9,) if reduction == "none" else (1,)
    got = _run(reg, x, t, w, "DOUBLE", shape, exact=True)
    want = [float(v) for v in _nll_mp(x, t, w, -100, reduction)]
    assert got.tolist() == want


# -- index values ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["INT64", "INT32", "UINT8"])
def test_index_values_in_range_plus_the_ignore_index(dtype):
    rng = np.random.default_rng(0)
    d = dt.get(dtype)
    ignore = -100 if np.iinfo(d.np).min < 0 else 255
    v = vals.indices((400,), 7, ignore, d, rng)
    assert v.dtype == d.np and v.shape == (400,)
    ign = v == ignore
    assert ign.any() and 0.02 < ign.mean() < 0.3
    assert set(v[~ign].tolist()) == set(range(7))


def test_index_values_without_ignore_and_of_an_empty_dim():
    rng = np.random.default_rng(1)
    v = vals.indices((5, 3), 4, None, dt.get("INT64"), rng)
    assert v.min() >= 0 and v.max() < 4
    assert vals.indices((3,), 0, -100, dt.get("INT64"), rng).tolist() == [-100] * 3


def test_generated_targets_index_self(tmp_path):
    """The case builder draws index_of values from self's size along dim."""
    from aclnn_conformance.conformance.acl.planned import TensorPlan
    from aclnn_conformance.conformance.cases.build import build
    from aclnn_conformance.conformance.cases.plan import CasePlan

    reg = _spec(tmp_path, NONE)
    spec = reg.get("gather_fixture")
    args = (
        ("self", TensorPlan("FLOAT", (50, 6))),
        ("target", TensorPlan("INT64", (50,))),
        ("weight", TensorPlan("FLOAT", (6,))),
        ("ignoreIndex", -3),
        ("out", TensorPlan("FLOAT", (50,))),
    )
    case = build(spec, CasePlan("p", spec.name, "atlas-a2", "positive", args, (), 0), 5)
    t = case.call.tensor("target").storage
    assert set(t.tolist()) <= set(range(6)) | {-3} and -3 in t.tolist()


@pytest.mark.parametrize(
    "values, message",
    [
        ("{index_of: {param: nope, dim: 1}}", "is not another tensor parameter"),
        ("{index_of: {param: self, dim: weight}}", "is not an int literal or an int parameter"),
        ("{index_of: {param: self, dim: 1, ignore: weight}}", "is not an int parameter"),
    ],
)
def test_index_of_lint(tmp_path, values, message):
    reg_path = tmp_path / "gather_fixture.yaml"
    _spec(tmp_path, NONE)
    text = reg_path.read_text().replace(
        "{index_of: {param: self, dim: -1, ignore: ignoreIndex}}", values
    )
    _, problems = lint_file(reg_path, text)
    assert any(message in p.message for p in problems), [p.message for p in problems]


# -- the shipped spec (specs/ops/nll_loss.yaml) against mpmath ----------------------------------


def _nll_all_mp(x, t, w, ignore, reduction):
    """(out values, total weight) from aclnnNLLLoss.md's formula, at 60 digits."""
    with mp.workdps(60):
        rows = x.reshape(-1, x.shape[-1])
        ts = np.reshape(t, -1).tolist()
        losses = [mp.mpf(0) if c == ignore else -mp.mpf(float(w[c])) * mp.mpf(float(rows[n, c]))
                  for n, c in enumerate(ts)]  # fmt: skip
        total = mp.fsum(mp.mpf(float(w[c])) for c in ts if c != ignore)
        if reduction == 0:
            return losses, None
        s = mp.fsum(losses)
        return [s / total if reduction == 1 else s], [total]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16", "BF16"])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("rank", [1, 2])
def test_nll_loss_spec_against_mpmath(dtype, reduction, rank, path):
    from aclnn_conformance.conformance.spec.registry import default_registry

    rng = np.random.default_rng(100 * rank + reduction)
    n, c = 37, 13
    shape = (n, c) if rank == 2 else (c,)
    x = _hard(rng, n, c, dtype)[: shape[0]] if rank == 2 else _hard(rng, 1, c, dtype)[0]
    w = dt.round_to(rng.uniform(-1.0, 3.0, c), dt.get(dtype)).astype(np.float64)
    t = rng.integers(0, c, shape[:-1]) if rank == 2 else np.array(int(rng.integers(0, c)))
    if rank == 2:
        t[::5] = -7
    out_shape = shape[:-1] if reduction == 0 else ()
    args = {
        "self": TensorArg.from_array(x, dtype),
        "target": TensorArg.from_array(t, "INT64"),
        "weight": TensorArg.from_array(w, dtype),
        "reduction": reduction,
        "ignoreIndex": -7,
        "out": TensorArg.from_array(np.zeros(out_shape), dtype),
        "totalWeightOut": TensorArg.from_array(np.zeros(()), dtype),
    }
    with row_path(path) as seen:
        outcome = engine.evaluate(Call("nll_loss", "atlas-a2", args), default_registry())
    assert outcome.status == 0, outcome.message
    _compiled_ran(path, dtype, seen)
    want, total = _nll_all_mp(x, t, w, -7, reduction)
    got = outcome.outputs["out"].reshape(-1)
    assert got.view(np.uint8).tolist() == _rounded(want, dtype).view(np.uint8).tolist()
    tw = outcome.outputs["totalWeightOut"].reshape(-1)
    if total is None:
        assert tw.tolist() == [0.0]  # the spec's value where the page leaves it undefined
    else:
        assert tw.view(np.uint8).tolist() == _rounded(total, dtype).view(np.uint8).tolist()


def test_an_empty_batch_gives_the_op_apis_fills():
    """aclnn_nll_loss.cpp NLLLossEmptyTensorCompute: an empty self gives a NaN mean, a 0 sum
    and a 0 total weight."""
    from aclnn_conformance.conformance.spec.registry import default_registry

    got = {}
    for reduction in (1, 2):
        args = {
            "self": TensorArg.from_array(np.zeros((0, 4)), "FLOAT"),
            "target": TensorArg.from_array(np.zeros(0, np.int64), "INT64"),
            "weight": TensorArg.from_array(np.ones(4), "FLOAT"),
            "reduction": reduction,
            "ignoreIndex": -100,
            "out": TensorArg.from_array(np.zeros(()), "FLOAT"),
            "totalWeightOut": TensorArg.from_array(np.zeros(()), "FLOAT"),
        }
        o = engine.evaluate(Call("nll_loss", "atlas-a2", args), default_registry())
        got[reduction] = (float(o.outputs["out"][0]), float(o.outputs["totalWeightOut"][0]))
    assert np.isnan(got[1][0]) and got[1][1] == 0.0 and got[2] == (0.0, 0.0)
