"""Several outputs per spec: each computed output by its own formula and judged by its own
policy (integer outputs exactly), an `unused` output that must keep its storage, and the torch
binding dropping an ATen result the API has no output for.

The fixture tests/data/multi/sign_abs.yaml computes magnitude = |self| (FLOAT, FLOAT16; its own
tolerance rel 0.5 for FLOAT) and sgn = the sign of self (INT32); the expected values below are
written by hand.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, Outcome, TensorArg
from aclnn_conformance.conformance.cases.build import Case
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.conformance.run.judging import judge
from aclnn_conformance.conformance.spec.bindings import BindingError
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import default_registry, load_registry
from aclnn_conformance.reference.backend import ReferenceBackend
from aclnn_conformance.reference.engine import evaluate

from tests.support.runcli import REPO, assert_clean, conform, read_jsonl

FIXTURE = REPO / "tests" / "data" / "multi"
REG = load_registry(dirs=[FIXTURE])
ORACLE = ReferenceBackend(REG)
X = [-2.5, 0.0, 3.0, math.nan, -0.0, 1e-3, -7.0]
MAGNITUDE = [2.5, 0.0, 3.0, math.nan, 0.0, 1e-3, 7.0]
SGN = [-1, 0, 1, 0, 0, 1, -1]


def _call(dtype: str = "FLOAT") -> Call:
    n = len(X)
    return Call(
        "sign_abs",
        "atlas-a2",
        {
            "self": TensorArg.from_array(np.array(X), dtype),
            "magnitude": TensorArg.empty_like_shape((n,), dtype, fill=np.nan),
            "sgn": TensorArg.empty_like_shape((n,), "INT32"),
        },
    )


def _case(call: Call, spec_name: str = "sign_abs") -> Case:
    return Case("hand/multi/0", spec_name, call.product, "positive", call, (), 0, 0)


class _Spoiled(Backend):
    """The reference, then `spoil(name, elements)` changes output `name`'s elements (the calls
    here are 1-D and contiguous: `elements` is the view's slice of the storage)."""

    capabilities = Capabilities(status="exact")
    name = "spoiled"

    def __init__(self, registry, spoil):
        super().__init__(registry)
        self.spoil = spoil

    def execute(self, call: Call) -> Outcome:
        out = evaluate(call, self.registry)
        for name, storage in out.outputs.items():
            t = call.tensor(name)
            self.spoil(name, storage[t.offset : t.offset + t.numel])
        return out


def test_the_fixture_has_one_formula_per_output_and_clause_ids_across_them():
    spec = REG.get("sign_abs")
    assert [f.output for f in spec.formulas] == ["magnitude", "sgn"]
    assert spec.formula is spec.formulas[0]
    assert spec.multi and spec.for_output("sgn").formula.output == "sgn"
    assert spec.for_output("sgn") is spec.for_output("sgn")  # kernel caches key on identity
    ids = spec.clause_ids()
    assert {"magnitude", "negative", "positive", "zero-or-nan"} <= set(ids)
    assert spec.tolerance_of("magnitude")["FLOAT"]["rel"] == 0.5
    assert spec.tolerance_of("sgn") == {}


@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16"])
def test_the_reference_computes_every_output_by_its_formula(dtype):
    got = evaluate(_call(dtype), REG)
    assert got.status == 0
    mag = got.outputs["magnitude"].astype(np.float64)
    want = np.array(MAGNITUDE).astype(dt.get(dtype).np).astype(np.float64)
    assert np.array_equal(mag, want, equal_nan=True)
    assert got.outputs["sgn"].dtype == np.int32
    assert got.outputs["sgn"].tolist() == SGN


def test_the_oracle_streams_a_float_output_and_gives_an_integer_one_whole():
    want = ORACLE.expect(_call())
    assert set(want.golden) == {"magnitude"} and want.outputs["sgn"].tolist() == SGN


