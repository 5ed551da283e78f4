"""An element's index along a dim (`position(dim)`, the one-hot of a target when compared with
it): the language, each tier of the walker (numpy float64, mpmath, the error bound, the
rounding count, lint's list of required arithmetics), and the reference end to end on fixture
specs -- a row of one dim, a dim inside a row spanning several (a sum over every element), a
4-D class dim 1, a formula with a position and no gather -- against values computed by hand.
The compiled row tiers have no form for a position: the gate sends it to numpy.
"""

from __future__ import annotations

from pathlib import Path

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.expr import ir
from aclnn_conformance.conformance.spec.expr import walk as W
from aclnn_conformance.conformance.spec.expr.language import ExprError, compile_expr
from aclnn_conformance.conformance.spec.expr.mpeval import mp_arithmetic
from aclnn_conformance.conformance.spec.expr.numpy_arith import NUMPY
from aclnn_conformance.conformance.spec.registry import Registry, default_registry, load_spec
from aclnn_conformance.reference import engine, errbound, roundings, rows

from tests.support.fixture_spec import fixture_spec

# -- the language ---------------------------------------------------------------------------------


def test_position_lowers_to_a_position_node():
    e = compile_expr("position(-1) == t and position(dim) > 0", ["t", "dim"])
    got = {(p.dims, p.param) for p in ir.walk(e.ir) if isinstance(p, ir.Position)}
    assert got == {((-1,), None), (None, "dim")}
    assert "position" in e.functions and "dim" in e.names
    assert all(isinstance(p, ir.Along) for p in ir.along(e.ir))


@pytest.mark.parametrize(
    "text, message",
    [
        ("position(1, 2)", "takes 1 argument"),
        ("position((0, 1))", "one dim"),
        ("position(nope)", "not a parameter"),
        ("position(9)", "out of range"),
        ("position(1.5)", "dim must be an int literal"),
    ],
)
def test_bad_positions_are_rejected(text, message):
    with pytest.raises(ExprError, match=message):
        compile_expr(text, ["t"])


# -- every tier, by hand ---------------------------------------------------------------------------

POS1 = compile_expr("position(-1)", [])
NODE = next(n for n in ir.walk(POS1.ir) if isinstance(n, ir.Position))


def test_numpy_tier_counts_along_the_row():
    got = POS1.run({W.ROW: (2, 4)}, NUMPY)
    assert np.broadcast_to(got, (2, 4)).tolist() == [[0, 1, 2, 3]] * 2


def test_numpy_tier_inside_a_row_of_several_dims():
    """A row of a (3, 2) block (dims 0 and 1 reduced): the position along dim 0 has stride 2."""
    got = POS1.run({W.ROW: (1, 6), W.GATHER: {NODE: (2, 3)}}, NUMPY)
    assert got.tolist() == [[0, 0, 1, 1, 2, 2]]


def test_mpmath_tier_reads_the_elements_place_in_its_row():
    ar = mp_arithmetic(mpmath.mp)
    envs: list[dict] = [{} for _ in range(6)]
    row = W.Row(envs)
    got = []
    for j, e in enumerate(envs):
        e[W.ROW], e[W.POS], e[W.GATHER] = row, j, {NODE: (2, 3)}
        got.append(POS1.run(e, ar))
    assert got == [0, 0, 1, 1, 2, 2] and all(isinstance(v, mpmath.mpf) for v in got)


def test_error_bound_tier_is_exact():
    v, err = POS1.run({W.ROW: (1, 3)}, errbound.BOUNDED)
    assert v.tolist() == [[0, 1, 2]] and np.all(np.asarray(err) == 0)


def test_rounding_count_takes_a_position_as_exact():
    """`where(position == target, -g * w, 0)` makes one rounding (the product): correctly
    rounded in float64; the mean's division by a total weight makes two."""
    one = compile_expr("where(position(-1) == t, -g * w, 0)", ["t", "g", "w"])
    two = compile_expr("where(position(-1) == t, -g * w / s, 0)", ["t", "g", "w", "s"])
    env = roundings._Exact()
    assert one.run(env, roundings.COUNT) == 1
    assert two.run(env, roundings.COUNT) >= roundings.MANY


def test_every_required_tier_has_it_and_lint_names_one_that_lacks_it():
    assert W.unsupported(["position"]) == {}
    assert W.missing(W.Arithmetic(), ["position", "where"]) == ["position"]


# -- the reference, end to end ---------------------------------------------------------------------


def _registry(tmp_path: Path, rank: int, dim: int, value: str, out_rule: str) -> Registry:
    """A fixture: x (a float tensor of `rank`), t (an index, x without `dim`), one formula."""
    path = fixture_spec(
        tmp_path,
        "aclnnPositionFixture",
        "position_fixture",
        [
            '{name: x, kind: tensor, role: input, c_type: "const aclTensor*"}',
            '{name: t, kind: tensor, role: input, c_type: "const aclTensor*", '
            f'shape: "reduce(x, {dim}, false)", values: {{index_of: {{param: x, dim: {dim}}}}}}}',
            f'{{name: out, kind: tensor, role: output, c_type: "aclTensor*", shape: {out_rule}}}',
        ],
        [
            "float: {source: t, default: [FLOAT, FLOAT16, BF16, DOUBLE]}",
            "index: {source: t, default: [INT64, INT32]}",
        ],  # fmt: skip
        [
            "{id: null-ptr, kind: not_null, params: [x, t, out], status: ACLNN_ERR_PARAM_NULLPTR, "
            "source: t}",
            "{id: dtype-x, kind: dtype_in, params: [x], set: float, source: t}",
            "{id: dtype-t, kind: dtype_in, params: [t], set: index, source: t}",
        ],
        value,
    )
    return Registry([load_spec(path)])


