"""In-place variants (spec section `inplace`, conformance/spec/inplace.py): derived from the
out-of-place spec, their cases hand the backend one tensor that is input and output, and a result
that does not land in that tensor's storage, through its own view, is a failure.

The fixture tests/data/inplace/xelu.yaml is a leaky-ReLU-like op (out = self where self > 0, else
alpha * self) with an in-place variant; the shipped specs with an `inplace` section are checked
by the parametrized tests, so the tests grow with the registry.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, Outcome, TensorArg
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.conformance.run.judging import judge
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import default_registry, load_registry
from aclnn_conformance.reference.backend import ReferenceBackend

from tests.support.runcli import assert_clean, conform, read_jsonl

FIXTURE = Path(__file__).parent / "data" / "inplace" / "xelu.yaml"
SHIPPED = [s for s in default_registry() if s.variants]


def _reg():
    return load_registry([FIXTURE])


# -- the derived spec ------------------------------------------------------------------------


def test_the_variant_has_one_inout_tensor_and_the_out_of_place_rules():
    reg = _reg()
    base, v = reg.get("xelu"), reg.get("inplace_xelu")
    assert v.op == "aclnnInplaceXelu" and v.inplace_of == "xelu"
    assert [(p.name, p.role, p.c_name) for p in v.params] == [
        ("self", "inout", "selfRef"),
        ("alpha", "input", ""),
    ]
    # the output's rules now apply to self; self == self rules (same dtype, same shape) vanish,
    # and so does out's dtype list, no wider than self's, which self has already passed
    assert [c.id for c in v.checks] == ["null-ptr", "dtype-self", "max-rank", "empty"]
    assert v.checks[2].params == ("self",)
    assert v.formula.output == "self" and [b.id for b in v.formula.branches] == ["pos", "neg"]
    assert v.bindings["aten"].data["op"] == "leaky_relu_"
    assert v.bindings["jax"].data["forward"] == base.bindings["jax"].data["forward"]
    assert v.sha256 == base.sha256


@pytest.mark.parametrize("spec", SHIPPED, ids=lambda s: s.name)
def test_every_shipped_variant_writes_into_an_input_of_its_base(spec):
    for v in spec.variants:
        inout = {p.name for p in v.params if p.is_inout}
        base_inout = {p.name for p in spec.params if p.is_inout}  # (RReluWithNoise's noise)
        assert v.inplace_tensor in {p.name for p in spec.tensor_inputs} - base_inout
        assert inout == {v.inplace_tensor} | base_inout
        assert v.formula_of(v.inplace_tensor) is not None
        assert not {p.name for p in spec.outputs if not p.is_inout} & set(v.param_names)
        assert {c.id for c in v.checks} <= {c.id for c in spec.checks}
        assert v.op.startswith("aclnnInplace")


def test_an_inplace_section_naming_no_input_is_a_lint_problem(tmp_path):
    text = FIXTURE.read_text(encoding="utf-8").replace("  input: self\n", "  input: alpha\n")
    bad = tmp_path / "xelu.yaml"
    bad.write_text(text, encoding="utf-8")
    spec, problems = lint_file(bad)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t == "  input: alpha")
    assert spec is None
    assert [str(p) for p in problems] == [
        f"{bad}:{line}: inplace input 'alpha' is not an input tensor parameter"
    ]


def test_a_problem_of_the_variant_is_reported_at_the_inplace_section(tmp_path):
    text = FIXTURE.read_text(encoding="utf-8").replace(
        "  tensor: selfRef\n", "  tensor: selfRef\n  products: [atlas-a4]\n"
    )
    bad = tmp_path / "xelu.yaml"
    bad.write_text(text, encoding="utf-8")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t == "inplace:")
    proc = conform("specs", "lint", bad)
    assert_clean(proc, 1)
    assert proc.stdout.strip() == (
        f"{bad}:{line}: inplace variant inplace_xelu: unknown product 'atlas-a4'"
    )


# -- the cases -------------------------------------------------------------------------------


def _positive_cases(reg, name: str):
    spec = reg.get(name)
    return spec, [build(spec, p, 0) for p in plan_op(spec) if p.kind == "positive"]


def test_cases_hand_the_backend_the_input_values_in_the_inout_tensor():
    spec, cases = _positive_cases(_reg(), "inplace_xelu")
    strided = 0
    for case in cases:
        t = case.call.tensor("self")
        assert set(case.call.args) == {"self", "alpha"}
        if not t.is_empty and t.numel > 1:
            assert np.isfinite(t.view().astype(np.float64)).any()  # values, not a NaN-filled output
        strided += not t.is_contiguous()
    assert strided >= 3  # transposed, gaps, offset views of the in/out tensor


class ContiguousWriter(Backend):
    """Computes the right values but writes them contiguously from the start of the storage,
    ignoring the view's strides and offset."""

    name = "contiguous-writer"
    capabilities = Capabilities()

    def execute(self, call: Call) -> Outcome:
        got = ReferenceBackend(registry=self.registry).execute(call)
        t = call.tensor("self")
        if got.status != 0 or t.is_empty:
            return got
        result = TensorArg(t.dtype, t.shape, t.strides, t.offset, got.outputs["self"]).view()
        storage = t.storage.copy()
        storage[: t.numel] = result.reshape(-1)
        return Outcome(0, {"self": storage})


