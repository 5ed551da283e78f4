"""Shape rules (`shape:` on a tensor parameter, conformance/spec/shapes.py): the evaluator
against shapes computed by hand and by numpy's own reductions, the linter's messages, case
generation deriving every ruled tensor, the reference on outputs of the ruled shape (against
math.fsum), numel(x), and a hostile case file.

The fixture specs are tests/data/shape_specs/*.yaml (a squared-difference loss with a
conditional rule, a sum over dims with keepdim); the oracles never read them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import ArrayArg, Call, CallError, TensorArg
from aclnn_conformance.conformance.acl.planned import TensorPlan
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.spec.expr.language import ExprError, compile_expr
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import Registry, load_spec
from aclnn_conformance.conformance.spec.shapes import (
    ShapeError,
    ShapeSyntaxError,
    parse_rule,
    shape_of,
)
from aclnn_conformance.reference import engine

from tests.support.rounding import round_exact

HERE = Path(__file__).parent
SPECS = HERE / "data" / "shape_specs"


def rule(text, known=("reduction", "dim", "keepdim", "mode"), strings=("mode",)):
    return parse_rule(text, known, strings)


# -- the evaluator, against hand-computed shapes --------------------------------------------------


@pytest.mark.parametrize(
    "text, shapes, attrs, want",
    [
        ("self", {"self": (2, 3)}, {}, (2, 3)),
        ("scalar", {"self": (2, 3)}, {}, ()),
        ("broadcast(self, target)", {"self": (3, 1), "target": (1, 5)}, {}, (3, 5)),
        ("broadcast(a, b, c)", {"a": (4,), "b": (2, 1, 1), "c": (3, 1)}, {}, (2, 3, 4)),
        ("reduce(self, all, false)", {"self": (2, 3, 4)}, {}, ()),
        ("reduce(self, all, true)", {"self": (2, 3, 4)}, {}, (1, 1, 1)),
        ("reduce(self, 1, false)", {"self": (2, 3, 4)}, {}, (2, 4)),
        ("reduce(self, -1, true)", {"self": (2, 3, 4)}, {}, (2, 3, 1)),
        ("reduce(self, [0, -1], false)", {"self": (2, 3, 4)}, {}, (3,)),
        (
            "reduce(self, dim, keepdim)",
            {"self": (2, 3, 4)},
            {"dim": (0, 2), "keepdim": True},
            (1, 3, 1),
        ),  # fmt: skip
        ("reduce(self, dim, keepdim)", {"self": (2, 0, 4)}, {"dim": -2, "keepdim": False}, (2, 4)),
        ("reduce(self, dim, false)", {"self": ()}, {"dim": 0}, ()),  # rank 0: dim 0 wraps
        ("split(self, -1, 2)", {"self": (3, 8)}, {}, (3, 4)),
        ("split(self, dim, 2)", {"self": (6, 4)}, {"dim": 0}, (3, 4)),
        ("[self.0, 3]", {"self": (5, 7)}, {}, (5, 3)),
        ("[self.-1, self.0]", {"self": (5, 7)}, {}, (7, 5)),
        ([4, 2], {}, {}, (4, 2)),  # a YAML list of sizes
        (
            "reduce(broadcast(self, target), 0, false)",
            {"self": (3, 1), "target": (4,)},
            {},
            (4,),
        ),  # fmt: skip
        ("reduce(broadcast(self, target), 0, false)", {"self": (), "target": ()}, {}, ()),
    ],
)
def test_shape_of_hand_computed(text, shapes, attrs, want):
    assert shape_of(rule(text), shapes, attrs) == want


@pytest.mark.parametrize(
    "shape, dims, keep",
    [((2, 3, 4), (1,), False), ((2, 3, 4), (0, 2), True), ((2, 3, 1, 4), (-2,), False),
     ((7,), (0,), True), ((2, 0, 3), (1,), False), ((2, 3, 4), (-1, 0), False)],
)  # fmt: skip
def test_reduce_matches_numpy(shape, dims, keep):
    # numpy's own reduction says what shape a reduction over `dims` has
    want = np.sum(np.zeros(shape), axis=dims, keepdims=keep).shape
    got = shape_of(rule("reduce(self, dim, keepdim)"), {"self": shape},
                   {"dim": dims, "keepdim": keep})  # fmt: skip
    assert got == want


def test_conditional_rule_picks_the_first_when_that_holds():
    r = rule(
        [
            {"when": "reduction == 0", "value": "broadcast(self, target)"},
            {"when": "otherwise", "value": "scalar"},
        ]
    )
    shapes = {"self": (3, 1), "target": (5,)}
    assert shape_of(r, shapes, {"reduction": 0}) == (3, 5)
    assert shape_of(r, shapes, {"reduction": 1}) == ()
    assert shape_of(r, shapes, {"reduction": 2}) == ()
    s = rule(
        [{"when": 'mode == "none"', "value": "self"}, {"when": "otherwise", "value": "scalar"}]
    )
    assert shape_of(s, {"self": (2,)}, {"mode": "none"}) == (2,)
    assert shape_of(s, {"self": (2,)}, {"mode": "sum"}) == ()


@pytest.mark.parametrize(
    "text, shapes, attrs, message",
    [
        ("split(self, 0, 2)", {"self": (3, 4)}, {}, "not divisible by 2"),
        ("reduce(self, 3, false)", {"self": (3, 4)}, {}, "out of range"),
        ("reduce(self, dim, false)", {"self": (3, 4)}, {"dim": (1, -1)}, "twice"),
        ("broadcast(self, target)", {"self": (3,), "target": (4,)}, {}, "do not broadcast"),
        ("[self.2]", {"self": (3, 4)}, {}, "no size 2"),
        ("self", {}, {}, "has no shape"),
    ],
)
def test_rules_a_call_cannot_meet(text, shapes, attrs, message):
    with pytest.raises(ShapeError, match=message):
        shape_of(rule(text), shapes, attrs)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "is text"),
        ("self + 1", "not a shape rule"),
        ("reshape(self)", "unknown shape function"),
        ("reduce(self, all)", "reduce(tensor, dims, keepdim)"),
        ("reduce(self, 1.5, false)", "dims"),
        ("reduce(self, all, maybe yes)", "keepdim"),
        ("split(self, all, 2)", "one int"),
        ("split(self, 0, 0)", "positive integer"),
        ("[self.x]", "NAME.K or an integer"),
        ("broadcast(self, [1])", "tensor names"),
        ("reduce(split(self, 0, 2), 0, false)", "a tensor or broadcast(...)"),
        ("__import__('os')", "unknown shape function"),
    ],
)
def test_bad_rule_text(text, message):
    with pytest.raises(ShapeSyntaxError, match=re.escape(message)):
        rule(text)


def test_conditional_rule_shape_errors():
    with pytest.raises(ShapeSyntaxError, match="must be the last"):
        rule([{"when": "otherwise", "value": "self"}, {"when": "reduction == 0", "value": "self"}])
    with pytest.raises(ShapeSyntaxError, match="not allowed|unknown"):
        rule([{"when": "__import__('os')", "value": "self"}])
    with pytest.raises(ShapeSyntaxError, match="when: ..., value: ..."):
        rule([{"when": "reduction == 0", "value": "self", "x": 1}])


# -- lint ------------------------------------------------------------------------------------------

SPEC_HEAD = """\
format: 1
op: aclnnTestShapeLint
name: test_shape_lint
aten: mse_loss
summary: s
source: {doc: t}
products: [ascend950]
params:
  - {name: self, kind: tensor, role: input}
  - {name: reduction, kind: int, default: 1, values: [0, 1, 2]}
  - {name: flag, kind: float, default: 1.0}