def _eval(reg, x, t, out_shape, dtype="FLOAT", exact=False):
    args = {
        "x": TensorArg.from_array(np.asarray(x, float), dtype),
        "t": TensorArg.from_array(np.asarray(t), "INT64"),
        "out": TensorArg.from_array(np.zeros(out_shape), dtype),
    }
    o = engine.evaluate(Call("aclnnPositionFixture", "atlas-a2", args), reg, exact=exact)
    assert o.status == 0, o.message
    return o.outputs["out"].reshape(out_shape)


X = np.array([[1.5, -2.0, 3.25, 4.0], [0.5, 0.25, 0.75, 8.0], [7.0, 8.0, 9.0, 10.0]])
T = [2, 0, 3]
ONE_HOT_BY_HAND = [[0, 0, 3.25, 0], [0.5, 0, 0, 0], [0, 0, 0, 10.0]]


@pytest.mark.parametrize(
    "dtype, exact", [("FLOAT", False), ("BF16", False), ("DOUBLE", False), ("DOUBLE", True)]
)
def test_one_hot_of_a_target_by_hand(tmp_path, dtype, exact):
    """x where the element's class is its row's target, 0 elsewhere (exact=True: every DOUBLE
    element through mpmath, walk.Row)."""
    reg = _registry(tmp_path, 2, -1, "where(position(-1) == t, x, 0)", "x")
    assert _eval(reg, X, T, (3, 4), dtype, exact).tolist() == ONE_HOT_BY_HAND


def test_a_position_without_a_gather(tmp_path):
    """The rows are the position's dim; t is placed by its shape rule (x reduced over -1)."""
    reg = _registry(tmp_path, 2, -1, "where(position(-1) < t, position(-1), -x)", "x")
    want = [[0, 1, 3.25 * -1, -4.0], [-0.5, -0.25, -0.75, -8.0], [0, 1, 2, -10.0]]
    assert _eval(reg, X, T, (3, 4), "DOUBLE").tolist() == want


@pytest.mark.parametrize("exact", [False, True])
def test_position_inside_a_row_of_every_dim(tmp_path, exact):
    """sum over every element of the one-hot picks: the position's dim has stride 1 inside a
    row spanning (3, 4); sum_n x[n, t_n] = 3.25 + 0.5 + 10."""
    reg = _registry(tmp_path, 2, -1, "sum(where(position(-1) == t, x, 0), all)", "scalar")
    assert float(_eval(reg, X, T, (), "DOUBLE", exact)) == 13.75


@pytest.mark.parametrize("exact", [False, True])
def test_position_along_dim_1_of_four_dims(tmp_path, exact):
    """A (2, 3, 2, 2) x, its class dim 1 (NLLLoss2d's): one-hot of a (2, 2, 2) t."""
    rng = np.random.default_rng(5)
    x = rng.integers(1, 9, (2, 3, 2, 2)).astype(float)
    t = rng.integers(0, 3, (2, 2, 2))
    reg = _registry(tmp_path, 4, 1, "where(position(1) == t, x, 0)", "x")
    want = np.zeros_like(x)
    for n in range(2):
        for h in range(2):
            for w in range(2):
                want[n, t[n, h, w], h, w] = x[n, t[n, h, w], h, w]
    assert _eval(reg, x, t, x.shape, "DOUBLE", exact).tolist() == want.tolist()


def test_the_compiled_row_gate_is_by_node_kind(tmp_path):
    """rowgen.py has no form for a gather or a position (ir.Along): such a formula goes to the
    numpy tiers; a plain reduction is compilable."""
    reg = _registry(tmp_path, 2, -1, "where(position(-1) == t, x, 0)", "x")
    assert not rows.compilable(reg.get("position_fixture"))
    plain = _registry(tmp_path, 2, -1, "exp(x - amax(x, -1))", "x")
    assert rows.compilable(plain.get("position_fixture"))
    shipped = default_registry()
    assert not rows.compilable(shipped.get("nll_loss_backward"))


@pytest.mark.parametrize("reduction, want", [(0, [[0, 0, -30], [-20, 0, 0]]), (1, None)])
def test_the_worked_example_of_docs_expressions(reduction, want):
    """docs/expressions.md's example on the shipped nll_loss_backward: self (2, 3), target
    [2, 0], weight [1, 2, 3], gradOutput [10, 20] (reduction none); for the mean, gradOutput
    10 and totalWeight 4: [[0, 0, -7.5], [-2.5, 0, 0]]."""
    g, tw = ([10.0, 20.0], [1.0]) if reduction == 0 else (10.0, [4.0])
    args = {
        "gradOutput": TensorArg.from_array(np.asarray(g), "FLOAT"),
        "self": TensorArg.from_array(np.zeros((2, 3)), "FLOAT"),
        "target": TensorArg.from_array(np.array([2, 0]), "INT64"),
        "weight": TensorArg.from_array(np.array([1.0, 2.0, 3.0]), "FLOAT"),
        "reduction": reduction,
        "ignoreIndex": -100,
        "totalWeight": TensorArg.from_array(np.asarray(tw), "FLOAT"),
        "out": TensorArg.from_array(np.zeros((2, 3)), "FLOAT"),
    }
    o = engine.evaluate(Call("nll_loss_backward", "atlas-a2", args), default_registry())
    assert o.status == 0, o.message
    got = o.outputs["out"].reshape(2, 3).tolist()
    assert got == (want if want is not None else [[0, 0, -7.5], [-2.5, 0, 0]])