def test_each_output_is_judged_by_its_own_policy_and_a_failure_names_it():
    spec = REG.get("sign_abs")
    ok = judge(spec, _case(_call()), ORACLE, ORACLE)
    assert ok.verdict == "pass", ok.reason
    pol = ok.record.comparisons
    assert pol["magnitude"]["policy"]["rel"] == 0.5 and pol["sgn"]["policy"]["rel"] == 0.0

    def sgn_off_by_one(name, view):
        if name == "sgn":
            view[0] += 1  # -1 -> 0: the integer output is compared exactly

    bad = judge(spec, _case(_call()), _Spoiled(REG, sgn_off_by_one), ORACLE)
    assert bad.verdict == "fail" and bad.reason.startswith("sgn:"), bad.reason
    assert "magnitude" not in bad.reason

    def magnitude_40pc(name, view):
        if name == "magnitude":
            view[0] *= 1.4  # within this output's own rel 0.5 (the FLOAT default is 1e-4)

    loose = judge(spec, _case(_call()), _Spoiled(REG, magnitude_40pc), ORACLE)
    assert loose.verdict == "pass", loose.reason

    def magnitude_60pc(name, view):
        if name == "magnitude":
            view[0] *= 1.6

    far = judge(spec, _case(_call()), _Spoiled(REG, magnitude_60pc), ORACLE)
    assert far.verdict == "fail" and far.reason.startswith("magnitude:"), far.reason