"""
SPEC_TAIL = """\
dtype_sets:
  float: {source: t, default: [FLOAT]}
checks:
  - {id: dtype, kind: dtype_in, params: [self, out], set: float, source: t}
formula:
  output: out
  source: t
  branches:
    - {id: all, when: otherwise, value: "sum(self, all)", source: t}
"""


@pytest.mark.parametrize(
    "out_line, message",
    [
        ('shape: "reduce(self, flag, false)"', "flag is a float, not int or int_array"),
        ('shape: "reduce(self, all, reduction)"', "reduction is a int, not bool"),
        ('shape: "broadcast(self, nothere)"', "'nothere', not a tensor parameter"),
        ('shape: "out"', "reads its own shape"),
        ('shape: "sum(self)"', "unknown shape function"),
        ("shape: [{when: nothere == 0, value: scalar}]", "not a parameter|unknown"),
    ],
)
def test_lint_reports_bad_rules_at_their_line(tmp_path, out_line, message):
    text = (
        SPEC_HEAD
        + f"  - name: out\n    kind: tensor\n    role: output\n    {out_line}\n"
        + "  - {name: later, kind: tensor, role: input}\n"
        + SPEC_TAIL
    )
    path = tmp_path / "s.yaml"
    path.write_text(text)
    spec, problems = lint_file(path)
    assert spec is None
    hits = [p for p in problems if re.search(message, p.message)]
    assert hits, [str(p) for p in problems]
    assert hits[0].line == 15  # the `shape:` line
    assert str(hits[0]).startswith(f"{path}:15: out")


def test_lint_shape_is_needs_a_rule(tmp_path):
    text = SPEC_HEAD + "  - {name: out, kind: tensor, role: output}\n" + SPEC_TAIL
    text = text.replace(
        "set: float, source: t}\n",
        "set: float, source: t}\n  - {id: s, kind: shape_is, params: [out], source: t}\n",
    )
    path = tmp_path / "s.yaml"
    path.write_text(text)
    _, problems = lint_file(path)
    assert [p.line for p in problems if "out has no `shape:` rule" in p.message] == [17]


def test_fixture_specs_lint_clean():
    for path in sorted(SPECS.glob("*.yaml")):
        spec, problems = lint_file(path)
        assert spec is not None and not problems, [str(p) for p in problems]


# -- numel(x) --------------------------------------------------------------------------------------


def test_numel_lowers_to_the_tensors_count():
    e = compile_expr("x / numel(self)", ["x", "self"])
    assert "self" in e.names
    assert float(e.evaluate({"x": 6.0, "numel(self)": 3})) == 2.0
    with pytest.raises(ExprError, match="one tensor parameter"):
        compile_expr("numel(self + 1)", ["self"])
    with pytest.raises(ExprError, match="not a parameter"):
        compile_expr("numel(other)", ["self"])


# -- generation ------------------------------------------------------------------------------------


def _expected_out(spec, args):
    """The output shape computed by hand from the planned arguments (numpy's broadcasting and
    reductions say the shapes; the spec's rule is not read)."""
    if spec.name == "test_sq_loss":
        full = np.broadcast_shapes(args["self"].shape, args["target"].shape)
        return tuple(full) if args["reduction"] == 0 else ()
    dims = args["dim"].values() if isinstance(args["dim"], ArrayArg) else args["dim"]
    if not args["self"].shape:  # rank 0: dim 0 or -1 names its one element
        return ()
    return np.sum(np.zeros(args["self"].shape), axis=tuple(dims), keepdims=args["keepdim"]).shape


@pytest.mark.parametrize("name", ["sq_loss", "sum_dim"])
def test_generation_derives_every_ruled_shape(name):
    spec = load_spec(SPECS / f"{name}.yaml")
    plans = [p for p in plan_op(spec) if p.kind == "positive"]
    assert plans
    for p in plans:
        args = p.arg
        assert isinstance(args["out"], TensorPlan)
        assert args["out"].shape == _expected_out(spec, args), p.id


def test_generation_covers_dims_keepdim_and_rule_branches():
    spec = load_spec(SPECS / "sum_dim.yaml")
    ids = [p.id for p in plan_op(spec)]
    for shp in ("7", "3x5", "2x3x4", "2x3x1x4"):
        rank = len(shp.split("x"))
        for d in range(-rank, rank):
            for keep in (0, 1):
                assert f"test_sum_dim/ascend950/f32/keepdim={keep}/dim=dim:{d}@{shp}" in ids
    assert "test_sum_dim/ascend950/f32/keepdim=1/dim=dim:1@2x0x3" in ids  # empty reduced axis
    loss = load_spec(SPECS / "sq_loss.yaml")
    ids = [p.id for p in plan_op(loss)]
    for r in (0, 1, 2):
        assert f"test_sq_loss/ascend950/f32/reduction={r}/shape=bcast-3x1.1x5" in ids
        assert f"test_sq_loss/ascend950/f32/reduction={r}/shape=empty-2x0x3" in ids


def test_shape_is_negatives_have_a_wrong_shape():
    spec = load_spec(SPECS / "sq_loss.yaml")
    negs = [p for p in plan_op(spec) if p.kind == "negative" and "out-shape" in p.id]
    assert {p.id.rsplit("/", 1)[1] for p in negs} >= {"out:extra-dim", "out:extra-dim@reduction=0"}
    reg = Registry([spec])
    for p in negs:
        args = p.arg
        assert args["out"].shape != _expected_out(spec, args)
        out = engine.evaluate(build(spec, p, 0).call, reg)
        assert out.status == 161002 and out.clause == "test_sq_loss/out-shape", out.message


# -- the reference ---------------------------------------------------------------------------------


def _exact(x):
    return Fraction(float(x))


@pytest.mark.parametrize(
    "reduction, large",
    # the 1024x1024 case's exact sum in Fractions takes ~30 s: the slow tier
    [(0, False), (1, False), (2, False), pytest.param(1, True, marks=pytest.mark.slow)],
)
def test_reference_loss_against_fsum(reduction, large):
    spec = load_spec(SPECS / "sq_loss.yaml")
    reg = Registry([spec])
    plans = [p for p in plan_op(spec, ["ascend950"]) if p.kind == "positive"
             and f"f32/reduction={reduction}/" in p.id and "/shape=" in p.id
             and ("/shape=large" in p.id) == large]  # fmt: skip
    assert plans
    for p in plans:
        call = build(spec, p, 0).call
        out = engine.evaluate(call, reg)
        assert out.status == 0
        s = np.asarray(call.tensor("self").view(), np.float64)
        t = np.asarray(call.tensor("target").view(), np.float64)
        a, b = np.broadcast_arrays(s, t)
        exact = [(_exact(x) - _exact(y)) ** 2 for x, y in zip(a.ravel(), b.ravel(), strict=True)]
        got = out.outputs["out"]
        if reduction == 0:
            want = np.array([float(v) for v in exact], np.float32).reshape(a.shape)
            assert np.array_equal(got[: want.size].reshape(a.shape), want), p.id
            continue
        assert call.tensor("out").shape == ()
        total = sum(exact, Fraction(0))
        if reduction == 1:
            if not exact:
                assert math.isnan(float(got[0])), p.id
                continue
            total /= len(exact)
        # Fraction -> float64 is correctly rounded; float64 -> float32 may double-round only on
        # a midpoint, which these inputs do not reach (checked: compare within one float32 ulp)
        want32 = np.float32(float(total))
        assert abs(float(got[0]) - float(want32)) <= float(np.spacing(want32)), (p.id, got, want32)


def test_reference_sum_over_dims_against_fsum():
    spec = load_spec(SPECS / "sum_dim.yaml")
    reg = Registry([spec])
    plans = [p for p in plan_op(spec, ["ascend950"]) if p.kind == "positive"
             and "/f32/" in p.id and "/dim=" in p.id]  # fmt: skip
    assert len(plans) > 40
    for p in plans:
        call = build(spec, p, 0).call
        out = engine.evaluate(call, reg)
        assert out.status == 0, out.message
        x = np.asarray(call.tensor("self").view(), np.float64)
        dims = tuple(d % max(x.ndim, 1) for d in call.args["dim"].values())
        keep = call.args["keepdim"]
        moved = np.moveaxis(x, dims, tuple(range(x.ndim - len(dims), x.ndim)))
        length = math.prod(x.shape[d] for d in dims)
        rows = moved.reshape(math.prod(moved.shape[: x.ndim - len(dims)]), length)
        want = np.array([math.fsum(r) for r in rows], np.float64).astype(np.float32)
        want = want.reshape(np.sum(np.zeros(x.shape), axis=dims, keepdims=keep).shape)
        got = np.asarray(call.tensor("out").shape)
        assert tuple(got) == want.shape
        assert np.array_equal(out.outputs["out"][: want.size], want.ravel()), p.id


def test_reference_refuses_an_output_of_another_shape_without_a_check():
    spec = load_spec(SPECS / "sum_dim.yaml")
    spec = dataclasses.replace(spec, checks=tuple(c for c in spec.checks if c.kind != "shape_is"))
    reg = Registry([spec])
    plan = next(p for p in plan_op(spec) if p.kind == "positive" and "/dim=dim:0@3x5" in p.id)
    args = dict(plan.args)
    args["out"] = TensorPlan(args["out"].dtype, (3, 5))
    bad = dataclasses.replace(plan, args=tuple(args.items()))
    with pytest.raises(CallError, match=r"out has shape \[3, 5\] but its shape rule"):
        engine.evaluate(build(spec, bad, 0).call, reg)


# -- a hostile case file ---------------------------------------------------------------------------


def test_case_file_with_a_wrong_output_shape_is_one_message(tmp_path):
    cli = [sys.executable, "-m", "aclnn_conformance.cli.main", "--specs", str(SPECS)]
    out = tmp_path / "cases"
    r = subprocess.run(
        [*cli, "cases", "export", "--op", "test_sq_loss", "--clause", "mean",
         "--max-cases", "1", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    case = next(out.rglob("case.json"))
    data = json.loads(case.read_text())
    data["expected_status"] = 0
    o = data["args"]["out"]
    storage = np.zeros(15, np.float32)
    np.save(case.parent / o["storage"], storage)
    o.update(shape=[3, 5], strides=[5, 1])
    o["sha256"] = hashlib.sha256((case.parent / o["storage"]).read_bytes()).hexdigest()
    case.write_text(json.dumps(data))
    r = subprocess.run(
        [*cli, "run", "--cases", str(out), "--backend", "reference", "-q",
         "--results", str(tmp_path / "r.jsonl")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    text = r.stdout + r.stderr
    assert "Traceback" not in text
    assert r.returncode != 0
    assert "out shape [3, 5] != []" in text, text
    shutil.rmtree(out)


def test_numel_divides_by_the_unbroadcast_count():
    # mse_loss_backward's mean: 2 (x - y) g / numel(self), self (4, 1) broadcast to (4, 5): the
    # count is 4, not 20. Element [0, 0] is a float32 rounding tie ((1 + 2^-12)^2 / 2 has 25
    # significant bits), which the reference's settling decides (the exactness pass, which reads
    # numel(self) from the environment)
    reg = Registry([load_spec(HERE.parent / "specs" / "ops" / "mse_loss_backward.yaml")])
    rng = np.random.default_rng(7)
    g = rng.standard_normal((1, 5)).astype(np.float32)
    x = rng.standard_normal((4, 1)).astype(np.float32)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    g[0, 0], x[0, 0], y[0, 0] = 1 + 2.0**-12, 1 + 2.0**-12, 0.0
    args = {
        "gradOutput": TensorArg.from_array(g, "FLOAT"),
        "self": TensorArg.from_array(x, "FLOAT"),
        "target": TensorArg.from_array(y, "FLOAT"),
        "reduction": 1,
        "out": TensorArg.from_array(np.zeros((4, 5), np.float32), "FLOAT"),
    }
    got = engine.evaluate(Call("mse_loss_backward", "atlas-a2", args), reg)
    assert got.status == 0, got.message
    a, b, c = np.broadcast_arrays(x, y, g)
    want = [
        round_exact(2 * (Fraction(float(p)) - Fraction(float(q))) * Fraction(float(r)) / 4, "FLOAT")
        for p, q, r in zip(a.ravel(), b.ravel(), c.ravel(), strict=True)
    ]
    assert got.outputs["out"][:20].tolist() == [float(w) for w in want]


def test_a_rule_may_read_a_later_tensor_but_not_in_a_cycle(tmp_path):
    """A gradient before the input it halves (C order) reads a later tensor: accepted; two rules
    that read each other: refused."""
    for line, later, ok in (
        ('shape: "broadcast(self, later)"', "", True),
        ('shape: "later"', ', shape: "out"', False),
    ):
        text = (
            SPEC_HEAD
            + f"  - name: out\n    kind: tensor\n    role: output\n    {line}\n"
            + "  - {name: later, kind: tensor, role: input"
            + later
            + "}\n"
            + SPEC_TAIL
        )
        path = tmp_path / "s.yaml"
        path.write_text(text)
        _, problems = lint_file(path)
        cycle = [p for p in problems if "read each other (a cycle)" in p.message]
        assert (not cycle) == ok, [str(p) for p in problems]
