"""Nullable parameters (`if_null:`): what a null pointer does is part of the spec language.

`if_null: default` (the op uses the documented default: aclnnSwish's betaOptional, op_api
`float scale = 1.0f; if (betaOptional != nullptr) scale = betaOptional->ToFloat()`), `absent` (the
parameter takes no part) and `error` (a not_null check rejects it). The expected values below
are computed here from the formulas, not read from the engine.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.conformance.cases.casedir import find_cases, read_case
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.spec.interpret import validate
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine

from tests.support.runcli import REPO, assert_clean, conform, read_jsonl

REG = default_registry()
OPS = REPO / "specs" / "ops"


def _spec_copy(tmp_path: Path, src: str, name: str, edit) -> Path:
    """A copy of shipped spec `src` renamed `name` (no in-place variant), changed by `edit`."""
    data = yaml.safe_load((OPS / f"{src}.yaml").read_text("utf-8"))
    data.pop("inplace", None)
    data.pop("atk", None)
    data["name"] = name
    data["op"] = "aclnn" + "".join(w.title() for w in name.split("_"))
    edit(data)
    d = tmp_path / "specs"
    d.mkdir(exist_ok=True)
    path = d / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), "utf-8")
    return path


def _param(data: dict, name: str) -> dict:
    return next(p for p in data["params"] if p["name"] == name)


def _swish_call(beta, product="atlas-a2") -> Call:
    x = np.array([-30.0, -2.5, -0.75, 0.0, 0.3, 1.0, 4.0, 30.0], np.float32)
    return Call("swish", product, {"self": TensorArg.from_array(x, "FLOAT"), "betaOptional": beta,
                                   "out": TensorArg.from_array(np.zeros(8), "FLOAT")})  # fmt: skip


# -- the shipped specs -----------------------------------------------------------------------
@pytest.mark.parametrize("spec", [s for s in REG if any(p.null for p in s.params)],
                         ids=lambda s: s.name)  # fmt: skip
def test_every_nullable_parameter_gets_a_positive_null_case(spec):
    plans = plan_op(spec)
    for p in (q for q in spec.params if q.nullable):
        mine = [c for c in plans if c.id.endswith(f"/null={p.name}")]
        assert {c.product for c in mine} == set(spec.products)
        for plan in mine:
            assert plan.kind == "positive" and plan.expected_status == 0
            assert dict(plan.args)[p.name] is None


def test_a_null_beta_is_beta_one():
    """swish with a null betaOptional: x / (1 + e^-x), worked out here in float64 (every
    value below is far from a float32 rounding tie)."""
    got = engine.evaluate(_swish_call(None), REG)
    assert got.status == 0
    x = [-30.0, -2.5, -0.75, 0.0, 0.3, 1.0, 4.0, 30.0]
    want = np.array([v / (1 + math.exp(-v)) for v in np.float32(x).astype(float)], np.float32)
    np.testing.assert_array_equal(got.outputs["out"], want)
    two = engine.evaluate(_swish_call(ScalarArg("FLOAT", 2.0)), REG)
    assert not np.array_equal(two.outputs["out"], want)  # the null is not "any beta"


def test_checks_read_no_accepted_null_and_value_checks_see_the_default(tmp_path):
    """A null beta passes cast-beta (the library tests `beta != nullptr && !CanCast`); a value
    check on a `default` parameter judges the default (here -1.0, which it rejects)."""
    assert validate(REG.get("swish"), _swish_call(None)).status == 0
    assert validate(REG.get("swish"), _swish_call(ScalarArg("COMPLEX64", 1.0))).status == 161002

    def edit(d):
        _param(d, "betaOptional")["default"] = -1.0
        d["checks"].append({"id": "beta-nonneg", "kind": "value", "violated_if": "betaOptional < 0",
                            "examples": [{"betaOptional": -2.0}], "source": "test"})  # fmt: skip

    spec, problems = lint_file(_spec_copy(tmp_path, "swish", "swish_neg", edit))
    assert problems == [] and spec is not None
    call = _swish_call(None)
    call.op = spec.name
    v = validate(spec, call)
    assert v.status == 161002 and v.check.id == "beta-nonneg"


@pytest.mark.gates
@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda d: _param(d, "betaOptional").pop("default"), "if_null: default needs a documented"),
        (lambda d: d["checks"][0]["params"].append("betaOptional"), "but a not_null check rejects"),
        (lambda d: _param(d, "betaOptional").update(if_null="absent"), "the formula or a value"),
        (lambda d: _param(d, "betaOptional").update(if_null="error"), "needs a not_null check"),
        (lambda d: _param(d, "self").update(if_null="default"), "the number it is filled with"),
    ],
    ids=["default-without-value", "null-checked", "absent-but-read", "error-unchecked", "tensor"],
)
def test_lint_keeps_if_null_consistent(tmp_path, edit, needle):
    path = _spec_copy(tmp_path, "swish", "swish_bad", edit)
    proc = conform("specs", "lint", path)
    assert proc.returncode == 1 and needle in proc.stdout, proc.stdout
    assert f"{path}:" in proc.stdout


def test_an_absent_parameter_takes_no_part(tmp_path):
    """A scalar `if_null: absent` that the formula never reads: its null case is valid and
    computes the formula without it."""

    def edit(d):
        d["params"].insert(2, {"name": "unused", "kind": "scalar", "c_type": "const aclScalar*",
                               "if_null": "absent"})  # fmt: skip

    spec, problems = lint_file(_spec_copy(tmp_path, "swish", "swish_extra", edit))
    assert problems == [] and spec is not None
    (plan,) = [p for p in plan_op(spec, ["atlas-a2"]) if p.id.endswith("null=unused")][:1]
    case = build(spec, plan, 0)
    assert case.call.args["unused"] is None
    assert validate(spec, case.call).status == 0


# -- through the backends, the case format and replay ---------------------------------------
@pytest.mark.gates
def test_null_cases_export_read_back_and_run(tmp_path):
    out = tmp_path / "cases"
    assert_clean(conform("cases", "export", out, "--op", "swish", "-k", "null=", "--product",
                         "atlas-a2"), 0)  # fmt: skip
    dirs = find_cases(out)
    assert len(dirs) == 3  # FLOAT, FLOAT16, BF16
    for d in dirs:
        meta = json.loads((d / "case.json").read_text("utf-8"))
        assert meta["args"]["betaOptional"] == {"kind": "null"}
        assert read_case(d, out).call.args["betaOptional"] is None
    res = tmp_path / "r.jsonl"
    assert_clean(conform("run", "--cases", out, "--backend", "reference", "-q", "--results",
                         res), 0)  # fmt: skip
    assert {r["verdict"] for r in read_jsonl(res)} == {"pass"}


@pytest.mark.gates
def test_jax_computes_a_null_default_as_its_default(tmp_path):
    pytest.importorskip("jax")
    res = tmp_path / "r.jsonl"
    proc = conform(
        "run", "--backend", "jax", "--op", "swish", "-k", "null=", "-q", "--results", res
    )
    assert_clean(proc, 0)
    got = read_jsonl(res)
    assert got and {r["verdict"] for r in got} == {"pass"}


@pytest.mark.gates
def test_torch_passes_a_null_default_as_its_default(tmp_path):
    """A spec folder leaky_relu whose negativeSlope may be null (default 0.01): PyTorch, which
    has no null scalars, is called with 0.01, and agrees with the reference."""
    pytest.importorskip("torch")

    def edit(d):
        _param(d, "negativeSlope")["if_null"] = "default"
        for c in d["checks"]:
            if c["kind"] == "not_null":
                c["params"] = [p for p in c["params"] if p != "negativeSlope"]

    path = _spec_copy(tmp_path, "leaky_relu", "leaky_relu_nullable", edit)
    res = tmp_path / "r.jsonl"
    proc = conform("--specs", path.parent, "run", "--backend", "torch", "--op",
                   "leaky_relu_nullable", "-k", "null=", "-q", "--results", res)  # fmt: skip
    assert_clean(proc, 0)
    got = read_jsonl(res)
    assert got and {r["verdict"] for r in got} == {"pass"}


def test_replay_says_what_a_null_stands_for():
    proc = conform("replay", "swish/atlas-a2/f32/-/null=betaOptional")
    assert "betaOptional: null (if_null: default: stands for the default 1.0)" in proc.stdout
