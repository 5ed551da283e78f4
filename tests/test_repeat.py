"""`run --repeat N`: each case runs N times on the backend; other output bits or another status on
any run is the verdict `nondeterministic`, in every report and in the exit code. The backend is
an exec harness (tests/data/exec_harness/flaky_harness.py) that counts its calls and misbehaves
on every second one, so what each run must show is known in advance."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support.runcli import REPO, assert_clean, conform, read_jsonl

FLAKY = REPO / "tests" / "data" / "exec_harness" / "flaky_harness.py"
SEL = ["--op", "leaky_relu_backward", "--product", "atlas-a2", "--dtype", "f32"]

pytestmark = pytest.mark.gates  # every test runs the CLI in a subprocess with an exec harness


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repeat") / "c"
    assert_clean(conform("cases", "export", root, *SEL, "-k", "values=", "--max-cases", "4"), 0)
    return root


def _run(tmp: Path, cases: Path, mode: str, repeat: int, *extra: str):
    counter = tmp / f"{mode}.count"
    cmd = f"python {FLAKY} {mode} {counter}"
    res = tmp / f"{mode}.jsonl"
    proc = conform(
        "run", "--cases", cases, "--backend", "exec", "--exec-cmd", cmd, "--repeat", repeat,
        "--results", res, "--junit", tmp / "j.xml", "--markdown", tmp / "m.md",
        "--json", tmp / "s.json", "--html", tmp / "h.html", *extra,
    )  # fmt: skip
    return proc, read_jsonl(res), int(counter.read_text())


def _n_cases(cases: Path) -> int:
    return sum(1 for _ in cases.rglob("case.json"))


def test_a_deterministic_backend_passes_every_repeat_and_runs_n_times(tmp_path, cases):
    n = _n_cases(cases)
    proc, recs, calls = _run(tmp_path, cases, "same", 3)
    assert_clean(proc, 0)
    assert calls == 3 * n  # every case ran three times
    assert {r["verdict"] for r in recs} <= {"pass", "skip"}
    assert all(r["repeat"] == 3 for r in recs if r["verdict"] == "pass")


@pytest.mark.parametrize(
    "mode, words",
    [
        ("bits", "differs from run 1 in 1 of"),
        ("status", "run 1 gave status 0, run 2 of 2 status 161002"),
    ],
)
def test_flaky_bits_or_status_are_nondeterministic_in_every_report(tmp_path, cases, mode, words):
    n = _n_cases(cases)
    proc, recs, calls = _run(tmp_path, cases, mode, 2)
    assert_clean(proc, 1)  # a nondeterministic case fails the run
    assert calls == 2 * n
    assert len(recs) == n and {r["verdict"] for r in recs} == {"nondeterministic"}
    assert all(words in r["reason"] for r in recs)
    junit = ET.parse(tmp_path / "j.xml").getroot()
    assert junit.get("failures") == str(n) and junit.get("errors") == "0"
    fails = junit.findall(".//failure")
    assert len(fails) == n and {f.get("type") for f in fails} == {"nondeterministic"}
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["totals"]["verdicts"]["nondeterministic"] == n
    assert "nondeterministic" in (tmp_path / "m.md").read_text()
    assert "v-nondeterministic" in (tmp_path / "h.html").read_text()
    assert f"nondeterministic {n}" in proc.stdout


def test_without_repeat_the_flaky_harness_is_not_caught(tmp_path, cases):
    proc, recs, calls = _run(tmp_path, cases, "bits", 1)
    assert calls == _n_cases(cases)
    assert "nondeterministic" not in {r["verdict"] for r in recs}


def test_repeat_must_be_at_least_one(tmp_path):
    proc = conform("run", *SEL, "--repeat", "0", "--results", tmp_path / "r.jsonl")
    assert_clean(proc, 2)
    assert "--repeat" in proc.stderr and not (tmp_path / "r.jsonl").exists()


def test_the_replay_line_of_a_generated_case_carries_repeat(tmp_path):
    res = tmp_path / "r.jsonl"
    proc = conform("run", *SEL, "--max-cases", "2", "--repeat", "2", "--results", res, "-q")
    assert_clean(proc, 0)
    recs = read_jsonl(res)
    assert recs and all("--repeat 2" in r["replay"] for r in recs)
