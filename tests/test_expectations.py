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
