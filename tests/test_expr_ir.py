"""One IR and one walker behind every arithmetic (issue 26 point 1): each expression is lowered
once (conformance/spec/expr/ir.py), walk.py owns the semantics, and each tier is an arithmetic.
The values below are worked out by hand (IEEE 754 for the float arithmetics, exact for the
others), never taken from one of the arithmetics."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.spec.expr import ir, walk
from aclnn_conformance.conformance.spec.expr.language import FUNCTIONS, compile_expr
from aclnn_conformance.conformance.spec.expr.mpeval import mp_arithmetic
from aclnn_conformance.conformance.spec.expr.numpy_arith import NUMPY
from aclnn_conformance.conformance.spec.registry import SpecError, load_spec
from aclnn_conformance.reference.errbound import BOUNDED
from aclnn_conformance.reference.precise import RATIONAL
from aclnn_conformance.reference.roundings import COUNT

NAMES = ("x", "y", "mode")
MP = mp_arithmetic(mpmath.mp)
BAD = Path(__file__).parent / "data" / "bad_specs"


def _expr(text: str):
    return compile_expr(text, NAMES, ["mode"])


def test_lowering_resolves_constants_functions_and_operators():
    e = _expr("where(mode == 'a', -x ** 2, minimum(pi, y)) + 1")
    assert e.ir == ir.Binary(
        "add",
        ir.Where(
            ir.Text("mode", False, frozenset({"a"})),
            ir.Unary("neg", ir.Binary("pow", ir.Var("x"), ir.Num(2))),
            ir.Call("minimum", (ir.Const("pi", math.pi), ir.Var("y"))),
        ),
        ir.Num(1),
    )
    assert _expr("+x").ir == ir.Var("x")  # unary plus is no node
    assert _expr("0 < x <= 1").ir == ir.Compare(("lt", "le"), (ir.Num(0), ir.Var("x"), ir.Num(1)))
    assert _expr("mode not in ('a', 'b')").ir == ir.Text("mode", True, frozenset({"a", "b"}))


@pytest.mark.parametrize("arith", [NUMPY, MP, BOUNDED, COUNT], ids=lambda a: a.name)
def test_every_function_of_the_language_has_a_method_in_every_formula_arithmetic(arith):
    assert walk.missing(arith, FUNCTIONS) == []


def test_the_rational_arithmetic_says_which_functions_it_lacks():
    rational = {"abs", "sign", "minimum", "maximum"}  # exact on rationals
    own = {"where", "half", "concat"}  # the walker's own
    assert walk.missing(RATIONAL, FUNCTIONS) == sorted(set(FUNCTIONS) - rational - own)


# (expression, x, y, value worked out by hand under IEEE 754; None: NaN)
CASES = [
    ("x / y", 1.0, 0.0, math.inf),
    ("x / y", -2.0, 0.0, -math.inf),
    ("x / y", 0.0, 0.0, None),
    ("minimum(x, y)", 1.0, math.nan, None),
    ("maximum(x, y)", math.nan, 1.0, None),
    ("where(x < y, 1, 2)", math.nan, 1.0, 2.0),  # NaN compares false
    ("where(x != y, 1, 2)", math.nan, math.nan, 1.0),
    ("where(0 < x < y, 1, 2)", 0.5, 0.25, 2.0),  # a chain holds only where every link does
    ("where(not (x > 1) or y == 3, 1, 2)", 2.0, 3.0, 1.0),
    ("where(mode == 'b', log(x), 7)", -1.0, 0.0, 7.0),
    ("x * 3 + y / 4", 2.0, 2.0, 6.5),
]


@pytest.mark.parametrize(("text", "x", "y", "want"), CASES)
def test_numpy_mpmath_and_the_error_bound_agree_with_ieee(text, x, y, want):
    e = _expr(text)
    got_np = e.run({"x": np.array([x]), "y": np.array([y]), "mode": "a"}, NUMPY)
    with mpmath.workprec(128):
        got_mp = e.run({"x": mpmath.mpf(x), "y": mpmath.mpf(y), "mode": "a"}, MP)
    got_eb = e.run({"x": (np.array([x]), 0.0), "y": (np.array([y]), 0.0), "mode": "a"}, BOUNDED)
    for got in (float(np.asarray(got_np).reshape(-1)[0]), float(got_mp),
                np.asarray(got_eb[0]).reshape(-1)[0]):  # fmt: skip
        assert math.isnan(got) if want is None else got == want, (text, got)


def _formula(lets: dict[str, str], branches: list[tuple[str | None, str]]) -> walk.Formula:
    known = (*NAMES, *lets)
    return walk.Formula(
        [(n, compile_expr(v, known, ["mode"])) for n, v in lets.items()],
        [
            (
                None if w is None else compile_expr(w, known, ["mode"]),
                compile_expr(v, known, ["mode"]),
            )
            for w, v in branches
        ],
    )


def test_the_first_true_branch_wins_and_otherwise_ends_the_walk():
    f = _formula({"d": "x - 1"}, [("x > 2", "d * 10"), ("x > 0", "d"), (None, "x * 0 - 5")])
    xs = np.array([3.0, 2.0, 0.5, -1.0, math.nan])
    got = f.evaluate({"x": xs, "y": 0.0, "mode": "a"}, NUMPY, xs.size)
    # 3 > 2: (3-1)*10; 2 > 0: 1; 0.5 > 0: -0.5; otherwise: -5; NaN fails both tests: NaN*0-5 = NaN
    assert got[:4].tolist() == [20.0, 1.0, -0.5, -5.0] and math.isnan(got[4])
    for x, want in [(3, 20), (2, 1), (Fraction(1, 2), Fraction(-1, 2)), (-1, -5)]:
        env = {"x": Fraction(x), "y": Fraction(0), "mode": "a"}
        assert f.evaluate(env, RATIONAL) == want
        with mpmath.workprec(128):
            assert f.evaluate({**env, "x": mpmath.mpf(float(x))}, MP) == want


def test_a_let_is_bound_only_when_an_evaluated_expression_names_it():
    f = _formula({"a": "x + 1", "b": "y * 2"}, [("mode == 'a'", "a"), (None, "b")])
    env = {"x": Fraction(1), "y": Fraction(3), "mode": "a"}
    assert f.evaluate(env, RATIONAL) == 2
    assert "a" in env and "b" not in env  # the otherwise branch was never walked


def test_where_on_a_plain_bool_walks_one_side_only():
    # the rational arithmetic raises on a power: a string condition decides where() for every
    # element, so the power is evaluated only where that side is taken
    e = _expr("where(mode == 'a', x, x ** 2)")
    assert e.run({"x": Fraction(3), "mode": "a"}, RATIONAL) == 3
    with pytest.raises(Exception, match="pow"):
        e.run({"x": Fraction(3), "mode": "b"}, RATIONAL)


def test_a_rounding_count_is_walked_like_any_value():
    env = {"x": 0, "y": 0, "mode": "a"}  # inputs are exact: no rounding yet
    assert _expr("x * y + 1").run(env, COUNT) == 2  # two roundings (capped at MANY)
    assert _expr("maximum(x, -y)").run(env, COUNT) == 0
    assert _expr("sqrt(x + y)").run(env, COUNT) == 2
    assert _expr("where(mode == 'a', x / 2, y)").run(env, COUNT) == 1


def test_lint_names_an_arithmetic_lacking_a_function(tmp_path, monkeypatch):
    class NoExp(walk.Arithmetic):
        name = "test-without-exp"

    text = (BAD / "unknown_name_in_formula.yaml").read_text(encoding="utf-8")
    spec = tmp_path / "copy.yaml"
    spec.write_text(
        text.replace(
            "value: gradOutput * beta  # <- defect", "value: gradOutput * exp(scale)"
        ).replace(
            "op: aclnnEluBackward\nname: elu_backward\n", "op: aclnnEluCopy\nname: elu_copy\n"
        ),
        encoding="utf-8",
    )
    load_spec(spec)  # valid while every registered arithmetic has exp
    monkeypatch.setattr(walk, "_FORMULA_ARITHMETICS", [NUMPY, NoExp()])
    again = tmp_path / "again.yaml"  # another file: the registry's cache of loaded specs misses
    again.write_bytes(spec.read_bytes())
    with pytest.raises(SpecError, match="test-without-exp arithmetic has no exp"):
        load_spec(again)


def test_walking_the_same_expression_in_two_arithmetics_stages_each_once():
    e = _expr("x + y")
    assert e.staged(NUMPY) is e.staged(NUMPY)
    assert e.staged(MP) is not e.staged(NUMPY)