def test_generated_cases_of_a_two_output_spec_pass_on_the_reference(tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("--specs", str(FIXTURE), "run", "--op", "sign_abs", "-q",
                   "--results", str(results))  # fmt: skip
    assert_clean(proc, 0)
    recs = read_jsonl(results)
    assert recs and all(r["verdict"] == "pass" for r in recs)
    positive = [r for r in recs if r["kind"] == "positive" and r.get("comparisons")]
    assert positive and all(set(r["comparisons"]) == {"magnitude", "sgn"} for r in positive)
    # the branches of the second formula are credited to the cases that take them
    taken = {c for r in positive for c in r["clauses"]}
    assert {"sign_abs/negative", "sign_abs/positive", "sign_abs/magnitude"} <= taken


def test_exported_cases_of_a_two_output_spec_replay_to_the_same_verdicts(tmp_path):
    out = tmp_path / "cases"
    proc = conform("--specs", str(FIXTURE), "cases", "export", "--op", "sign_abs", str(out))
    assert_clean(proc, 0)
    results = tmp_path / "r.jsonl"
    proc = conform("--specs", str(FIXTURE), "run", "--cases", str(out), "-q",
                   "--results", str(results))  # fmt: skip
    assert_clean(proc, 0)
    recs = read_jsonl(results)
    assert recs and all(r["verdict"] == "pass" for r in recs)


# -- an unused output ----------------------------------------------------------------------------


def _log_sigmoid_forward_call(buffer_dtype: str = "FLOAT") -> Call:
    x = np.array([-3.0, 0.0, 2.0, 40.0])
    return Call(
        "log_sigmoid_forward",
        "atlas-a2",
        {
            "self": TensorArg.from_array(x, "FLOAT"),
            "out": TensorArg.empty_like_shape((4,), "FLOAT", fill=np.nan),
            "buffer": TensorArg.from_array(np.array([7.0, 7.0, 7.0, 7.0]), buffer_dtype),
        },
    )


def test_an_unused_output_keeps_its_storage_and_writing_it_fails():
    reg = default_registry()
    spec = reg.get("log_sigmoid_forward")
    oracle = ReferenceBackend(reg)
    call = _log_sigmoid_forward_call()
    got = evaluate(call, reg)
    assert got.outputs["buffer"].tolist() == [7.0] * 4
    want = [min(v, 0.0) - math.log1p(math.exp(-abs(v))) for v in (-3.0, 0.0, 2.0, 40.0)]
    assert np.allclose(got.outputs["out"], want, rtol=1e-6)
    assert judge(spec, _case(call, spec.name), oracle, oracle).verdict == "pass"

    def write_buffer(name, view):
        if name == "buffer":
            view[1] = 0.5

    bad = judge(spec, _case(call, spec.name), _Spoiled(reg, write_buffer), oracle)
    assert bad.verdict == "fail" and bad.reason.startswith("buffer:") and "unused" in bad.reason


def test_torch_drops_the_aten_buffer_and_refuses_to_map_it_to_an_unused_output():
    torch = pytest.importorskip("torch")
    from aclnn_conformance.conformance.run.backends.torch_backend import (
        TorchBackend,
        parse_aten_binding,
    )

    reg = default_registry()
    spec = reg.get("log_sigmoid_forward")
    assert parse_aten_binding(spec).returns == ("out", "_")
    backend = TorchBackend(registry=reg)
    call = _log_sigmoid_forward_call()
    got = backend.execute(call)
    assert got.outputs["buffer"].tolist() == [7.0] * 4  # ATen's buffer was not stored
    x = torch.tensor([-3.0, 0.0, 2.0, 40.0])
    assert np.array_equal(got.outputs["out"], torch.nn.functional.logsigmoid(x).numpy())
    spec.bindings["aten"].data["returns"] = ["out", "buffer"]
    try:
        with pytest.raises(BindingError, match="buffer is unused"):
            parse_aten_binding(spec)
    finally:
        spec.bindings["aten"].data["returns"] = ["out", "_"]


# -- lint ----------------------------------------------------------------------------------------

BASE = (FIXTURE / "sign_abs.yaml").read_text(encoding="utf-8")


def _lint(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    spec, problems = lint_file(path)
    return [f"{p.line}: {p.message}" for p in problems]


def test_lint_a_clause_id_twice_across_formulas(tmp_path):
    text = BASE.replace("{id: positive,", "{id: magnitude,")
    probs = _lint(tmp_path, text)
    line = next(
        i for i, ln in enumerate(text.splitlines(), 1) if "{id: magnitude, when: self" in ln
    )
    assert probs == [f"{line}: duplicate clause id 'magnitude'"]


def test_lint_an_output_without_formula(tmp_path):
    text = BASE[: BASE.index("  - output: sgn")] + BASE[BASE.index("\ntolerance:") + 1 :]
    probs = _lint(tmp_path, text)
    assert len(probs) == 1 and "output 'sgn' has no formula" in probs[0]
    assert probs[0].startswith(f"{_line(text, '{name: sgn,')}:")


def test_lint_two_formulas_for_one_output_and_an_unused_output_with_a_formula(tmp_path):
    probs = _lint(tmp_path, BASE.replace("  - output: sgn", "  - output: magnitude"))
    assert "already has a formula" in probs[0] and "'sgn' has no formula" in probs[1]
    text = BASE.replace('role: output, c_type: "aclTensor*"}\n  - {name: sgn',
                        'role: output, c_type: "aclTensor*", unused: true}\n  - {name: sgn')  # fmt: skip
    probs = _lint(tmp_path, text)
    assert len(probs) == 1 and "magnitude is unused but a formula computes it" in probs[0]


def test_lint_formula_and_formulas_together(tmp_path):
    text = BASE + textwrap.dedent("""\
        formula:
          output: magnitude
          branches:
            - {id: again, when: otherwise, value: self, source: fixture}
        """)
    probs = _lint(tmp_path, text)
    assert len(probs) == 1 and "formula" in probs[0]


def test_lint_a_bad_field_in_an_output_tolerance(tmp_path):
    text = BASE.replace("FLOAT: {rel: 0.5,", "FLOAT: {rel: -1,")
    probs = _lint(tmp_path, text)
    line = _line(text, "FLOAT: {rel: -1,")
    assert len(probs) == 1 and probs[0].startswith(f"{line}:"), probs


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


# -- random outputs: relations instead of values -------------------------------------------------

LOWER, UPPER = 0.125, 0.25


def _rand_call(training: bool = True) -> Call:
    from aclnn_conformance.conformance.acl.call import ScalarArg

    x = np.array([-3.0, -0.5, 0.0, 2.0, -7.25, 1.5, -1.0, 4.0])
    return Call("rand_slope", "atlas-a2", {
        "self": TensorArg.from_array(x, "FLOAT"),
        "lower": ScalarArg("FLOAT", LOWER), "upper": ScalarArg("FLOAT", UPPER),
        "training": training,
        "noise": TensorArg.empty_like_shape((8,), "FLOAT", fill=np.nan),
        "out": TensorArg.empty_like_shape((8,), "FLOAT", fill=np.nan)})  # fmt: skip


class _Drawing(Backend):
    """A backend that draws each slope from U(lower, upper) itself (seeded), then `spoil`s."""

    capabilities = Capabilities(status="exact")
    name = "drawing"

    def __init__(self, registry, spoil=None):
        super().__init__(registry)
        self.spoil = spoil

    def execute(self, call: Call) -> Outcome:
        x = call.tensor("self").view().astype(np.float64)
        noise = np.where(x > 0, 1.0, np.random.default_rng(7).uniform(LOWER, UPPER, x.shape))
        noise = noise.astype(np.float32)
        out = (x.astype(np.float32) * noise).astype(np.float32)
        if self.spoil:
            noise, out = self.spoil(noise.copy(), out.copy())
        return Outcome(0, {"noise": noise, "out": out}, "")


def test_a_random_output_is_judged_by_its_relations_not_the_oracles_draw():
    spec = REG.get("rand_slope")
    call = _rand_call()
    # the reference's own draw is the mean slope; the backend's draw differs and still passes
    assert evaluate(call, REG).outputs["noise"].tolist()[0] == (LOWER + UPPER) / 2
    ok = judge(spec, _case(call, "rand_slope"), _Drawing(REG), ORACLE)
    assert ok.verdict == "pass", ok.reason
    assert ok.record.comparisons["noise"]["relations"] == ["noise-in-range"]

    def noise_out_of_range(noise, out):
        noise[0] = UPPER * 1.5  # self[0] < 0: a slope above upper
        return noise, out

    bad = judge(spec, _case(call, "rand_slope"), _Drawing(REG, noise_out_of_range), ORACLE)
    assert bad.verdict == "fail" and bad.reason.startswith(
        "noise: relation rand_slope/noise-in-range"
    )
    assert "fails at 1 of 8 elements, first at [0]" in bad.reason

    def slope_on_positive(noise, out):
        noise[3] = 0.2  # self[3] = 2 > 0 must keep noise 1
        return noise, out

    bad = judge(spec, _case(call, "rand_slope"), _Drawing(REG, slope_on_positive), ORACLE)
    assert bad.verdict == "fail" and "first at [3]" in bad.reason

    def out_not_self_times_noise(noise, out):
        out[1] = out[1] * 1.01
        return noise, out

    bad = judge(spec, _case(call, "rand_slope"), _Drawing(REG, out_not_self_times_noise), ORACLE)
    assert bad.verdict == "fail"
    assert bad.reason.startswith("out: relation rand_slope/out-is-self-times-noise")


def test_outside_random_when_the_values_are_compared():
    spec = REG.get("rand_slope")
    call = _rand_call(training=False)
    assert judge(spec, _case(call, "rand_slope"), ORACLE, ORACLE).verdict == "pass"
    drawn = judge(spec, _case(call, "rand_slope"), _Drawing(REG), ORACLE)
    assert drawn.verdict == "fail" and "relation" not in drawn.reason


def test_generated_cases_credit_the_relations_in_training_only(tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("--specs", str(FIXTURE), "run", "--op", "rand_slope", "-q",
                   "--results", str(results))  # fmt: skip
    assert_clean(proc, 0)
    recs = [r for r in read_jsonl(results) if r["kind"] == "positive" and r.get("comparisons")]
    trained = [r for r in recs if "training=1" in r["id"]]
    assert trained and all("rand_slope/noise-in-range" in r["clauses"] for r in trained)
    assert all(
        "rand_slope/noise-in-range" not in r["clauses"] for r in recs if "training=0" in r["id"]
    )
