"""`run --cross BACKEND` (TTK's three-party cross-check: the backend's error against the golden
relative to a second backend's, with TTK's levels on MARE/MERE/RMSE) and `run --dump-on-fail DIR`
(failing cases' inputs, outputs and golden, bounded). The backend under test is an exec harness
with a known relative error (tests/data/exec_harness/noisy_harness.py), the second one torch on
the CPU, so every ratio is known in advance."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.cases.casedir import read_case
from aclnn_conformance.conformance.run.cross import LEVELS, ratios, small_values

from tests.support.runcli import REPO, assert_clean, assert_one_line_error, conform, read_jsonl

NOISY = REPO / "tests" / "data" / "exec_harness" / "noisy_harness.py"
SEL = ["--op", "leaky_relu_backward", "--product", "atlas-a2", "--dtype", "f32"]


# -- the criterion, against hand calculations --------------------------------------------------


def test_levels_and_small_values_are_ttks():
    # TTK docs/Precision_Comparison.md section 8: Level presets and small_value table
    assert LEVELS == {"L0": (10.0, 2.0, 2.0), "L1": (5.0, 1.5, 1.5), "L2": (2.0, 1.2, 1.2)}
    assert small_values("FLOAT16") == (2**-11, 2**-16) and small_values("BF16") == (2**-8, 2**-16)
    assert small_values("FLOAT") == (2**-14, 2**-30)


def test_ratios_by_hand():
    g = np.array([1.0, 2.0, -4.0, 1e-6, 0.5])
    t = g * (1 + 2**-10)  # backend: relative error 2^-10
    b = g * (1 + 2**-12)  # second backend: 2^-12
    large = [0, 1, 2, 4]  # |g| >= 2^-14
    rel_t = [abs(t[i] - g[i]) / (abs(g[i]) + 1e-7) for i in large]
    rel_b = [abs(b[i] - g[i]) / (abs(g[i]) + 1e-7) for i in large]
    fig = ratios(t, g, b, "FLOAT", "L1")
    assert fig["mare"] == pytest.approx(max(rel_t) / max(rel_b), rel=1e-12)
    assert fig["mere"] == pytest.approx(math.fsum(rel_t) / math.fsum(rel_b), rel=1e-12)
    rmse_t = math.sqrt(math.fsum((t[i] - g[i]) ** 2 for i in large) / 4)
    rmse_b = math.sqrt(math.fsum((b[i] - g[i]) ** 2 for i in large) / 4)
    assert fig["rmse"] == pytest.approx(rmse_t / rmse_b, rel=1e-12)  # 4
    # small domain (|g| < 2^-14): |t-g| = 1e-6 * 2^-10 > 2^-30, |b-g| = 1e-6 * 2^-12 < 2^-30
    assert (fig["small_errors"], fig["small_errors_cross"], fig["small_ratio"]) == (1, 0, 1.0)
    # L1: mare 4 <= 5 but mere 4 > 1.5 and rmse 4 > 1.5; L0: mere, rmse > 2; fails at every level
    assert not fig["ok"] and [e.split()[0] for e in fig["exceeded"]] == ["mere", "rmse"]
    assert ratios(b, g, t, "FLOAT", "L2")["ok"]  # the other way round: ratios 1/4


def test_the_denominator_floor_and_the_special_values():
    g = np.array([1.0, 2.0, np.inf, np.nan])
    exact = g.copy()
    t = np.array([1.0 + 2**-20, 2.0, np.inf, np.nan])  # error 2^-20 where b is exact
    fig = ratios(t, g, exact, "FLOAT", "L1")
    # max rel(b) = 0 is floored at small_value 2^-14: 2^-20 / (1 + 1e-7) / 2^-14
    assert fig["mare"] == pytest.approx(2**-20 / (1 + 1e-7) / 2**-14, rel=1e-12)
    assert fig["ok"]
    assert ratios(g, g, g, "FLOAT", "L2")["mare"] == 1.0  # 0/0 counts 1
    t2 = np.array([1.0, 2.0, -np.inf, np.nan])  # -inf where golden and second say +inf
    bad = ratios(t2, g, exact, "FLOAT", "L0")
    assert not bad["ok"] and "1 NaN/inf elements" in bad["exceeded"][0]


# -- through run ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> Path:
    pytest.importorskip("torch")  # the second backend
    root = tmp_path_factory.mktemp("cross") / "c"
    assert_clean(conform("cases", "export", root, *SEL, "-k", "values=", "--max-cases", "4"), 0)
    return root


def _run(tmp: Path, cases: Path, rel: float, *extra):
    res = tmp / "r.jsonl"
    proc = conform(
        "run", "--cases", cases, "--backend", "exec", "--exec-cmd", f"python {NOISY} {rel!r}",
        "--results", res, "--markdown", tmp / "m.md", "--junit", tmp / "j.xml", *extra,
    )  # fmt: skip
    return proc, read_jsonl(res)


@pytest.mark.gates  # the CLI in subprocesses
def test_a_backend_16_times_worse_than_the_second_fails_the_ratio_verdict(tmp_path, cases):
    # error 2^-10 against torch's (<= 2^-24, floored at 2^-14): MARE and MERE ratios 16
    proc, recs = _run(tmp_path, cases, 2.0**-10, "--cross", "torch")
    assert_clean(proc, 1)  # the absolute verdict decides the exit code: every case fails
    judged = [r for r in recs if r["verdict"] != "skip"]
    assert judged
    for r in judged:
        c = r["cross"]
        assert (c["backend"], c["level"], c["verdict"]) == ("torch", "L1", "fail")
        out = c["outputs"]["out"]
        assert out["mare"] == pytest.approx(16, rel=2e-3) and out["mere"] == pytest.approx(
            16, rel=2e-3
        )
        assert "mare ratio 16 > 5" in c["reason"]
    md = (tmp_path / "m.md").read_text()
    assert "### Cross-check" in md and f"fail **{len(judged)}**" in md
    assert "cross torch L1: fail" in (tmp_path / "j.xml").read_text()


@pytest.mark.gates  # the CLI in subprocesses
def test_a_backend_below_the_noise_floor_passes_the_ratio_verdict(tmp_path, cases):
    # relative error 2^-20: MARE and MERE ratios 2^-20 / 2^-14 = 1/64 at any level; the
    # absolute verdict passes too. RMSE is an absolute error (TTK does not scale it): with
    # values of magnitude M its ratio is about M/64, so large values fail on it alone.
    proc, recs = _run(tmp_path, cases, 2.0**-20, "--cross", "torch", "--cross-level", "L2")
    assert_clean(proc, 0)
    verdicts = {}
    for r in (r for r in recs if r["verdict"] != "skip"):
        c, out = r["cross"], r["cross"]["outputs"]["out"]
        assert c["level"] == "L2" and "dump" not in r
        # each FLOAT rounding adds up to 2^-24 to the 2^-20 error: 1/64 within 2 * 2^-4
        assert out["mare"] == pytest.approx(1 / 64, rel=0.125)
        assert out["mere"] == pytest.approx(1 / 64, rel=0.125)
        verdicts[r["id"].rsplit("=", 1)[1]] = c["verdict"]
        if c["verdict"] == "fail":
            assert out["exceeded"] == [e for e in out["exceeded"] if e.startswith("rmse ratio")]
    assert verdicts["normal"] == verdicts["tiny"] == "pass"
    assert verdicts["large"] == "fail"


@pytest.mark.gates  # the CLI in subprocesses
def test_a_second_backend_that_fails_is_its_ratio_verdicts_error_never_the_cases(tmp_path, cases):
    broken = f"python {REPO / 'tests' / 'data' / 'exec_harness' / 'flaky_harness.py'}"  # no args
    proc, recs = _run(tmp_path, cases, 2.0**-20, "--cross", "exec", "--cross-opt", f"cmd={broken}")
    assert_clean(proc, 0)  # the absolute verdicts pass: the run passes
    judged = [r for r in recs if r["verdict"] != "skip"]
    assert judged and all(r["verdict"] == "pass" for r in judged)
    assert all(r["cross"]["verdict"] == "error" and r["cross"]["reason"] for r in judged)


@pytest.mark.gates  # the CLI in subprocesses
def test_the_cross_backend_is_checked_before_anything_runs(tmp_path, cases):
    base = ["run", "--cases", cases, "--results", tmp_path / "r.jsonl"]
    assert_one_line_error(conform(*base, "--backend", "torch", "--cross", "nosuch"), "--cross")
    assert_one_line_error(conform(*base, "--backend", "torch", "--cross", "torch"), "itself")
    assert_one_line_error(
        conform(*base, "--backend", "torch", "--cross-opt", "cmd=x"), "--cross-opt", "--cross"
    )


# -- dump on failure -----------------------------------------------------------------------------


@pytest.mark.gates  # the CLI in subprocesses
def test_failing_cases_are_dumped_and_judge_again_from_the_dump(tmp_path, cases):
    dump = tmp_path / "dump"
    proc, recs = _run(tmp_path, cases, 2.0**-4, "--dump-on-fail", dump)
    assert_clean(proc, 1)
    failed = [r for r in recs if r["verdict"] == "fail"]
    assert failed and all(Path(r["dump"]).is_dir() for r in failed)
    for r in failed:
        d = Path(r["dump"])
        assert d.resolve().is_relative_to(dump.resolve())
        case = read_case(d)
        g = np.asarray(case.call.tensor("gradOutput").view(), np.float64)
        x = np.asarray(case.call.tensor("self").view(), np.float64)
        s = case.call.args["negativeSlope"]
        slope = float(np.asarray(s.value).astype(dt.get(s.dtype).np))
        exact = np.where(x > 0, g, g * slope)
        want = exact.astype(np.float32).astype(np.float64) * (1 + 2**-4)
        assert np.array_equal(np.load(d / "actual_out.npy"), want.astype(np.float32).reshape(-1))
        golden = json.loads((d / "golden.json").read_text())
        assert (golden["status"], golden["oracle"]) == (0, "reference")
        # a product of two FLOATs is exact in float64: the golden is that exact value
        assert np.array_equal(np.load(d / "golden_out.npy"), exact.reshape(-1))
    # the dump is a set of self-contained cases: judged again by its stored golden
    again = tmp_path / "again.jsonl"
    assert_clean(conform("run", "--cases", dump, "--golden", "stored", "--backend", "torch",
                         "--results", again), 0)  # fmt: skip
    assert {r["verdict"] for r in read_jsonl(again)} == {"pass"}


@pytest.mark.gates  # the CLI in subprocesses
def test_the_dump_is_bounded_in_cases(tmp_path, cases):
    dump = tmp_path / "dump"
    (dump / ".slots").mkdir(parents=True)
    for n in range(100):  # 100 cases dumped already (by other workers of the run)
        (dump / ".slots" / str(n)).touch()
    proc, recs = _run(tmp_path, cases, 2.0**-4, "--dump-on-fail", dump)
    assert_clean(proc, 1)
    failed = [r for r in recs if r["verdict"] == "fail"]
    assert failed and all("100 failing cases were dumped already" in r["dump"] for r in failed)
    assert [p.name for p in dump.iterdir()] == [".slots"]


def test_the_reports_show_the_ratio_verdict_and_the_dump():
    from aclnn_conformance.conformance.judge.result import Result
    from aclnn_conformance.reports.casetable import _detail
    from aclnn_conformance.reports.junit import details
    from aclnn_conformance.reports.markdown import render_markdown

    cross = {"backend": "torch", "level": "L2", "verdict": "fail", "reason": "level L2: out: mere",
             "outputs": {"out": {"mare": 3.0, "mere": 1.5, "rmse": 1.0}}}  # fmt: skip
    bad = Result("op/a2/f32/x", "fail", op="op", product="a2", reason="r", cross=cross, dump="/d/x")
    # a case that passes absolutely but fails the ratio verdict is listed too
    odd = Result("op/a2/f32/y", "pass", op="op", product="a2", reason="", cross=cross)
    ok = Result("op/a2/f32/z", "pass", op="op", product="a2", cross={**cross, "verdict": "pass"})
    md = render_markdown([bad, odd, ok])
    assert "### Cross-check" in md and "fail **2** · pass **1**" in md
    assert "cross torch L2: fail (MARE 3, MERE 1.5, RMSE 1): level L2: out: mere" in md
    assert "`op/a2/f32/y` (pass)" in md and "dump: `/d/x`" in md
    assert "cross torch L2: fail" in details(bad) and "dump: /d/x" in details(bad)
    assert _detail(odd)["k"].startswith("cross torch L2: fail") and _detail(bad)["p"] == "/d/x"
