"""Index lists ended by a pad value (`values: {index_of: {..., pad: P}}`) and the check kind
dim_nonempty: the values the case generator draws (by rows along a dim, what the lists' readers
see), lint of the new fields, the check on hand-built calls, its negative cases and the empty
positive case it asks for, on a made-up fixture and on the shipped spec that uses both
(specs/ops/multilabel_margin_loss.yaml: target lists each row's classes up to its first -1; C,
the class dim, must not be empty).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.cases import values as vals
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import Registry, default_registry, load_spec
from aclnn_conformance.reference.engine import evaluate

from tests.support.fixture_spec import fixture_spec

# -- the values ------------------------------------------------------------------------------------


def _lists(v: np.ndarray, dim: int) -> np.ndarray:
    return np.moveaxis(v, dim, -1).reshape(-1, v.shape[dim] if v.ndim else 1)


@pytest.mark.parametrize("dtype", ["INT64", "INT32"])
@pytest.mark.parametrize("dim", [-1, 0])
def test_padded_lists_by_rows(dtype, dim):
    """Each row along dim: indices in [0, size) up to the first pad, then indices or pads;
    a row with no pad, a row of pads alone, repeated indices, and every length in between."""
    rng = np.random.default_rng(4)
    d = dt.get(dtype)
    v = vals.padded((40, 9) if dim == -1 else (9, 40), 9, -1, dim, d, rng)
    assert v.dtype == d.np
    rows = _lists(v, dim)
    firsts = []
    for row in rows.tolist():
        k = row.index(-1) if -1 in row else len(row)
        firsts.append(k)
        assert all(0 <= c < 9 for c in row[:k])
        assert all(c == -1 or 0 <= c < 9 for c in row[k:])
    assert 9 in firsts and all(r == [-1] * 9 for r in rows.tolist() if r[0] == -1 and
                                r.count(-1) == 9) and [-1] * 9 in rows.tolist()  # fmt: skip
    assert len(set(firsts)) > 5  # lengths spread over [0, 9]
    assert any(len(set(r[:f])) < f for r, f in zip(rows.tolist(), firsts, strict=True))  # repeats
    after = [c for r, f in zip(rows.tolist(), firsts, strict=True) for c in r[f + 1 :]]
    assert -1 in after and any(c >= 0 for c in after)  # what follows the first pad: both


def test_padded_lists_of_a_0d_tensor_one_row_and_no_classes():
    rng = np.random.default_rng(5)
    got = {int(vals.padded((), 1, -1, -1, dt.get("INT64"), rng)) for _ in range(40)}
    assert got == {0, -1}
    assert vals.padded((3, 0), 0, -1, -1, dt.get("INT64"), rng).shape == (3, 0)
    assert vals.padded((2, 4), 0, -1, -1, dt.get("INT64"), rng).tolist() == [[-1] * 4] * 2


# -- a fixture: lint of pad, the check kind -----------------------------------------------------------


def _write(tmp_path: Path, index: str = "{index_of: {param: x, dim: -1, pad: -1}}",
           axis: str = "-1") -> Path:  # fmt: skip
    """A fixture: x, t (x's shape, padded lists indexing x's last dim), out (x's shape) = x
    where t's row has not yet ended; C must not be empty, an empty batch succeeds."""
    return fixture_spec(
        tmp_path,
        "aclnnListFixture",
        "list_fixture",
        [
            '{name: x, kind: tensor, role: input, c_type: "const aclTensor*"}',
            '{name: t, kind: tensor, role: input, c_type: "const aclTensor*", shape: x, '
            f"values: {index}}}",
            "{name: ignoreIndex, kind: int, c_type: int64_t, default: -100}",
            '{name: out, kind: tensor, role: output, c_type: "aclTensor*", shape: x}',
        ],
        ["float: {source: t, default: [FLOAT]}", "index: {source: t, default: [INT64]}"],
        [
            "{id: null-ptr, kind: not_null, params: [x, t, out], status: ACLNN_ERR_PARAM_NULLPTR, "
            "source: t}",
            "{id: dtype-x, kind: dtype_in, params: [x], set: float, source: t}",
            "{id: dtype-t, kind: dtype_in, params: [t], set: index, source: t}",
            "{id: max-rank, kind: max_rank, params: [x], max: 2, source: t}",
            f"{{id: classes, kind: dim_nonempty, params: [x], axis: {axis}, source: t}}",
            "{id: t-shape, kind: shape_is, params: [t], source: t}",
            "{id: empty, kind: empty_success, params: [x], source: t}",
        ],
        "where(cumsum(t == -1, -1) == 0, x, 0)",
    )


@pytest.mark.parametrize(
    "index, axis, message",
    [
        ("{index_of: {param: x, dim: -1, pad: nope}}", "-1", "'pad': 'nope'"),
        ("{index_of: {param: x, dim: -1, pad: 1.5}}", "-1", "'pad': 1.5"),
        ("{index_of: {param: x, dim: -1, pad: -1, ignore: ignoreIndex}}", "-1", "not both"),
        ("{index_of: {param: x, dim: -1, pad: -1}}", "9", "axis"),
        ("{index_of: {param: x, dim: -1, pad: -1}}", "nope", "axis"),
    ],
)
def test_lint_of_pad_and_axis(tmp_path, index, axis, message):
    _, problems = lint_file(_write(tmp_path, index, axis))
    assert any(message in p.message for p in problems), [p.message for p in problems]


def test_the_fixture_lints_clean(tmp_path):
    spec, problems = lint_file(_write(tmp_path))
    assert problems == [] and spec is not None


def _status(reg: Registry, shape: tuple[int, ...]) -> tuple[int, str | None]:
    args = {"x": TensorArg.from_array(np.zeros(shape), "FLOAT"),
            "t": TensorArg.from_array(np.zeros(shape, np.int64), "INT64"), "ignoreIndex": -100,
            "out": TensorArg.from_array(np.zeros(shape), "FLOAT")}  # fmt: skip
    got = evaluate(Call("aclnnListFixture", "atlas-a2", args), reg)
    return got.status, got.clause


@pytest.mark.parametrize(
    "axis, shape, want",
    [
        (-1, (3, 4), (0, None)),
        (-1, (3, 0), (161002, "list_fixture/classes")),  # the classes empty
        (-1, (0,), (161002, "list_fixture/classes")),
        (-1, (0, 0), (161002, "list_fixture/classes")),
        (-1, (0, 4), (0, None)),  # the batch empty: the empty rule's success
        (-1, (), (0, None)),  # a 0-d tensor has no dim to be empty
        (0, (0, 4), (161002, "list_fixture/classes")),
        (0, (3, 0), (0, None)),
        (1, (5,), (0, None)),  # too few dims for axis 1: not this check's to say
    ],
)
def test_dim_nonempty_on_hand_built_calls(tmp_path, axis, shape, want):
    reg = Registry([load_spec(_write(tmp_path, axis=str(axis)))])
    assert _status(reg, shape) == want


def test_dim_nonempty_negatives_and_the_empty_positive_it_asks_for(tmp_path):
    """Its negative cases empty the dim of the 3x5 base (3x0, and a 1-D 0) and are rejected by it first; the
    shape axis gains an empty case with the zero on the other dim (0x3), which passes."""
    spec = load_spec(_write(tmp_path))
    plans = plan_op(spec)
    neg = [p for p in plans if p.kind == "negative" and p.clauses[0] == "classes"]
    assert sorted(p.id.rsplit("/", 1)[1] for p in neg) == ["x:0", "x:3x0"]
    reg = Registry([spec])
    for p in neg:
        case = build(spec, p, 0)
        got = evaluate(case.call, reg)
        assert (got.status, got.clause) == (161002, "list_fixture/classes"), p.id
    empty = [p for p in plans if p.id.endswith("/shape=empty-0x3")]
    assert empty and all(dict(p.args)["x"].shape == (0, 3) for p in empty)
    assert all("empty" in p.clauses for p in empty)


# -- the shipped spec ---------------------------------------------------------------------------------


def test_the_shipped_specs_generated_targets_are_padded_lists():
    """The positive cases of the shipped padded-list spec draw each target row as a list of
    classes of self ended by -1, never a value outside [-1, C)."""
    reg = default_registry()
    specs = [
        s for s in reg for p in s.params if p.index_of is not None and p.index_of.pad is not None
    ]
    assert specs
    for spec in specs:
        pad_param = next(
            p for p in spec.params if p.index_of is not None and p.index_of.pad is not None
        )
        plans = [p for p in plan_op(spec, [spec.products[0]])
                 if p.kind == "positive" and "values=normal" in p.id][:6]  # fmt: skip
        assert plans
        for plan in plans:
            call = build(spec, plan, 3).call
            t = np.asarray(call.tensor(pad_param.name).view())
            src = call.tensor(pad_param.index_of.param)
            c = src.shape[-1] if src.shape else 1
            assert t.min(initial=0) >= pad_param.index_of.pad and t.max(initial=-1) < c, plan.id
