"""`outer(x)`, the paired reduction: inside a reduction's argument, x at the element the
reduction's value is for, while the rest of the argument runs over the reduced elements -- the
language (where outer may stand, what lint says elsewhere), each tier of the walker (numpy float64
in its two layouts and in chunks, the error bound, mpmath, the rounding count, lint's list of
required arithmetics) against values computed by hand, and the reference end to end on fixture
specs (a pairwise hinge per element, a per-row total over a row of several dims, exact=True
through mpmath) against Fractions. The compiled row tiers have no form for it: the gate sends it
to numpy.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.expr import ir
from aclnn_conformance.conformance.spec.expr import numpy_arith as NA
from aclnn_conformance.conformance.spec.expr import walk as W
from aclnn_conformance.conformance.spec.expr.language import ExprError, compile_expr
from aclnn_conformance.conformance.spec.expr.mpeval import mp_arithmetic
from aclnn_conformance.conformance.spec.expr.numpy_arith import NUMPY
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import Registry, load_spec
from aclnn_conformance.reference import codegen, engine, errbound, roundings, rowgen, rows

from tests.support.fixture_spec import fixture_spec
from tests.support.rounding import NP, round_exact

# -- the language ---------------------------------------------------------------------------------


def test_outer_lowers_to_an_outer_node_and_makes_its_reduction_paired():
    e = compile_expr("sum(maximum(0, 1 - outer(y) + x), -1) + amax(x, -1)", ["x", "y"])
    reds = [r for r in ir.reductions(e.ir) if not isinstance(r, ir.Along)]
    assert {r.fn: ir.paired(r) for r in reds} == {"sum": True, "amax": False}
    (outer,) = [n for n in ir.walk(e.ir) if isinstance(n, ir.Outer)]
    assert outer.x == ir.Var("y") and "outer" in e.functions


def test_an_outer_belongs_to_the_innermost_reduction_around_it():
    """In sum(any(outer(t) == t, -1) * x, -1) the outer is the any's (paired), not the sum's;
    an outer's own argument may hold a reduction (a per-row value read at the element)."""
    e = compile_expr("sum(any(outer(t) == t, -1) * x, -1)", ["x", "t"])
    by_fn = {r.fn: r for r in ir.reductions(e.ir)}
    assert ir.paired(by_fn["any"]) and not ir.paired(by_fn["sum"])
    e = compile_expr("sum(outer(amax(x, -1)) - x, -1)", ["x"])
    by_fn = {r.fn: r for r in ir.reductions(e.ir)}
    assert ir.paired(by_fn["sum"]) and not ir.paired(by_fn["amax"])


