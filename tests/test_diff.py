"""`aclnn-conform diff OLD NEW` and reports.diff: regressions, fixes, moved statistics, cases
added and removed, exit codes. The runs are the hand-made tests/data/results/mixed.jsonl and
copies of it with hand-made edits."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from aclnn_conformance.reports.diff import diff_runs, render_markdown
from aclnn_conformance.reports.run import read_run

from tests.support.runcli import assert_clean, assert_one_line_error, conform

MIXED = Path(__file__).parent / "data" / "results" / "mixed.jsonl"
E = "elu_backward/atlas-a2/"
H = "hardshrink_backward/atlas-training/"
PASS_F32 = E + "f32/isResult=0/values=normal"  # pass in mixed.jsonl
FAIL_F16 = E + "f16/isResult=0/values=wide"  # fail
PASS_F16 = E + "f16/isResult=0/values=normal"  # pass: max_ulp 0.5, max_rel 4.8e-4
PASS_HS = H + "f32/-/values=normal"  # pass: max_ulp 0.25, max_rel 1.2e-4


def records() -> list[dict]:
    return [r.to_dict() for r in copy.deepcopy(read_run(MIXED).records)]


def edit(recs: list[dict], cid: str, **changes) -> None:
    rec = next(r for r in recs if r["id"] == cid)
    rec.update(changes)


def set_stats(recs: list[dict], cid: str, **stats) -> None:
    rec = next(r for r in recs if r["id"] == cid)
    rec["comparisons"]["gradInput"]["stats"].update(stats)


def write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def regressed_and_fixed() -> list[dict]:
    new = records()
    edit(new, PASS_F32, verdict="fail", reason="gradInput: 3 NaN mismatch(es)")
    edit(new, FAIL_F16, verdict="pass", reason="")
    return new


def test_one_regression_and_one_fix_are_exactly_what_is_reported():
    d = diff_runs(records(), regressed_and_fixed())
    assert [(c.id, c.old, c.new) for c in d.regressions] == [(PASS_F32, "pass", "fail")]
    assert [(c.id, c.old, c.new) for c in d.fixes] == [(FAIL_F16, "fail", "pass")]
    assert d.changed == d.added == d.removed == d.moved == []
    assert d.regressed


def test_diff_command_exits_1_on_the_regression_and_writes_markdown_and_html(tmp_path):
    old = write(tmp_path / "old.jsonl", records())
    new = write(tmp_path / "new.jsonl", regressed_and_fixed())
    proc = conform("diff", old, new, "--markdown", tmp_path / "d.md", "--html", tmp_path / "d.html")
    assert_clean(proc, 1)
    assert "1 regression, 1 fix, 0 other verdict changes" in proc.stdout
    assert f"pass -> fail: {PASS_F32}" in proc.stdout
    assert f"aclnn-conform replay '{PASS_F32}' --seed 0 --backend npu-test" in proc.stdout
    assert f"fail -> pass: {FAIL_F16}" in proc.stdout
    ids = set(re.findall(r"(?:elu|hardshrink)_backward/[^\s`'|<]+", proc.stdout))
    assert ids == {PASS_F32, FAIL_F16}
    md = (tmp_path / "d.md").read_text("utf-8")
    assert md.startswith("## ❌ aclnn conformance diff: old.jsonl → new.jsonl")
    assert "### Regressions (1)" in md and "### Fixes (1)" in md
    assert "Other verdict changes" not in md and "### Added" not in md and "### Removed" not in md
    assert md.count(PASS_F32) == 2 and md.count(FAIL_F16) == 1  # the table row and the replay
    html = (tmp_path / "d.html").read_text("utf-8")
    text = re.sub(r"<[^>]+>", "", html)  # ids are split into segments that wrap only at '/'
    assert PASS_F32 in text and FAIL_F16 in text and "1 regression" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)


@pytest.mark.gates
def test_no_regression_exits_0(tmp_path):
    old = write(tmp_path / "old.jsonl", records())
    proc = conform("diff", old, old)
    assert_clean(proc, 0)
    assert "0 regressions, 0 fixes" in proc.stdout
    fixed = records()
    edit(fixed, FAIL_F16, verdict="pass")
    proc = conform("diff", old, write(tmp_path / "fixed.jsonl", fixed))
    assert_clean(proc, 0)
    assert "0 regressions, 1 fix," in proc.stdout


@pytest.mark.parametrize(
    "cid, old, new, kind",
    [
        (PASS_F32, "pass", "crash", "regressions"),
        (PASS_F32, "pass", "timeout", "regressions"),
        (E + "f32/isResult=0/values=special", "xfail", "fail", "regressions"),
        (E + "f16/isResult=1/values=normal", "skip", "error", "regressions"),
        (H + "f16/-/point=x-zero", "xpass", "fail", "regressions"),
        (E + "bf16/isResult=0/values=normal", "error", "pass", "fixes"),
        (E + "f32/isResult=0/values=special", "xfail", "xpass", "fixes"),
        (FAIL_F16, "fail", "error", "changed"),
        (PASS_F32, "pass", "skip", "changed"),
        (FAIL_F16, "fail", "xfail", "changed"),
        (FAIL_F16, "fail", "deviation", "changed"),  # now a documented deviation: no regression
        (PASS_F32, "pass", "deviation", "changed"),
    ],
)
def test_which_verdict_changes_are_regressions(cid, old, new, kind):
    after = records()
    edit(after, cid, verdict=new)
    d = diff_runs(records(), after)
    lists = {"regressions": d.regressions, "fixes": d.fixes, "changed": d.changed}
    assert [(c.id, c.old, c.new) for c in lists[kind]] == [(cid, old, new)]
    assert sum(len(v) for v in lists.values()) == 1


def test_statistics_that_moved_beyond_the_threshold_are_listed(tmp_path):
    after = records()
    set_stats(after, PASS_HS, max_ulp=1.0)  # 0.25 -> 1.0: x4, above the default 0.5 (x1.5)
    set_stats(after, PASS_F16, max_ulp=0.6, max_rel=6.0e-4)  # +0.1 ulp; rel x1.25
    d = diff_runs(records(), after)
    assert [(m.id, m.stat, m.old, m.new) for m in d.moved] == [(PASS_HS, "max_ulp", 0.25, 1.0)]
    assert d.moved[0].grew and d.moved[0].factor == 4.0 and not d.regressed
    # a lower threshold adds the x1.25 max_rel; a 0.1 ulp change is never listed
    d = diff_runs(records(), after, threshold=0.2)
    assert {(m.id, m.stat) for m in d.moved} == {(PASS_HS, "max_ulp"), (PASS_F16, "max_rel")}
    old = write(tmp_path / "old.jsonl", records())
    new = write(tmp_path / "new.jsonl", after)
    proc = conform("diff", old, new, "--threshold", "0.2", "--markdown", tmp_path / "d.md")
    assert_clean(proc, 0)
    assert f"max_ulp grew 0.25 -> 1: {PASS_HS}" in proc.stdout
    assert f"max_rel grew 0.00048 -> 0.0006: {PASS_F16}" in proc.stdout
    md = (tmp_path / "d.md").read_text("utf-8")
    assert f"| `{PASS_HS}` | max_ulp | 0.25 | 1 | ▲ ×4 |" in md


def test_statistics_that_shrank_are_listed_too_and_non_passing_cases_are_not():
    after = records()
    set_stats(after, PASS_HS, max_ulp=0.0, max_rel=0.0)
    set_stats(after, FAIL_F16, max_ulp=40.0)  # fails in both runs: a verdict, not a drift
    d = diff_runs(records(), after)
    assert [(m.stat, m.grew) for m in d.moved] == [("max_rel", False)]  # 0.25 ulp: below floor
    assert d.moved[0].id == PASS_HS


def test_cases_added_and_removed():
    after = [r for r in records() if r["id"] != PASS_HS]
    extra = copy.deepcopy(after[0])
    extra.update(id=E + "f32/isResult=0/values=tiny", verdict="fail")
    after.append(extra)
    d = diff_runs(records(), after)
    assert [(c.id, c.old) for c in d.removed] == [(PASS_HS, "pass")]
    assert [(c.id, c.new) for c in d.added] == [(E + "f32/isResult=0/values=tiny", "fail")]
    assert not d.regressed  # a new case that fails is new coverage, not a regression
    md = render_markdown(d)
    assert "### Added (1)" in md and "### Removed (1)" in md and "### Regressions" not in md


@pytest.mark.gates
def test_diff_command_errors_are_one_line(tmp_path):
    old = write(tmp_path / "old.jsonl", records())
    assert_one_line_error(conform("diff", old, tmp_path / "missing.jsonl"), "no such results file")
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    assert_one_line_error(conform("diff", tmp_path / "empty.jsonl", old), "empty results file")
    proc = conform("diff", old, old, "--threshold", "-1")  # a click usage error
    assert_clean(proc, 2)
    assert "Invalid value for '--threshold'" in proc.stderr


@pytest.mark.parametrize(
    "new, kind",
    [
        ("fail", "regressions"),  # the deviation no longer explains the failure
        ("crash", "regressions"),
        ("pass", "fixes"),  # the library now does what its docs say
        ("xfail", "changed"),
        ("skip", "changed"),
    ],
)
def test_a_deviation_counts_as_not_failing_before(new, kind):
    before = records()
    edit(before, FAIL_F16, verdict="deviation", verdict_before_expectation="fail")
    after = records()
    edit(after, FAIL_F16, verdict=new)
    d = diff_runs(before, after)
    lists = {"regressions": d.regressions, "fixes": d.fixes, "changed": d.changed}
    assert [(c.id, c.old, c.new) for c in lists[kind]] == [(FAIL_F16, "deviation", new)]
    assert sum(len(v) for v in lists.values()) == 1
    assert d.regressed == (kind == "regressions")


@pytest.mark.gates
def test_diff_command_on_deviations(tmp_path):
    """fail -> deviation exits 0 and shows both verdicts; deviation -> fail exits 1."""
    failing = write(tmp_path / "failing.jsonl", records())
    explained = records()
    edit(explained, FAIL_F16, verdict="deviation", verdict_before_expectation="fail")
    explained_path = write(tmp_path / "explained.jsonl", explained)
    proc = conform("diff", failing, explained_path, "--html", tmp_path / "d.html")
    assert_clean(proc, 0)
    assert "0 regressions, 0 fixes, 1 other verdict change" in proc.stdout
    html = (tmp_path / "d.html").read_text("utf-8")
    assert '<span class="vb v-fail">fail</span>' in html
    assert '<span class="vb v-deviation">deviation</span>' in html
    proc = conform("diff", explained_path, failing)
    assert_clean(proc, 1)
    assert "1 regression," in proc.stdout and f"deviation -> fail: {FAIL_F16}" in proc.stdout
