"""Self-contained cases: `cases export --golden` writes the oracle's expected values and the
comparison policy beside case.json, and `run --cases DIR --golden stored` judges with them,
evaluating no oracle. The stored values are checked against the formula computed here by hand
(numpy, float64), and a tampered golden must move the verdict with it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.cases.casedir import read_case, sha256_file
from aclnn_conformance.conformance.cases.golden import read_golden

from tests.support.runcli import assert_clean, assert_one_line_error, by_id, conform, read_jsonl

SEL = ["--op", "leaky_relu_backward", "--product", "atlas-a2", "--dtype", "f32"]

pytestmark = pytest.mark.gates  # the CLI in a subprocess: export, then run from stored goldens


def _export(root: Path) -> dict[str, Path]:
    proc = conform("cases", "export", root, "--golden", *SEL, "-k", "values=")
    assert_clean(proc, 0)
    return {p.parent.relative_to(root).as_posix(): p.parent for p in root.rglob("case.json")}


def _positive_with_golden(cases: dict[str, Path]) -> list[Path]:
    out = []
    for d in cases.values():
        meta = json.loads((d / "golden.json").read_text())
        if meta["status"] == 0 and "values" in meta["outputs"].get("out", {}):
            out.append(d)
    return out


def test_stored_golden_is_the_formula_and_the_policy_is_the_f32_one(tmp_path):
    cases = _export(tmp_path / "c")
    dirs = _positive_with_golden(cases)
    assert dirs, "no positive f32 case exported"
    for d in dirs:
        case = read_case(d)
        g = read_golden(d, case.call.args)
        grad = case.call.tensor("gradOutput").view().astype(np.float64)
        x = case.call.tensor("self").view().astype(np.float64)
        slope = float(np.float32(case.call.args["negativeSlope"].value))
        want = np.where(x > 0, grad, grad * slope)  # float64: the exact product of two f32
        got = g.outcome.golden["out"]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        fin = ~np.isnan(want)
        assert np.array_equal(got[fin], want[fin])
        pol = g.policies["out"]
        assert pol["dtype"] == "FLOAT" and pol["rel"] > 0 and not pol["exact"]


def test_run_golden_stored_follows_the_stored_golden_when_it_is_tampered(tmp_path):
    root = tmp_path / "c"
    cases = _export(root)
    victim = _positive_with_golden(cases)[0]
    vid = victim.relative_to(root).as_posix()
    r1 = tmp_path / "a.jsonl"
    assert_clean(conform("run", "--cases", root, "--golden", "stored", "--results", r1, "-q"), 0)
    first = by_id(read_jsonl(r1))
    assert {r["verdict"] for r in first.values()} <= {"pass", "skip"}
    assert first[vid]["verdict"] == "pass" and first[vid]["oracle"] == "stored"
    # move one golden value far away (and keep the checksum honest): the stored golden decides
    path = victim / "golden_out.npy"
    vals = np.load(path)
    i = int(np.flatnonzero(np.isfinite(vals))[0])
    vals[i] = vals[i] * 3 + 7
    np.save(path, vals)
    meta = json.loads((victim / "golden.json").read_text())
    meta["outputs"]["out"]["sha256"] = sha256_file(path)
    (victim / "golden.json").write_text(json.dumps(meta))
    r2 = tmp_path / "b.jsonl"
    proc = conform("run", "--cases", root, "--golden", "stored", "--results", r2, "-q")
    assert_clean(proc, 1)
    second = by_id(read_jsonl(r2))
    assert second[vid]["verdict"] == "fail"
    assert {r["verdict"] for k, r in second.items() if k != vid} <= {"pass", "skip"}
    # the oracle, evaluated, still passes the same case: the stored golden was the judge
    r3 = tmp_path / "c.jsonl"
    assert_clean(conform("run", "--cases", root, "--results", r3, "-q"), 0)
    assert by_id(read_jsonl(r3))[vid]["verdict"] == "pass"


def test_a_stored_policy_judges_instead_of_the_spec(tmp_path):
    root = tmp_path / "c"
    cases = _export(root)
    victim = next(d for d in _positive_with_golden(cases) if d.name == "values=normal")
    vid = victim.relative_to(root).as_posix()
    path = victim / "golden_out.npy"
    vals = np.load(path)
    vals = np.where(np.isfinite(vals), vals * (1 + 1e-3), vals)  # 0.1 %: far above f32's rel
    np.save(path, vals)
    meta = json.loads((victim / "golden.json").read_text())
    meta["outputs"]["out"]["sha256"] = sha256_file(path)
    loose = dict(meta["outputs"]["out"]["policy"], rel=1e-2, mare=1e-2, mere=1e-2)
    meta["outputs"]["out"]["policy"] = loose
    strict = json.loads(json.dumps(meta))
    (victim / "golden.json").write_text(json.dumps(meta))
    res = tmp_path / "r.jsonl"
    assert_clean(conform("run", "--cases", root, "--golden", "stored", "--results", res), 0)
    rec = by_id(read_jsonl(res))[vid]
    assert rec["verdict"] == "pass"
    assert rec["comparisons"]["out"]["policy"]["rel"] == 1e-2
    # the same golden under the spec's own f32 policy fails: the stored policy decided
    strict["outputs"]["out"]["policy"] = json.loads(json.dumps(meta["outputs"]["out"]["policy"]))
    strict["outputs"]["out"]["policy"].update(rel=1e-4, mare=1.220703125e-3, mere=1.220703125e-4)
    (victim / "golden.json").write_text(json.dumps(strict))
    res2 = tmp_path / "r2.jsonl"
    assert_clean(conform("run", "--cases", root, "--golden", "stored", "--results", res2), 1)
    assert by_id(read_jsonl(res2))[vid]["verdict"] == "fail"


def test_golden_stored_needs_stored_goldens_and_case_directories(tmp_path):
    root = tmp_path / "plain"
    assert_clean(conform("cases", "export", root, *SEL, "--max-cases", "3"), 0)
    proc = conform("run", "--cases", root, "--golden", "stored", "--results", tmp_path / "r")
    assert_one_line_error(proc, "--golden stored", "golden.json", "cases export --golden")
    proc = conform("run", "--golden", "stored", *SEL, "--results", tmp_path / "r")
    assert_one_line_error(proc, "--golden stored", "--cases DIR")


def test_one_case_without_its_golden_is_an_error_verdict_the_others_pass(tmp_path):
    root = tmp_path / "c"
    cases = _export(root)
    victim = _positive_with_golden(cases)[0]
    (victim / "golden.json").unlink()
    res = tmp_path / "r.jsonl"
    proc = conform("run", "--cases", root, "--golden", "stored", "--results", res, "-q")
    assert_clean(proc, 1)
    recs = by_id(read_jsonl(res))
    bad = recs[victim.relative_to(root).as_posix()]
    assert bad["verdict"] == "error" and "no stored golden" in bad["reason"]
    assert sum(r["verdict"] == "pass" for r in recs.values()) == len(recs) - 1 - sum(
        r["verdict"] == "skip" for r in recs.values()
    )


def test_golden_stored_evaluates_no_oracle(tmp_path, monkeypatch):
    """In process: the reference's evaluation is made to raise; stored judging never calls it."""
    from aclnn_conformance.conformance.run.session import Session
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.reference import engine

    root = tmp_path / "c"
    cases = _export(root)
    assert cases

    def boom(*a, **k):
        raise AssertionError("the reference was evaluated")

    s = Session.create(
        default_registry(),
        {"cases_dir": root, "golden": "stored", "backend": "torch", "isolate": False},
    )
    monkeypatch.setattr(engine, "evaluate", boom)
    monkeypatch.setattr("aclnn_conformance.reference.backend.evaluate", boom)
    recs = []
    s.run(s.items(), lambda r: recs.append(r) or True, "v")
    assert recs and {r.verdict for r in recs} <= {"pass", "skip"}, [r.reason for r in recs]
    assert any(r.verdict == "pass" for r in recs)