@pytest.mark.parametrize(
    "text, message",
    [
        ("outer(x)", "outer() at column 1 is outside any reduction"),
        ("x + outer(x)", "outer() at column 5 is outside any reduction"),
        ("where(x > 0, outer(x), 0)", "outer() at column 14 is outside any reduction"),
        ("sum(gather(outer(x), t, -1), -1)", "outer() at column 12 is inside a gather() or cumsum"),
        ("sum(cumsum(outer(x), -1), -1)", "outer() at column 12 is inside a gather() or cumsum"),
        ("sum(outer(outer(x)), -1)", "outer() at column 11 is inside another outer()"),
        ("sum(outer(x, t), -1)", "takes 1 argument"),
    ],
)
def test_misplaced_outers_are_rejected_with_their_position(text, message):
    with pytest.raises(ExprError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compile_expr(text, ["x", "t"])


# -- every tier, by hand ---------------------------------------------------------------------------

HINGE = compile_expr("sum(maximum(0, 1 - outer(x) + x), -1)", ["x"])
X = np.array([[0.5, 2.0, -1.0, 0.25], [3.0, 3.0, 0.0, -2.0]])
# at element j: sum over i of max(0, 1 - x_j + x_i), by hand
HAND = [
    [1 + 2.5 + 0 + 0.75, 0 + 1 + 0 + 0, 2.5 + 4 + 1 + 2.25, 1.25 + 2.75 + 0 + 1],
    [1 + 1 + 0 + 0, 1 + 1 + 0 + 0, 4 + 4 + 1 + 0, 6 + 6 + 3 + 1],
]


@pytest.mark.parametrize("chunk", [NA.PAIR_CHUNK, 1, 3, 5])
def test_numpy_tier_pairs_every_element_with_its_row(monkeypatch, chunk):
    """The value at element j pairs x_j with every x_i of its row; in chunks of any size."""
    monkeypatch.setattr(NA, "PAIR_CHUNK", chunk)
    got = HINGE.run({W.ROW: X.shape, "x": X}, NUMPY)
    assert np.asarray(got).tolist() == HAND


@pytest.mark.parametrize("chunk", [NA.PAIR_CHUNK, 2])
def test_numpy_tier_pairs_within_segments_of_a_row(monkeypatch, chunk):
    """A paired reduction over one dim of rows spanning two (a (2, 3) block, dim 0 reduced:
    stride 3, size 2, walk.GATHER): each element pairs with the elements of its column only."""
    monkeypatch.setattr(NA, "PAIR_CHUNK", chunk)
    e = compile_expr("sum(outer(x) * x, 0)", ["x"])
    node = next(r for r in ir.reductions(e.ir) if r.fn == "sum")
    row = np.array([[1.0, 2.0, 3.0, 10.0, 20.0, 30.0]])  # columns (1, 10), (2, 20), (3, 30)
    got = e.run({W.ROW: (1, 6), W.GATHER: {node: (3, 2)}, "x": row}, NUMPY)
    want = [[1 * 11, 2 * 22, 3 * 33, 10 * 11, 20 * 22, 30 * 33]]
    assert np.asarray(got).tolist() == want


@pytest.mark.parametrize("chunk", [NA.PAIR_CHUNK, 3])
def test_numpy_tier_with_a_row_operation_in_the_argument(monkeypatch, chunk):
    """A position in the argument (the flat layout, rows picked per pair row): the sum of the
    elements before each one, an exclusive prefix sum."""
    monkeypatch.setattr(NA, "PAIR_CHUNK", chunk)
    e = compile_expr("sum(where(position(-1) < outer(position(-1)), x, 0), -1)", ["x"])
    got = e.run({W.ROW: X.shape, "x": X}, NUMPY)
    assert np.asarray(got).tolist() == [[0, 0.5, 2.5, 1.5], [0, 3, 6, 6]]


def test_an_any_over_pairs_is_the_one_hot_of_a_list():
    """isT[k] = any over j of (t_j == k): which classes a row's entries name."""
    e = compile_expr("any(t == outer(position(-1)), -1)", ["t"])
    t = np.array([[2.0, 2.0, 0.0, 7.0], [3.0, 3.0, 3.0, 3.0]])
    got = e.run({W.ROW: t.shape, "t": t}, NUMPY)
    assert np.asarray(got).tolist() == [[True, False, True, False], [False, False, False, True]]


def test_error_bound_tier_exact_pairs_and_undecided_comparisons():
    """Exact inputs: the values of numpy, bound 0 (every hinge and sum exact). A comparison
    whose operands' bounds overlap inside a pair row leaves the element of that pair row
    undecided, and only it."""
    errbound.BOUNDED.state.undecided = False
    v, err = HINGE.run(errbound.as_pairs({W.ROW: X.shape, "x": X}), errbound.BOUNDED)
    assert np.asarray(v).tolist() == HAND and not np.any(err)
    e = compile_expr("sum(where(x > outer(x), 1, 0), -1)", ["x"])
    x = np.array([[0.0, 1.0, 1.0 + 1e-9, 5.0]])
    bound = np.array([[0.0, 1e-6, 0.0, 0.0]])  # x_1 is 1 +- 1e-6
    errbound.BOUNDED.state.undecided = False
    v, _ = e.run({W.ROW: x.shape, "x": (x, bound)}, errbound.BOUNDED)
    und = np.broadcast_to(errbound.BOUNDED.state.undecided, x.shape)
    assert np.asarray(v).tolist() == [[3, 2, 1, 0]]
    # element 1 compares x_1 with itself and x_2 within the bound; element 2 compares x_1 with
    # x_2; elements 0 and 3 decide every comparison
    assert und.tolist() == [[False, True, True, False]]


def test_error_bound_tier_carries_an_inexact_operand():
    """An inexact outer value (bound 1e-3) reaches the hinge's sum: the bound of element j is
    the sum over its live hinges of the bounds."""
    x = np.array([[0.0, 0.5, 4.0]])
    bound = np.array([[1e-3, 0.0, 0.0]])
    errbound.BOUNDED.state.undecided = False
    v, err = HINGE.run({W.ROW: x.shape, "x": (x, bound)}, errbound.BOUNDED)
    assert np.asarray(v).tolist() == [[1 + 1.5 + 5, 0.5 + 1 + 4.5, 0 + 0 + 1]]
    err = np.asarray(err)
    # element 0: its three hinges read x_0 as outer (1e-3 each), the first also as x_i
    assert 4e-3 <= err[0, 0] < 4.001e-3
    # element 1: the hinge against x_0; element 2: that hinge clamped to 0 keeps its bound
    assert 1e-3 <= err[0, 1] < 1.001e-3 and 1e-3 <= err[0, 2] < 1.001e-3


def _mp_row(values, name="x"):
    ar = mp_arithmetic(mpmath.mp)
    envs = [{name: mpmath.mpf(v)} for v in values]
    row = W.Row(envs)
    for j, env in enumerate(envs):
        env[W.ROW], env[W.POS] = row, j
    return ar, envs, row


def test_mpmath_tier_evaluates_the_argument_once_per_element():
    ar, envs, row = _mp_row(X[0])
    got = [HINGE.run(env, ar) for env in envs]
    assert got == HAND[0] and all(isinstance(v, mpmath.mpf) for v in got)
    # each element's value is kept in the row's cache under the element, once
    keys = [k for k in row.cache if isinstance(k, tuple) and k[1] == W.OUTER]
    assert sorted(k[2] for k in keys) == [0, 1, 2, 3]


def test_mpmath_tier_exact_where_float64_is_not():
    """x = (1 + 2^-60, 2^-61), which float64 cannot hold: at element 1 the hinges are
    1 - 2^-61 + 1 + 2^-60 and 1, their sum 3 + 2^-61 exactly at 200 bits (float64: 3)."""
    with mpmath.workprec(200):
        ar = mp_arithmetic(mpmath.mp)
        envs = [{"x": mpmath.mpf(1) + mpmath.mpf(2) ** -60}, {"x": mpmath.mpf(2) ** -61}]
        row = W.Row(envs)
        for j, env in enumerate(envs):
            env[W.ROW], env[W.POS] = row, j
        assert HINGE.run(envs[1], ar) == 3 + mpmath.mpf(2) ** -61
        assert HINGE.run(envs[0], ar) == 1  # 1 - x_0 + x_1 = -2^-61: clamped


def test_mpmath_tier_within_segments_of_a_row():
    e = compile_expr("sum(outer(x) * x, 0)", ["x"])
    node = next(r for r in ir.reductions(e.ir) if r.fn == "sum")
    ar, envs, _ = _mp_row([1.0, 2.0, 3.0, 10.0, 20.0, 30.0])
    for env in envs:
        env[W.GATHER] = {node: (3, 2)}
    assert [e.run(env, ar) for env in envs] == [11, 44, 99, 110, 440, 990]


def test_rounding_count_and_required_arithmetics():
    """outer reads a value computed elsewhere: its roundings, none of its own (an amax of
    differences rounds once; a sum many times)."""
    env = roundings._Exact()
    once = compile_expr("amax(outer(x) - x, -1)", ["x"])
    assert once.run(env, roundings.COUNT) == 1
    assert HINGE.run(env, roundings.COUNT) >= roundings.MANY
    assert W.unsupported(["outer"]) == {}
    assert W.missing(W.Arithmetic(), ["outer", "where"]) == ["outer"]


def test_outer_outside_a_paired_walk_is_an_error():
    """The walker reads OUTER from the environment: outer() can only run inside its paired
    reduction's argument (the checker guarantees it for spec text)."""
    x = ir.Outer(ir.Var("x"))
    with pytest.raises(ValueError, match="outside a reduction"):
        W.stage(x, NUMPY)({"x": np.zeros((1, 2))})


# -- the reference, end to end ---------------------------------------------------------------------


def _registry(tmp_path: Path, value: str, out_rule: str) -> Registry:
    return Registry([load_spec(_write(tmp_path, value, out_rule))])


def _write(tmp_path: Path, value: str, out_rule: str) -> Path:
    """A fixture: x (a float tensor), one output, one formula branch `value`."""
    return fixture_spec(
        tmp_path,
        "aclnnOuterFixture",
        "outer_fixture",
        ['{name: x, kind: tensor, role: input, c_type: "const aclTensor*"}',
         f'{{name: out, kind: tensor, role: output, c_type: "aclTensor*", shape: {out_rule}}}'],
        ["float: {source: t, default: [FLOAT, FLOAT16, BF16, DOUBLE]}"],
        ["{id: null-ptr, kind: not_null, params: [x, out], status: ACLNN_ERR_PARAM_NULLPTR, "
         "source: t}", "{id: dtype-x, kind: dtype_in, params: [x], set: float, source: t}"],
        value,
    )  # fmt: skip


def _eval(reg, x, out_shape, dtype, exact=False):
    args = {"x": TensorArg.from_array(np.asarray(x, float), dtype),
            "out": TensorArg.from_array(np.zeros(out_shape), dtype)}  # fmt: skip
    o = engine.evaluate(Call("aclnnOuterFixture", "atlas-a2", args), reg, exact=exact)
    assert o.status == 0, o.message
    return np.asarray(o.outputs["out"]).reshape(out_shape)


def _hinges(x: np.ndarray) -> np.ndarray:
    """Exact sum over i of max(0, 1 - x_j + x_i) along the last axis, as Fractions."""
    out = np.empty(x.shape, dtype=object)
    for idx in np.ndindex(x.shape[:-1]):
        row = [Fraction(float(v)) for v in x[idx]]
        out[idx] = [sum((max(Fraction(0), 1 - a + b) for b in row), Fraction(0)) for a in row]
    return out


@pytest.mark.parametrize(
    "dtype, exact", [("FLOAT", False), ("BF16", False), ("DOUBLE", False), ("DOUBLE", True)]
)
def test_a_pairwise_hinge_is_correctly_rounded(tmp_path, dtype, exact):
    """Per element of a (3, 5) x; exact=True: every DOUBLE element through mpmath (walk.Row,
    walk.Paired). Values spread over 2^-30 to 2^30 so that float64's hinges round."""
    reg = _registry(tmp_path, "sum(maximum(0, 1 - outer(x) + x), -1)", "x")
    rng = np.random.default_rng(9)
    x = np.ldexp(rng.standard_normal((3, 5)), rng.integers(-30, 30, (3, 5)))
    x[1, :2] = [1.0, 0.0]  # the hinge of element 0 against element 1 is 0: a tie at the hinge
    x = x.astype(NP[dtype]).astype(np.float64)
    want = np.array([round_exact(v, dtype) for v in _hinges(x).reshape(-1)]).reshape(x.shape)
    got = _eval(reg, x, x.shape, dtype, exact)
    assert got.astype(np.float64).tolist() == want.astype(np.float64).tolist()


@pytest.mark.parametrize("exact", [False, True])
def test_a_paired_reduction_nested_in_a_total_over_every_element(tmp_path, exact):
    """sum over every element of the per-element pairwise hinge along dim -1: rows spanning
    (4, 3), the paired sum over the segments of dim -1 (walk.GATHER); one DOUBLE value."""
    reg = _registry(tmp_path, "sum(sum(maximum(0, 1 - outer(x) + x), -1), all)", "scalar")
    x = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, 1.0], [3.0, 0.0, -3.0], [2.0**-40, 1.0, 0.0]])
    want = sum(sum(r, Fraction(0)) for r in _hinges(x))
    assert float(_eval(reg, x, (), "DOUBLE", exact)) == float(want)


