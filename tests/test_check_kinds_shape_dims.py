"""The check kinds min_rank, same_format, dims_unique, dim_divisible and the `products:` field
of any check, on the fixture tests/data/checks/pair_max.yaml: the reference's status and
deciding clause for hand-built calls (expected by hand from the fixture's rules), one generated
negative case per kind that breaks exactly its rule, and lint of the new fields.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import ArrayArg, Call, TensorArg
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.spec.interpret import validate
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import load_registry
from aclnn_conformance.reference.engine import evaluate

from tests.support.runcli import REPO

FIXTURE = REPO / "tests" / "data" / "checks"
REG = load_registry(dirs=[FIXTURE])
SPEC = REG.get("pair_max")
OK, NULLPTR, INVALID = 0, 161001, 161002


def _t(shape, fmt: str = "ND", dtype: str = "FLOAT") -> TensorArg:
    n = int(np.prod(shape)) if shape else 1
    t = TensorArg.from_array(np.arange(n, dtype=np.float64).reshape(shape) - n / 2, dtype)
    t.format = fmt
    return t


def _call(shape=(3, 4), product="atlas-a2", dims=(0, 1), dim=-1, formats=("ND",) * 3, **shapes):
    s, o, o_shape = (shapes.get(k, shape) for k in ("self", "other", "out"))
    out = TensorArg.empty_like_shape(tuple(o_shape), "FLOAT", fill=np.nan)
    out.format = formats[2]
    return Call("pair_max", product, {
        "self": _t(s, formats[0]), "other": _t(o, formats[1]),
        "dims": ArrayArg("int_array", tuple(dims)), "dim": dim,
        "out": out})  # fmt: skip


def _status(call: Call) -> tuple[int, str | None]:
    got = evaluate(call, REG)
    return got.status, got.clause


@pytest.mark.parametrize(
    ("call", "want"),
    [
        (_call(), (OK, None)),
        # min_rank 2: a rank-1 self is rejected, rank 2 accepted (dims [0] keeps dims_unique quiet)
        (_call((4,), dims=(0,)), (INVALID, "pair_max/min-rank")),
        (_call((2, 4)), (OK, None)),
        # same_format: one tensor NCHW among ND
        (_call(formats=("ND", "NCHW", "ND")), (INVALID, "pair_max/same-format")),
        (_call(formats=("NCHW",) * 3), (OK, None)),
        # dims_unique: [0, -2] names dim 0 twice on a rank-2 self; [1, -2] does not; [0, 7] is
        # out of range, which is not this rule's to report
        (_call(dims=(0, -2)), (INVALID, "pair_max/dims-unique")),
        (_call(dims=(1, -2)), (OK, None)),
        (_call(dims=(0, 0)), (INVALID, "pair_max/dims-unique")),
        (_call(dims=(0, 7)), (OK, None)),
        # dim_divisible by 2 along dim: 3x5 along -1 fails, along 0 fails (3), 4x5 along 0 passes
        (_call((3, 5)), (INVALID, "pair_max/dim-divisible")),
        (_call((3, 5), dim=0), (INVALID, "pair_max/dim-divisible")),
        (_call((4, 5), dim=0), (OK, None)),
        (_call((4, 6), dim=-2), (OK, None)),
        (_call((4, 4), other=(4, 5)), (INVALID, "pair_max/dim-divisible")),  # other's size 5
        # max-rank-950 (max 4, its own status) applies on ascend950 only
        (_call((1, 1, 1, 2, 2)), (OK, None)),
        (_call((1, 1, 1, 2, 2), product="ascend950"), (NULLPTR, "pair_max/max-rank-950")),
        (_call((1, 1, 2, 2), product="ascend950"), (OK, None)),
    ],
)
def test_the_reference_decides_the_hand_expected_status(call, want):
    assert _status(call) == want


def test_an_accepted_call_is_computed():
    got = evaluate(_call(), REG)
    a = _t((3, 4)).view().astype(np.float64)
    assert np.array_equal(got.outputs["out"].reshape(3, 4), np.maximum(a, a))


@pytest.fixture(scope="module")
def negatives() -> dict[str, list]:
    """The generated negative cases of the fixture, by the clause they target."""
    out: dict[str, list] = {}
    for plan in plan_op(SPEC):
        if plan.kind == "negative":
            out.setdefault(plan.clauses[0], []).append(plan)
    return out


@pytest.mark.parametrize("clause", ["min-rank", "same-format", "dims-unique", "dim-divisible"])
def test_each_new_kind_has_negative_cases_that_break_exactly_it(clause, negatives):
    plans = negatives.get(clause)
    assert plans, f"no negative case for {clause}"
    for plan in plans:
        case = build(SPEC, plan, 0)
        v = validate(SPEC, case.call)
        assert v.check is not None and v.check.id == clause, (plan.id, v.message)
        assert case.expected_status == INVALID
        assert evaluate(case.call, REG).status == INVALID


def test_a_product_scoped_check_is_tested_on_its_products_only(negatives):
    plans = negatives["max-rank-950"]
    assert plans and {p.product for p in plans} == {"ascend950"}
    for plan in plans:
        assert _status(build(SPEC, plan, 0).call) == (NULLPTR, "pair_max/max-rank-950")


def test_positive_cases_are_planned_with_the_split_dim_scaled():
    """The 3x5 base breaks dim_divisible by 2 along -1: planning scales it to 3x10."""
    positives = [p for p in plan_op(SPEC) if p.kind == "positive"]
    assert positives
    assert all(
        dict(p.args)["self"].shape[-1] % 2 == 0 for p in positives if dict(p.args)["self"].shape
    )
    assert dict(positives[0].args)["self"].shape == (3, 10)


# -- lint ----------------------------------------------------------------------------------------

BASE = (FIXTURE / "pair_max.yaml").read_text(encoding="utf-8")


def _problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    _, problems = lint_file(path)
    return [f"{p.line}: {p.message}" for p in problems]


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("products: [ascend950]", "products: [atlas-a3]", "product 'atlas-a3' is not a product of this op"),
        ("dim: dims, source", "dim: dim, source", "dims_unique: dim 'dim' must name an int_array parameter"),
        ("dim: dim, by: 2", "dim: self, by: 2", "dim_divisible: dim 'self' must name an int or int_array"),
        ("dim: dim, by: 2", "dim: dim, by: 1", "by"),
        ("min: 2", "min: 0", "min"),
        ("kind: same_format, params: [self, other, out]", "kind: same_format, params: [self, dims]",
         "same_format: 'dims' is a int_array, not a tensor"),
    ],
)  # fmt: skip
def test_lint_names_the_line_of_a_bad_field(tmp_path, old, new, message):
    text = BASE.replace(old, new)
    assert text != BASE
    probs = _problems(tmp_path, text)
    assert len(probs) == 1 and message in probs[0], probs
    assert probs[0].startswith(f"{_line(text, new)}:"), probs