def test_a_result_written_past_the_views_strides_fails():
    reg = _reg()
    spec, cases = _positive_cases(reg, "inplace_xelu")
    oracle = ReferenceBackend(registry=reg)
    verdicts = {}
    for case in cases:
        if case.call.tensor("self").numel > 1:
            verdicts[case.id] = judge(spec, case, ContiguousWriter(registry=reg), oracle).verdict
    strided = {i: v for i, v in verdicts.items() if "layout=out-" in i}
    plain = {i: v for i, v in verdicts.items() if "layout=" not in i}
    assert strided and set(strided.values()) == {"fail"}
    assert plain and set(plain.values()) == {"pass"}


def _torch_folder(tmp_path: Path, aten_op: str) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir()
    text = FIXTURE.read_text(encoding="utf-8").replace("op: leaky_relu_,", f"op: {aten_op},")
    (folder / "xelu.yaml").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.gates
@pytest.mark.parametrize("aten_op,passes", [("leaky_relu_", True), ("leaky_relu", False)])
def test_torch_in_place_passes_and_a_functional_op_does_not(tmp_path, aten_op, passes):
    """aten::leaky_relu_ writes into its argument: every computed case passes. The functional
    aten::leaky_relu returns a new tensor and leaves the input's storage as it was: each
    case with values to compute fails, because nothing landed in the input."""
    pytest.importorskip("torch", reason="the torch extra is not installed")
    results = tmp_path / "r.jsonl"
    proc = conform("--specs", _torch_folder(tmp_path, aten_op), "run", "--backend", "torch",
                   "--op", "inplace_xelu", "--product", "atlas-a2", "--results", results,
                   "-q")  # fmt: skip
    assert_clean(proc, (0, 1))
    recs = [r for r in read_jsonl(results) if "/neg/" not in r["id"]]
    computed = [r for r in recs if "values=" in r["id"] or "layout=" in r["id"]]
    assert computed
    if passes:
        assert {r["verdict"] for r in computed} == {"pass"}, proc.stdout[-2000:]
    else:
        assert {r["verdict"] for r in computed} == {"fail"}, proc.stdout[-2000:]


@pytest.mark.gates
def test_shipped_variants_pass_on_the_reference(tmp_path):
    if not SHIPPED:
        pytest.skip("no shipped spec has an inplace section")
    results = tmp_path / "r.jsonl"
    ops = [a for s in SHIPPED for v in s.variants for a in ("--op", v.name)]
    proc = conform("run", *ops, "--max-cases", "400", "--results", results, "-q", "-j", "2")
    assert_clean(proc, 0)
    assert {r["verdict"] for r in read_jsonl(results)} == {"pass"}


@pytest.mark.gates
def test_fixture_copy_is_independent(tmp_path):
    """The fixture stays loadable on its own (a spec folder of one file)."""
    shutil.copy(FIXTURE, tmp_path / "xelu.yaml")
    proc = conform("--specs", tmp_path, "specs", "show", "inplace_xelu")
    assert_clean(proc, 0)
    assert "selfRef" in proc.stdout and "inout" in proc.stdout