@pytest.mark.parametrize(
    "value, out, shape",
    [
        ("sum(maximum(0, 1 - outer(x) + x), -1)", "x", (2, 70)),
        ("sum(sum(maximum(0, 1 - outer(x) + x), -1), all)", "scalar", (2, 40)),
    ],
)
def test_mpmath_refines_long_rows_of_a_paired_formula(tmp_path, value, out, shape):
    """exact=True sends every DOUBLE element to mpmath over its row; rows of 64 elements and more
    first try their sums in float64 (rows.exact_sums), which a paired sum (a value per element)
    is not, and which a total holding paired sums is."""
    reg = _registry(tmp_path, value, out)
    rng = np.random.default_rng(11)
    x = np.ldexp(rng.standard_normal(shape), rng.integers(-3, 3, shape))
    hinges = _hinges(x)
    if out == "x":
        want = [float(v) for v in hinges.reshape(-1)]
        got = _eval(reg, x, shape, "DOUBLE", exact=True).reshape(-1).tolist()
    else:
        want = [float(sum(sum(r, Fraction(0)) for r in hinges))]
        got = [float(_eval(reg, x, (), "DOUBLE", exact=True))]
    assert got == want


def test_the_compiled_row_gate_is_by_node_kind(tmp_path):
    """rowgen.py has no form for an outer: the formula keeps the numpy tiers, and generating
    its kernel is declined (codegen.Unsupported), never wrong."""
    reg = _registry(tmp_path, "sum(maximum(0, 1 - outer(x) + x), -1)", "x")
    spec = reg.get("outer_fixture")
    assert not rows.compilable(spec) and not rowgen.expressible(spec)
    with pytest.raises(codegen.Unsupported, match="Outer"):
        rowgen.generate(spec, {}, False, length=4)


