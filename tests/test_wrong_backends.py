"""Deliberately wrong backends (tests/support/wrong_backends.py) are caught, each for its reason.

Once through `judge()` directly, once through `aclnn-conform run --backend NAME`, where the
backends are a plug-in discovered through the entry-point group in a subprocess.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.run.judging import judge
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference.backend import ReferenceBackend
from aclnn_conformance.reference.engine import evaluate

from tests.support.runcli import assert_clean, by_id, conform, read_jsonl
from tests.support.wrong_backends import (
    ErrorWriterBackend,
    GapWriterBackend,
    InputMutatorBackend,
    RaisingBackend,
    TwoUlpBackend,
    WrongNullStatusBackend,
    pick_element,
)
from tests.support.wrong_plugin import install_wrong_backends

REG = default_registry()
ORACLE = ReferenceBackend()


def _case(case_id: str, seed: int = 0):
    op, product = case_id.split("/")[:2]
    spec = REG.get(op)
    plan = next(p for p in plan_op(spec, [product]) if p.id == case_id)
    return spec, build(spec, plan, seed)


def _perturbed_index(message: str) -> tuple[int, ...]:
    m = re.fullmatch(r"perturbed \[([\d, ]*)\] by 2 ulp", message)
    assert m, message
    return tuple(int(x) for x in m.group(1).split(",") if x.strip())


# -- (a) two ulp ----------------------------------------------------------------------------------


def test_two_ulp_in_fp16_fails_dual_thousandth_with_the_right_stats_and_worst_element():
    spec, case = _case("leaky_relu_backward/atlas-a2/f16/selfIsResult=0/values=normal")
    judged = judge(spec, case, TwoUlpBackend(), ORACLE)
    rec = judged.record
    assert judged.verdict == "fail"
    assert "mismatch ratio" in judged.reason and "max_ratio 0.001" in judged.reason
    assert rec.clauses == [f"leaky_relu_backward/{c}" for c in case.clauses]
    assert {"leaky_relu_backward/positive", "leaky_relu_backward/nonpositive"} & set(rec.clauses)
    assert rec.stats["max_ulp"] == 2
    assert rec.stats["mismatches"] == 1
    index = _perturbed_index(judged.outcome.message)
    worst = rec.worst[0]
    assert tuple(worst["index"]) == index
    # recompute the perturbed value independently: two steps up from the expected fp16 value
    expected = np.asarray(evaluate(case.call).outputs["out"], np.float16)
    flat = int(np.ravel_multi_index(index, case.call.args["out"].shape))
    e = expected[flat]
    two_up = np.nextafter(np.nextafter(e, np.float16(np.inf)), np.float16(np.inf))
    # `expected` is the exact (float64) value the oracle rounded to e
    assert float(np.float16(worst["expected"])) == float(e) and worst["actual"] == float(two_up)
    assert worst["ulp"] == 2
    assert worst["rel_err"] > 1e-3
    # the inputs of that element are listed with it
    assert set(worst["inputs"]) == {"gradOutput", "self"}


def test_two_ulp_in_float32_passes_the_default_policy_but_not_a_one_ulp_bound():
    spec, case = _case("leaky_relu_backward/atlas-a2/f32/selfIsResult=0/values=normal")
    judged = judge(spec, case, TwoUlpBackend(), ORACLE)
    assert judged.verdict == "pass", judged.reason  # ~2.4e-7 relative, dual-ten-thousandth 1e-4
    assert judged.record.stats["max_ulp"] == 2
    index = _perturbed_index(judged.outcome.message)
    assert tuple(judged.record.worst[0]["index"]) == index

    strict = dataclasses.replace(spec, tolerance={"FLOAT": {"max_ulp": 1}})
    judged = judge(strict, case, TwoUlpBackend(), ORACLE)
    assert judged.verdict == "fail"
    assert "max ulp 2 > max_ulp 1" in judged.reason
    assert tuple(judged.record.worst[0]["index"]) == index
    # two ulp is within a bound of two
    loose = dataclasses.replace(spec, tolerance={"FLOAT": {"max_ulp": 2}})
    assert judge(loose, case, TwoUlpBackend(), ORACLE).verdict == "pass"


def test_the_perturbed_element_is_what_the_backend_says():
    spec, case = _case("elu_backward/atlas-training/f16/isResult=0/values=normal")
    out = evaluate(case.call)
    index = pick_element(case.call, out.outputs["gradInput"])
    judged = judge(spec, case, TwoUlpBackend(), ORACLE)
    assert judged.verdict == "fail"
    assert tuple(judged.record.worst[0]["index"]) == index


# -- (b) wrong status -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case_id",
    ["hardshrink_backward/atlas-a2/neg/null-ptr/self", "elu_backward/atlas-a2/neg/null-ptr/alpha"],
)
def test_161002_for_a_null_pointer_fails_naming_both_codes(case_id):
    spec, case = _case(case_id)
    judged = judge(spec, case, WrongNullStatusBackend(), ORACLE)
    assert judged.verdict == "fail"
    assert "161002" in judged.reason and "161001" in judged.reason
    assert f"{spec.name}/null-ptr" in judged.record.clauses
    assert judged.record.expected_status == 161001
    assert judged.record.actual_status == 161002
    assert judged.record.status_match is False
    # the other statuses it returns are right
    prefix = case_id.split("/neg/")[0] + "/neg/"
    plan = next(p for p in plan_op(spec, [case.product]) if p.id.startswith(prefix)
                and "null-ptr" not in p.id)  # fmt: skip
    other = build(spec, plan, 0)
    assert other.expected_status == 161002
    assert judge(spec, other, WrongNullStatusBackend(), ORACLE).verdict == "pass"


# -- (c) writes into the gaps ---------------------------------------------------------------------


def test_writing_into_a_gap_of_the_output_storage_fails():
    spec, case = _case("hardshrink_backward/atlas-a2/f16/-/layout=out-gaps")
    judged = judge(spec, case, GapWriterBackend(), ORACLE)
    assert judged.verdict == "fail"
    assert "outside its view" in judged.reason and "gradInput" in judged.reason
    # the same backend is right where the output has no gaps
    spec, case = _case("hardshrink_backward/atlas-a2/f16/-/layout=out-transposed")
    assert judge(spec, case, GapWriterBackend(), ORACLE).verdict == "pass"


# -- (d) modifies an input ------------------------------------------------------------------------


def test_modifying_an_input_storage_fails():
    spec, case = _case("softplus_backward/atlas-training/f32/-/values=wide")
    before = case.call.args["gradOutput"].storage.tobytes()
    judged = judge(spec, case, InputMutatorBackend(), ORACLE)
    assert judged.verdict == "fail"
    assert re.search(r"input gradOutput was modified", judged.reason), judged.reason
    # judge hands the backend a copy: the case itself is untouched
    assert case.call.args["gradOutput"].storage.tobytes() == before


# -- (e) writes on an error status ----------------------------------------------------------------


def test_writing_the_output_on_an_error_status_fails():
    spec, case = _case("gelu_backward_v2/atlas-a2/neg/approximate-value/approximate:test")
    judged = judge(spec, case, ErrorWriterBackend(), ORACLE)
    assert judged.verdict == "fail"
    assert "output storage written" in judged.reason
    assert judged.record.status_match is True  # the status itself was right
    # a successful call is left alone by this backend
    spec, ok = _case("gelu_backward_v2/atlas-a2/f32/approximate=none/values=normal")
    assert judge(spec, ok, ErrorWriterBackend(), ORACLE).verdict == "pass"


# -- (f) raises -----------------------------------------------------------------------------------


def test_a_raising_backend_is_an_error_verdict():
    spec, case = _case("hardshrink_backward/atlas-training/f32/-/values=normal")
    judged = judge(spec, case, RaisingBackend(), ORACLE)
    assert judged.verdict == "error"
    assert "RuntimeError" in judged.reason and "driver exploded" in judged.reason
    assert judged.outcome is None


# -- the same through the command line ------------------------------------------------------------


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    return install_wrong_backends(tmp_path_factory.mktemp("plugin"))


def _run(env, tmp_path, backend, *select):
    results = tmp_path / f"{backend}.jsonl"
    proc = conform("run", "--backend", backend, "--results", results, "-q", *select, env=env)
    assert_clean(proc, 1)
    return by_id(read_jsonl(results))


@pytest.mark.gates
def test_cli_two_ulp(plugin_env, tmp_path):
    cid = "leaky_relu_backward/atlas-a2/f16/selfIsResult=0/values=normal"
    recs = _run(plugin_env, tmp_path, "wrong-ulp", "--op", "leaky_relu_backward",
                "--product", "atlas-a2", "-k", "/f16/selfIsResult=0/values=normal")  # fmt: skip
    assert set(recs) == {cid}
    rec = recs[cid]
    _, case = _case(cid)
    assert rec["verdict"] == "fail" and rec["backend"] == "wrong-ulp"
    assert rec["backend_version"] == "wrong-ulp 0.0 (test double)"
    assert rec["clauses"] == [f"leaky_relu_backward/{c}" for c in case.clauses]
    assert rec["stats"]["max_ulp"] == 2
    assert tuple(rec["worst"][0]["index"]) == _perturbed_index(rec["message"])
    assert rec["replay"].endswith("--seed 0 --backend wrong-ulp")


@pytest.mark.gates
def test_cli_wrong_null_status(plugin_env, tmp_path):
    recs = _run(plugin_env, tmp_path, "wrong-status", "--op", "hardshrink_backward",
                "--product", "atlas-a2", "-k", "/neg/null-ptr/")  # fmt: skip
    assert len(recs) == 4
    for rec in recs.values():
        assert rec["verdict"] == "fail"
        assert "161002" in rec["reason"] and "161001" in rec["reason"]
        assert rec["clauses"] == ["hardshrink_backward/null-ptr"]


@pytest.mark.gates
def test_cli_gap_writer(plugin_env, tmp_path):
    recs = _run(plugin_env, tmp_path, "wrong-gaps", "--op", "leaky_relu_backward",
                "--product", "atlas-training", "-k", "/layout=out-")  # fmt: skip
    assert recs
    for cid, rec in recs.items():
        if cid.endswith(("out-gaps", "out-offset")):  # both have storage outside the view
            assert rec["verdict"] == "fail" and "outside its view" in rec["reason"], cid
        else:
            assert rec["verdict"] == "pass", cid


@pytest.mark.gates
def test_cli_input_mutator(plugin_env, tmp_path):
    recs = _run(plugin_env, tmp_path, "wrong-input", "--op", "gelu_backward_v2",
                "--product", "atlas-training", "-k", "/values=normal")  # fmt: skip
    assert len(recs) == 4  # f16 and f32, approximate none and tanh
    for rec in recs.values():
        assert rec["verdict"] == "fail"
        assert "input gradOutput was modified" in rec["reason"]


@pytest.mark.gates
def test_cli_error_writer(plugin_env, tmp_path):
    recs = _run(plugin_env, tmp_path, "wrong-error-write", "--op", "softplus_backward",
                "--product", "atlas-training", "-k", "/neg/null-ptr/")  # fmt: skip
    for cid, rec in recs.items():
        if cid.endswith("/gradInput"):  # no output storage to write into
            assert rec["verdict"] == "pass", cid
        else:
            assert rec["verdict"] == "fail", cid
            assert "output storage written" in rec["reason"]


@pytest.mark.gates
def test_cli_raising_backend_costs_one_case_each_and_the_run_goes_on(plugin_env, tmp_path):
    recs = _run(plugin_env, tmp_path, "wrong-raise", "--op", "hardshrink_backward",
                "--op", "leaky_relu_backward", "--product", "atlas-training",
                "-k", "/values=")  # fmt: skip
    hard = [r for r in recs.values() if r["op"] == "hardshrink_backward"]
    leaky = [r for r in recs.values() if r["op"] == "leaky_relu_backward"]
    assert len(hard) == 10 and len(leaky) == 30
    assert {r["verdict"] for r in hard} == {"error"}
    assert all("driver exploded" in r["reason"] for r in hard)
    assert {r["verdict"] for r in leaky} == {"pass"}
