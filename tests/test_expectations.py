"""Expectations: xfail hides a known failure, XPASS fails under --strict, an expired entry warns,
skip entries are not run, and --update-expectations round-trips."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from conformance import expectations as ex
from tests.support.plugins import install_plugin

NOF16 = """
from conformance.backend import Backend, Capabilities
from conformance.call import Outcome, TensorArg
from reference.engine import evaluate

class NoF16(Backend):
    name = "nof16"
    capabilities = Capabilities(status="exact")

    def version(self):
        return "nof16 1.2 (test fixture)"

    def execute(self, call):
        if any(isinstance(a, TensorArg) and a.dtype == "FLOAT16" for a in call.args.values()):
            outs = {k: a.storage.copy() for k, a in call.args.items()
                    if isinstance(a, TensorArg) and k in ("gradInput",)}
            return Outcome(161002, outs, "FLOAT16 not supported here")
        return evaluate(call)
"""
FILTER = ["--op", "elu_backward", "--product", "atlas-training", "-k", "/values="]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return install_plugin(
        tmp_path_factory.mktemp("plug"), "nof16_backend", NOF16, {"nof16": "nof16_backend:NoF16"}
    )


def run(env, tmp_path, *extra):
    results = tmp_path / "r.jsonl"
    p = subprocess.run([sys.executable, "-m", "cli.main", "run", "--backend", "nof16", *FILTER,
                        "--results", str(results), "-q", *extra],
                       env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert "Traceback" not in p.stderr + p.stdout
    recs = [json.loads(x) for x in results.read_text().splitlines()]
    return p, {r["id"]: r for r in recs}


def write(path, entries, **top):
    path.write_text(yaml.safe_dump({"format": 1, **top, "entries": entries}), encoding="utf-8")
    return path


def test_without_expectations_the_f16_cases_fail(env, tmp_path):
    p, recs = run(env, tmp_path)
    f16 = [r for i, r in recs.items() if "/f16/" in i]
    assert f16 and all(r["verdict"] == "fail" for r in f16)
    assert all(r["verdict"] == "pass" for i, r in recs.items() if "/f16/" not in i)
    assert p.returncode == 1


def test_xfail_hides_the_failure_and_xpass_fails_only_under_strict(env, tmp_path):
    f = write(tmp_path / "e.yaml", [
        {"match": "elu_backward/*/f16/*", "kind": "xfail", "reason": "no fp16 kernels"},
        {"match": "elu_backward/atlas-training/f32/isResult=0/values=normal", "kind": "xfail",
         "reason": "thought broken"},
    ], backend="nof16")  # fmt: skip
    p, recs = run(env, tmp_path, "--expectations", str(f))
    f16 = [r for i, r in recs.items() if "/f16/" in i]
    assert f16 and all(r["verdict"] == "xfail" for r in f16)
    assert all(r["expectation"]["reason"] == "no fp16 kernels" for r in f16)
    assert recs["elu_backward/atlas-training/f32/isResult=0/values=normal"]["verdict"] == "xpass"
    assert p.returncode == 0 and "unexpected pass" in p.stderr
    p, _ = run(env, tmp_path, "--expectations", str(f), "--strict")
    assert p.returncode == 1


def test_entries_for_another_backend_or_version_do_not_apply(env, tmp_path):
    f = write(tmp_path / "e.yaml", [
        {"match": "elu_backward/*/f16/*", "kind": "xfail", "reason": "torch only", "backend": "torch"},
        {"match": "elu_backward/*/f16/*", "kind": "xfail", "reason": "old", "version": "nof16 0.*"},
    ])  # fmt: skip
    p, recs = run(env, tmp_path, "--expectations", str(f))
    assert p.returncode == 1
    assert all(r["verdict"] == "fail" for i, r in recs.items() if "/f16/" in i)


def test_an_expired_entry_warns_and_no_longer_hides(env, tmp_path):
    f = write(tmp_path / "e.yaml", [
        {"match": "elu_backward/*/f16/*", "kind": "xfail", "reason": "r", "expires": "2020-01-01"},
    ], backend="nof16")  # fmt: skip
    p, recs = run(env, tmp_path, "--expectations", str(f))
    assert "expired on 2020-01-01" in p.stderr and "e.yaml:" in p.stderr
    assert p.returncode == 1
    assert all(r["verdict"] == "fail" for i, r in recs.items() if "/f16/" in i)


def test_skip_entries_are_not_run(env, tmp_path):
    f = write(tmp_path / "e.yaml", [{"match": "elu_backward/*/f16/*", "kind": "skip", "reason": "later"}],
              backend="nof16")  # fmt: skip
    p, recs = run(env, tmp_path, "--expectations", str(f))
    f16 = [r for i, r in recs.items() if "/f16/" in i]
    assert f16 and all(r["verdict"] == "skip" and "durations" not in r for r in f16)
    assert p.returncode == 0


def test_update_expectations_round_trips(env, tmp_path):
    f = write(tmp_path / "e.yaml", [
        {"match": "elu_backward/atlas-training/f16/isResult=1/*", "kind": "xfail", "reason": "kept reason"},
        {"match": "elu_backward/atlas-training/f32/*", "kind": "xfail", "reason": "fixed since"},
    ], backend="nof16")  # fmt: skip
    p, recs = run(env, tmp_path, "--expectations", str(f), "--update-expectations")
    assert p.returncode == 1  # this run still had unexpected failures (isResult=0 fp16 cases)
    doc = yaml.safe_load(f.read_text())
    matches = [e["match"] for e in doc["entries"]]
    assert doc["entries"][0] == {"match": "elu_backward/atlas-training/f16/isResult=1/*",
                                 "kind": "xfail", "reason": "kept reason"}  # fmt: skip
    assert "elu_backward/atlas-training/f32/*" not in matches  # nothing fails there any more
    failing_now = sorted(i for i, r in recs.items() if r["verdict"] == "fail")
    assert sorted(matches[1:]) == failing_now  # each new failure got an exact entry
    p2, recs2 = run(env, tmp_path, "--expectations", str(f))
    assert p2.returncode == 0
    assert {r["verdict"] for r in recs2.values()} <= {"pass", "xfail"}
    # a second update changes nothing
    before = f.read_text()
    run(env, tmp_path, "--expectations", str(f), "--update-expectations")
    assert yaml.safe_load(f.read_text()) == yaml.safe_load(before)


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "format: 1\nentries:\n  - match: a\n    kind: maybe\n    reason: r\n",
            "kind must be one of",
        ),
        ("format: 1\nentries:\n  - match: a\n    kind: xfail\n", "`reason` is required"),
        (
            "format: 1\nentries:\n  - {match: a, kind: xfail, reason: r, expires: soon}\n",
            "expires must be a date",
        ),
        (
            "format: 1\nentries:\n  - {match: a, kind: xfail, reason: r, colour: red}\n",
            "unknown field",
        ),
        ("entries: []\n", "not an expectations file"),
        ("format: 1\nentries: [\n", "invalid YAML"),
        (
            "format: 1\nentries:\n  - {message: m, kind: skip, reason: r}\n",
            "cannot match a message",
        ),
        ("format: 1\nentries:\n  - {match: a, kind: deviation, reason: r}\n", "needs `deviation:"),
        ("format: 1\nentries:\n  - {match: a, message: '', kind: xfail, reason: r}\n", "`message`"),
    ],
)
def test_malformed_files_are_clear_errors(tmp_path, body, message):
    f = tmp_path / "bad.yaml"
    f.write_text(body, encoding="utf-8")
    with pytest.raises(ex.ExpectationsError, match=message):
        ex.load(f)
    p = subprocess.run([sys.executable, "-m", "cli.main", "run", "--expectations", str(f), "--max-cases", "1",
                        "--results", str(tmp_path / "r.jsonl"), "-q"], capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 2 and "Traceback" not in p.stderr and "bad.yaml" in p.stderr


def test_update_expectations_keeps_comments_and_the_text_of_kept_entries(env, tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text(
        "# Known failures of nof16 -- written by hand\n"
        "format: 1\n"
        "backend: nof16\n"
        "entries:\n"
        "  # fp16 is unsupported on this device (ticket 123)\n"
        "  - match: 'elu_backward/atlas-training/f16/isResult=1/*'\n"
        "    kind: xfail\n"
        "    reason: kept reason   # inline note\n"
        "  # this one was fixed in 1.2\n"
        "  - match: 'elu_backward/atlas-training/f32/*'\n"
        "    kind: xfail\n"
        "    reason: fixed since\n"
        "# end of file\n",
        encoding="utf-8",
    )
    p, recs = run(env, tmp_path, "--expectations", str(f), "--update-expectations")
    text = f.read_text()
    assert text.startswith("# Known failures of nof16 -- written by hand\nformat: 1\n")
    assert "  # fp16 is unsupported on this device (ticket 123)\n" in text
    assert "    reason: kept reason   # inline note\n" in text
    assert "this one was fixed in 1.2" not in text and "fixed since" not in text
    assert text.rstrip().endswith("# end of file")
    doc = yaml.safe_load(text)
    failing_now = sorted(i for i, r in recs.items() if r["verdict"] == "fail")
    assert sorted(e["match"] for e in doc["entries"][1:]) == failing_now
    assert all(e["kind"] == "xfail" for e in doc["entries"])
    p2, _ = run(env, tmp_path, "--expectations", str(f))
    assert p2.returncode == 0


def test_expectations_file_and_no_expectations_contradict(tmp_path):
    f = write(tmp_path / "e.yaml", [])
    p = subprocess.run([sys.executable, "-m", "cli.main", "run", "--expectations", str(f),
                        "--no-expectations", "--results", str(tmp_path / "r.jsonl")],
                       capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [
        f"Error: --expectations {f} and --no-expectations contradict each other; give one of them"
    ]
    assert not (tmp_path / "r.jsonl").exists()


# -- spec deviations as expectations: the real library is not red for what it knowingly does --


def _rec(case_id: str, clauses: list[str], verdict: str = "fail") -> dict:
    return {"id": case_id, "verdict": verdict, "clauses": clauses, "reason": "status 0, expected"}


def test_spec_deviations_explain_failures_of_the_backends_they_name():
    from conformance.config import load_expectations
    from conformance.registry import default_registry

    reg = default_registry()
    dev = "elu_backward/alpha-check-after-tofloat"
    clause = ["elu_backward/alpha-nonneg-if-result"]
    for backend in ("aclnn", "torch_npu"):
        e = load_expectations(backend, None, False, False, reg)
        rec = e.apply(_rec("elu_backward/atlas-a2/neg/alpha-nonneg-if-result/example3", clause),
                      backend, "CANN 8.2")  # fmt: skip
        assert rec["verdict"] == "deviation" and rec["verdict_before_expectation"] == "fail"
        assert rec["expectation"]["deviation"] == dev and rec["expectation"]["kind"] == "deviation"
        # the deviation's `cases` narrow it: alpha = -1.0 must still be rejected
        other = e.apply(_rec("elu_backward/atlas-a2/neg/alpha-nonneg-if-result/example1", clause),
                        backend, "CANN 8.2")  # fmt: skip
        assert other["verdict"] == "fail"
        # a pass stays a pass (a library that follows its doc is not an xpass)
        ok = e.apply(_rec("elu_backward/atlas-a2/neg/alpha-nonneg-if-result/example3", clause,
                          "pass"), backend, "CANN 8.2")  # fmt: skip
        assert ok["verdict"] == "pass"
    # another backend is not excused, and --no-expectations excuses nothing
    ref = load_expectations("reference", None, False, False, reg)
    assert ref.find("elu_backward/atlas-a2/neg/alpha-nonneg-if-result/example3", "reference", "",
                    _rec("elu_backward/atlas-a2/neg/alpha-nonneg-if-result/example3", clause)) is None  # fmt: skip
    assert load_expectations("aclnn", None, True, False, reg) is None


def test_every_spec_deviation_naming_a_backend_becomes_an_expectation():
    from conformance.registry import default_registry

    reg = default_registry()
    for spec in reg:
        for d in spec.deviations:
            for backend in d.backends:
                entries = ex.from_deviations(reg, backend)
                if d.clause:
                    assert any(e.deviation == spec.clause(d.id) for e in entries), (spec.name, d.id)


def test_the_elu_example_at_minus_1e300_is_rejected_by_the_documented_rule():
    """The doc: alpha >= 0 when isResult; a DOUBLE -1e-300 is negative, so 161002 (the library
    tests alpha->ToFloat() = -0.0f and accepts it: the spec records that as a deviation)."""
    import numpy as np

    import reference
    from conformance.call import Call, ScalarArg, TensorArg

    x = np.array([-1.0, 2.0], dtype=np.float32)
    args = {"gradOutput": TensorArg.from_array(x, "FLOAT"), "alpha": ScalarArg("DOUBLE", -1e-300),
            "scale": ScalarArg("FLOAT", 1.0), "inputScale": ScalarArg("FLOAT", 1.0),
            "isResult": True, "selfOrResult": TensorArg.from_array(x, "FLOAT"),
            "gradInput": TensorArg.empty_like_shape((2,), "FLOAT")}  # fmt: skip
    out = reference.evaluate(Call("aclnnEluBackward", "atlas-a2", args))
    assert out.status == 161002 and out.clause == "elu_backward/alpha-nonneg-if-result"
    args["alpha"] = ScalarArg("FLOAT", -1e-300)  # a FLOAT scalar holds -0.0: accepted
    assert reference.evaluate(Call("aclnnEluBackward", "atlas-a2", args)).status == 0