def test_large_cases_of_a_paired_formula_keep_their_paired_dim_short(tmp_path):
    """A paired reduction costs the element count times the paired dim's size: the default
    suite's large case and the large profile's model shapes keep their element count with that
    dim PAIRED_SIZE long (16384 x 64, not 1024 x 1024)."""
    from aclnn_conformance.conformance.cases.generate import PAIRED_SIZE, model_plans, plan_op

    spec = _registry(tmp_path, "sum(maximum(0, 1 - outer(x) + x), -1)", "x").get("outer_fixture")
    large = [p.id for p in plan_op(spec) if "/shape=large-" in p.id]
    assert large and all(i.endswith(f"/shape=large-16384x{PAIRED_SIZE}") for i in large)
    models = [dict(p.args)["x"].shape for p in model_plans(spec)]
    assert models and all(s[-1] == PAIRED_SIZE for s in models)
    plain = _registry(tmp_path, "x - amax(x, -1)", "x").get("outer_fixture")
    assert any(p.id.endswith("/shape=large-1024x1024") for p in plan_op(plain))


def test_lint_names_the_position_of_an_outer_outside_a_reduction(tmp_path):
    spec, problems = lint_file(_write(tmp_path, "x - outer(x)", "x"))
    assert spec is None or problems
    text = "\n".join(str(p) for p in problems)
    assert "outer() at column 5 is outside any reduction" in text, text
