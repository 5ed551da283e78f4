"""The `deviation` verdict and the small-value notes on ULP figures in every report, against the
hand-made results file tests/data/results/deviation.jsonl (5 cases, see its README): a failure
the spec documents as a deviation of the library, a pass whose max ULP is huge at an expected
value below the small-value threshold, an error with a long reason, a fail, a pass."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from aclnn_conformance.reports.coverage import COVERED, clause_coverage
from aclnn_conformance.reports.html import case_payload, id_html, render_html
from aclnn_conformance.reports.jsonreport import summary
from aclnn_conformance.reports.junit import render_junit
from aclnn_conformance.reports.markdown import render_markdown
from aclnn_conformance.reports.plots import ulp_panels
from aclnn_conformance.reports.run import pass_rate, read_run
from aclnn_conformance.reports.ulpnote import fmt_ulp, pow2, small_value_notes

DATA = Path(__file__).parent / "data"
SAMPLE = DATA / "results" / "deviation.jsonl"
DEV = "hardshrink_backward/atlas-training/f32/-/point=x-zero-negative-lambd"
DEV_ID = "hardshrink_backward/negative-lambd-torch"
DEV_WHY = "PyTorch does not clamp a negative lambda, so x = 0 gives grad instead of 0"
SMALL = "gelu_backward_v2/atlas-a2/f32.bf16.f32/approximate=none/shape=bcast-1x3"
ERROR = "elu_backward/atlas-a2/f32/isResult=0/values=wide"
FAIL = "gelu_backward_v2/atlas-inference/f16/approximate=tanh/point=x-large-negative-tanh"
PASS = "elu_backward/atlas-a2/f16/isResult=0/values=normal"
VERDICTS = {DEV: "deviation", SMALL: "pass", ERROR: "error", FAIL: "fail", PASS: "pass"}


@pytest.fixture(scope="module")
def run():
    return read_run(SAMPLE)


def by_id(run, cid: str) -> dict:
    return next(r for r in run.records if r.id == cid)


def test_the_sample_file_is_what_its_readme_says(run):
    assert {r.id: r.verdict for r in run.records} == VERDICTS
    dev = by_id(run, DEV)
    assert dev.verdict_before_expectation == "fail"
    assert dev.expectation == {"match": "hardshrink_backward/*", "kind": "deviation",
                                  "reason": DEV_WHY, "deviation": DEV_ID}  # fmt: skip
    small = by_id(run, SMALL).comparisons["gradInput"]
    assert small["passed"] and small["stats"]["max_ulp"] > 1e9


# -- deviation --------------------------------------------------------------------------------


@pytest.mark.gates
def test_html_shows_the_deviation_and_its_id(run):
    html = render_html(run.records, run.meta)
    assert re.search(r'data-verdict="deviation"[^>]*><b>1</b> deviation</button>', html)
    assert ".v-deviation { --c: var(--deviation); }" in html  # a colour of its own
    assert 'id="status">2 failing of 5<' in html  # the deviation is not a failure
    # the matrix cell of the deviation: no failure, its own class and a "1 dev" mark
    cell = re.search(r'<td class="cell (\w+)" data-op="hardshrink_backward"[^>]*>(.*?)</td>', html,
                     re.S)  # fmt: skip
    assert cell and cell.group(1) == "rdev" and '<i class="dev">1 dev</i>' in cell.group(2)
    assert "+1 deviation" in html  # clause coverage: the lambd-negative-as-zero row
    data = case_payload(run.records)
    f = data["fields"]
    row = next(c for c in data["cases"] if c[f.index("id")] == DEV)
    assert data["verdicts"][row[f.index("verdict")]] == "deviation"
    detail = data["details"][row[f.index("detail")]]
    assert detail["x"]["deviation"] == DEV_ID and detail["x"]["kind"] == "deviation"
    assert detail["b"] == "fail"  # the drill-down says fail -> deviation
    js = (Path(__file__).parents[1] / "reports" / "templates" / "report.js").read_text("utf-8")
    assert "documented deviation" in js and "x.deviation" in js


def test_junit_reports_a_deviation_as_skipped_with_its_id(run):
    xmlschema = pytest.importorskip("xmlschema", reason="xmlschema validates the JUnit XML")
    xml = render_junit(run.records, run.meta)
    xmlschema.XMLSchema(str(DATA / "junit.xsd")).validate(xml)
    root = ET.fromstring(xml)
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "5", "1", "1", "1")  # fmt: skip
    suite = next(s for s in root.iter("testsuite") if s.get("name") == "hardshrink_backward")
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "1")
    tc = next(t for t in root.iter("testcase") if t.get("name") == DEV)
    assert [c.tag for c in tc] == ["skipped"]
    msg = tc.find("skipped").get("message")
    assert msg.startswith(f"deviation {DEV_ID}: {DEV_WHY} (was fail: gradInput: mismatch ratio")
    assert f"(deviation {DEV_ID})" in tc.find("skipped").text


def test_markdown_counts_the_deviation_with_its_icon_and_lists_its_id(run):
    md = render_markdown(run.records, run.meta)
    assert md.startswith("## ❌ aclnn conformance: npu-test: 2 failing\n")
    assert "📘 deviation **1**" in md.splitlines()[2]
    assert "| `hardshrink_backward` | · | 📘 0/1 (1 dev) | 📘 0/1 (1 dev) |" in md
    section = md.split("### 📘 Documented deviations (1 case)", 1)[1].split("###", 1)[0]
    assert f"- `{DEV_ID}`: 1 case: {DEV_WHY}" in section
    assert DEV not in md.split("### Failures", 1)[1]  # not a failure


def test_json_summary_counts_the_deviation_apart_from_failures(run):
    s = json.loads(json.dumps(summary(run.records, run.meta)))
    assert s["totals"]["verdicts"]["deviation"] == 1 and s["totals"]["failed"] == 2
    assert s["totals"]["pass_rate"] == 0.5  # 2 passes of 4 judged: the deviation is left out
    assert s["deviations"] == {DEV_ID: {"cases": 1, "reason": DEV_WHY, "ids": [DEV]}}
    assert DEV not in {f["id"] for f in s["failures"]}
    cell = next(m for m in s["matrix"] if m["op"] == "hardshrink_backward")
    assert cell["verdicts"] == {"deviation": 1}


def test_coverage_counts_deviations_apart_from_failures(run):
    rows = {r.qualified: r for r in clause_coverage(run.records).rows}
    row = rows["hardshrink_backward/lambd-negative-as-zero"]
    assert (row.run, row.passed, row.failed, row.deviation, row.status) == (1, 0, 0, 1, COVERED)
    assert row.to_dict()["deviation"] == 1
    assert pass_rate(Counter(deviation=3, skip=1)) is None  # nothing judged
    assert pass_rate(Counter({"pass": 1, "deviation": 3})) == 1.0


# -- small-value notes on ULP figures ---------------------------------------------------------


def test_a_huge_max_ulp_at_a_small_expected_value_is_explained(run):
    (note,) = small_value_notes(by_id(run, SMALL))
    # gelu_backward_v2 holds FLOAT results below 2^-8 to 2^-18 absolute (its spec's tolerance)
    assert (note.output, note.dtype, note.threshold, note.atol) == ("gradInput", "f32", 2**-8,
                                                                    2**-18)  # fmt: skip
    assert note.certain and note.passed and note.expected == -2.9e-12
    assert note.short() == ("at an expected value below the small-value threshold 2^-8 (f32 "
                            "policy), judged by absolute error instead: 4.2e-12 ≤ 2^-18, passed")  # fmt: skip
    text = note.long()
    assert text.startswith("max 1.48e9 ulp is at the expected value -2.9e-12, below the "
                           "small-value threshold 2^-8 of the f32 policy")  # fmt: skip
    assert "passed by this small-value rule" in text and "in the output dtype" in text
    # the deviation: max ULP at expected 0, failed by its absolute error
    (dev,) = small_value_notes(by_id(run, DEV))
    assert dev.threshold == 2**-14 and not dev.passed and "(0.5 > 2^-30)" in dev.long()
    # a max ULP at a normal value means what it says: no note
    assert small_value_notes(by_id(run, PASS)) == small_value_notes(by_id(run, FAIL)) == []


def test_small_value_notes_without_the_element_or_with_a_stored_policy(run):
    rec = copy.deepcopy(by_id(run, SMALL))
    comp = rec.comparisons["gradInput"]
    comp["worst"] = []  # not recorded: the count of small values still tells
    (note,) = small_value_notes(rec)
    assert not note.certain and note.count == 2
    assert "2 elements have expected values below the small-value threshold 2^-8" in note.long()
    comp["stats"]["max_ulp"] = 100.0  # small enough to be a real error: no guess
    assert small_value_notes(rec) == []
    rec = copy.deepcopy(by_id(run, SMALL))
    rec.comparisons["gradInput"]["policy"] = {"small_threshold": 2**-40, "small_atol": 2**-50}
    assert small_value_notes(rec) == []  # -2.9e-12 is above a stored 2^-40 threshold


def test_html_says_what_a_huge_ulp_means_where_it_shows_it(run):
    html = render_html(run.records, run.meta)
    panel = next(p for p in ulp_panels(run.records) if p.op == "gelu_backward_v2" and
                 p.dtype == "f32")  # fmt: skip
    assert panel.small == 1 and "2^-8" in panel.note
    cap = re.search(r"<b>gelu_backward_v2</b> <span class=\"dt\">f32</span>(.*?)</figcaption>",
                    html, re.S).group(1)  # fmt: skip
    cap = re.sub(r"<[^>]+>", "", cap)
    assert "1 cases · max 1.48e9 ulp*" in cap
    assert ("* at an expected value below the small-value threshold 2^-8 (f32 policy), judged by "
            "absolute error instead: 4.2e-12 ≤ 2^-18, passed") in cap  # fmt: skip
    assert "ULP distance: the number of representable values of the output dtype" in html
    data = case_payload(run.records)
    f = data["fields"]
    row = next(c for c in data["cases"] if c[f.index("id")] == SMALL)
    detail = data["details"][row[f.index("detail")]]  # a pass, but with a note: details kept
    assert "passed by this small-value rule" in detail["u"]["gradInput"]
    assert detail["c"]["gradInput"][2] == [2**-8, 2**-18, "f32"]


def test_junit_and_markdown_explain_a_small_value_ulp_of_a_failure(run):
    xml = render_junit(run.records, run.meta)
    tc = next(t for t in ET.fromstring(xml).iter("testcase") if t.get("name") == DEV)
    assert "note on gradInput: max 1.06e9 ulp is at the expected value 0" in tc.find("skipped").text
    rec = {**by_id(run, DEV).to_dict(), "verdict": "fail"}
    md = render_markdown([rec], {})
    assert "(max ULP 1.06e9 at a small expected value, judged by absolute error, max rel 0)" in md


def test_formats():
    assert pow2(2**-14) == "2^-14" and pow2(3.814697265625e-6) == "2^-18" and pow2(1e-3) == "0.001"
    assert fmt_ulp(12666512867328) == "1.27e13" and fmt_ulp(0.5) == "0.5" and fmt_ulp(256) == "256"
    assert str(id_html("a/b<c/d")) == (
        '<span class="idp">a/</span><wbr><span class="idp">b&lt;c/</span><wbr>'
        '<span class="idp">d</span>'
    )
