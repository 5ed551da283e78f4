"""The reports (Markdown, JUnit XML, summary JSON, HTML, clause coverage) against the hand-made
results file tests/data/results/mixed.jsonl, whose expected counts are derived by hand in
tests/data/results/README.md (14 cases, every verdict)."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from aclnn_conformance.conformance.cases.generate import plan_suite
from aclnn_conformance.conformance.run.session import clause_universe
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reports import write_reports
from aclnn_conformance.reports.coverage import NO_CASE, NOT_RUN, clause_coverage
from aclnn_conformance.reports.html import case_payload, render_html
from aclnn_conformance.reports.jsonreport import summary
from aclnn_conformance.reports.junit import render_junit
from aclnn_conformance.reports.markdown import render_markdown
from aclnn_conformance.reports.run import read_run

from tests.support.runcli import assert_clean, assert_one_line_error, conform

DATA = Path(__file__).parent / "data"
MIXED = DATA / "results" / "mixed.jsonl"
XSD = DATA / "junit.xsd"

# -- hand-derived from tests/data/results/README.md -------------------------------------------
E = "elu_backward/atlas-a2/"
H = "hardshrink_backward/atlas-training/"
VERDICT_OF = {
    E + "f32/isResult=0/values=normal": "pass",
    E + "f16/isResult=0/values=normal": "pass",
    E + "f16/isResult=0/values=wide": "fail",
    E + "bf16/isResult=0/values=normal": "error",
    E + "f32/isResult=1/values=normal": "crash",
    E + "f16/isResult=1/values=normal": "skip",
    E + "f32/isResult=0/values=special": "xfail",
    E + "neg/null-ptr/gradOutput": "pass",
    H + "f32/-/values=normal": "pass",
    H + "neg/dtype-gradOutput/gradOutput:INT8": "fail",
    H + "f16/-/values=normal": "timeout",
    H + "f16/-/point=x-zero": "xpass",
    H + "f16/-/values=wide": "skip",
    H + "f32/-/point=x-at-lambd": "pass",
}
COUNTS = {"pass": 5, "fail": 2, "error": 1, "crash": 1, "timeout": 1, "skip": 2, "xfail": 1,
          "xpass": 1, "deviation": 0, "nondeterministic": 0}  # fmt: skip
FAILING_IDS = {
    i for i, v in VERDICT_OF.items() if v in ("fail", "error", "crash", "timeout", "xpass")
}
JUNIT_SUITES = {  # tests, failures (fail + xpass), errors (error + crash + timeout), skipped
    "elu_backward": (8, 1, 2, 2),
    "hardshrink_backward": (6, 2, 1, 1),
}
JUNIT_CHILD = {"pass": None, "fail": "failure", "xpass": "failure", "error": "error",
               "crash": "error", "timeout": "error", "skip": "skipped", "xfail": "skipped"}  # fmt: skip


@pytest.fixture(scope="module")
def run():
    return read_run(MIXED)


def test_the_sample_file_is_what_the_readme_says(run):
    assert {r.id: r.verdict for r in run.records} == VERDICT_OF
    assert run.meta["backend"] == "npu-test" and run.torn_lines == 0


# -- Markdown ---------------------------------------------------------------------------------


def test_markdown_totals_line_counts_every_verdict(run):
    md = render_markdown(run.records, run.meta)
    assert md.startswith("## ❌ aclnn conformance: npu-test: 6 failing\n")
    totals = next(line for line in md.splitlines() if line.startswith("**14 cases**"))
    found = dict((v, int(n)) for v, n in re.findall(r"(\w+) \*\*(\d+)\*\*", totals))
    assert found == COUNTS


def test_markdown_op_by_dtype_table(run):
    md = render_markdown(run.records, run.meta)
    lines = md.splitlines()
    header = next(line for line in lines if line.startswith("| op |"))
    assert header == "| op | f16 | bf16 | f32 | neg (status) | all |"
    # elu: f16 = pass, fail, skip; bf16 = error; f32 = pass, crash, xfail; neg = pass
    assert "| `elu_backward` | ❌ 1/3 | ❌ 0/1 | ❌ 1/3 | ✅ 1/1 | ❌ 3/8 |" in lines
    # hardshrink: f16 = timeout, xpass, skip; no bf16; f32 = pass, pass; neg = fail
    assert "| `hardshrink_backward` | ❌ 0/3 | · | ✅ 2/2 | ❌ 0/1 | ❌ 2/6 |" in lines


def test_markdown_lists_the_failures_with_replay_commands_and_only_them(run):
    md = render_markdown(run.records, run.meta)
    section = md.split("### Failures (6)", 1)[1]
    for cid, verdict in VERDICT_OF.items():
        if cid in FAILING_IDS:
            assert f"**{verdict}** `{cid}`" in section
            assert f"aclnn-conform replay '{cid}' --seed 0 --backend npu-test" in section
        else:
            assert cid not in section
    assert "(max ULP 2, max rel 0.00163)" in section  # the f16 fail: 2 ulp / 1.2001953125
    failing = md.split("### Failing clauses", 1)[1].split("###", 1)[0]
    assert "`elu_backward/positive`: 3" in failing  # the fail, the error and the crash


def test_markdown_cuts_the_failure_list_at_the_limit(run):
    md = render_markdown(run.records, run.meta, limit=2)
    assert "### First 2 of 6 failures" in md
    assert md.count("aclnn-conform replay") == 2


def test_markdown_all_pass():
    recs = [{**r.to_dict(), "verdict": "pass"} for r in read_run(MIXED).records]
    md = render_markdown(recs, {})
    assert md.startswith("## ✅ aclnn conformance: npu-test: all pass")
    assert "### Failures" not in md and "### Failing clauses" not in md


# -- JUnit ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def schema():
    xmlschema = pytest.importorskip("xmlschema", reason="xmlschema validates the JUnit XML")
    return xmlschema.XMLSchema(str(XSD))


def test_junit_is_valid_against_the_schema_with_the_right_counts(run, schema):
    xml = render_junit(run.records, run.meta)
    schema.validate(xml)
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "14", "3", "3", "3")  # fmt: skip
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == set(JUNIT_SUITES)
    for name, (tests, failures, errors, skipped) in JUNIT_SUITES.items():
        s = suites[name]
        got = tuple(int(s.get(k)) for k in ("tests", "failures", "errors", "skipped"))
        assert got == (tests, failures, errors, skipped), name
        assert len(s.findall("testcase")) == tests
        assert s.get("timestamp") == "2026-11-20T10:00:00" and s.get("hostname") == "ci-host"


def test_junit_testcase_outcomes(run):
    root = ET.fromstring(render_junit(run.records, run.meta))
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert set(cases) == set(VERDICT_OF)
    for cid, verdict in VERDICT_OF.items():
        children = [c.tag for c in cases[cid]]
        want = JUNIT_CHILD[verdict]
        assert children == ([want] if want else []), (cid, verdict, children)
    fail = cases[E + "f16/isResult=0/values=wide"]
    assert fail.get("classname") == "elu_backward.atlas-a2.f16"
    f = fail.find("failure")
    assert f.get("type") == "fail" and "max_ulp 2" in f.get("message")
    assert "max_ulp 2, max_rel 0.00163" in f.text
    assert "gradInput[1, 2]: expected 1.2001953125 actual 1.2021484375" in f.text
    assert f"replay: aclnn-conform replay '{E}f16/isResult=0/values=wide'" in f.text
    xpass = cases[H + "f16/-/point=x-zero"].find("failure")
    assert xpass.get("type") == "xpass" and "expected to fail" in xpass.get("message")
    xfail = cases[E + "f32/isResult=0/values=special"].find("skipped")
    assert xfail.get("message").startswith("xfail: NaN gradOutput gives 0 on the device")
    crash = cases[E + "f32/isResult=1/values=normal"].find("error")
    assert crash.get("type") == "crash" and "SIGSEGV" in crash.get("message")
    neg = cases[H + "neg/dtype-gradOutput/gradOutput:INT8"].find("failure")
    assert "status: expected 161002, oracle 161002, actual 0" in neg.text


def test_junit_stays_valid_with_control_characters_and_markup(run, schema):
    recs = [r.to_dict() for r in run.records]
    recs[2]["reason"] = "bad \x00\x1b[31m <tag> & ]]> \ud800 end"
    xml = render_junit(recs, run.meta)
    schema.validate(xml)
    msg = next(e for e in ET.fromstring(xml).iter("failure")).get("message")
    assert "<tag> & ]]>" in msg and "\x00" not in msg


# -- summary JSON -----------------------------------------------------------------------------


@pytest.mark.gates
def test_json_summary_totals_matrix_failures(run):
    s = json.loads(json.dumps(summary(run.records, run.meta)))
    assert s["format"] == "aclnn-conformance-summary" and s["version"] == 1
    assert s["totals"]["cases"] == 14 and s["totals"]["failed"] == 6
    assert s["totals"]["verdicts"] == COUNTS
    assert s["totals"]["pass_rate"] == round(5 / 11, 6)  # 14 less 2 skips and 1 xfail judged
    assert sum(m["total"] for m in s["matrix"]) == 14
    cell = next(m for m in s["matrix"] if m["op"] == "elu_backward" and m["dtypes"] == "f16")
    assert cell["verdicts"] == {"pass": 1, "fail": 1, "skip": 1} and cell["column"] == "f16"
    assert {f["id"] for f in s["failures"]} == FAILING_IDS
    f16 = next(f for f in s["failures"] if f["id"] == E + "f16/isResult=0/values=wide")
    assert f16["stats"]["max_ulp"] == 2.0 and f16["stats"]["mismatches"] == 1
    assert f16["worst"][0]["actual"] == 1.2021484375
    assert s["failing_clauses"]["elu_backward/positive"] == 3
    assert s["run"]["backend"] == "npu-test" and s["run"]["host"] == "ci-host"


def test_json_writes_non_finite_statistics_as_strings(run):
    recs = [r.to_dict() for r in run.records]
    rec = recs[2] = json.loads(json.dumps(recs[2]))
    rec["comparisons"]["gradInput"]["stats"]["max_ulp"] = "inf"
    rec["comparisons"]["gradInput"]["stats"]["max_rel"] = "nan"
    text = json.dumps(summary(recs, {}), allow_nan=False)
    f = next(x for x in json.loads(text)["failures"] if x["id"] == rec["id"])
    assert f["stats"]["max_ulp"] == "inf" and f["stats"]["max_rel"] == "nan"


# -- clause coverage --------------------------------------------------------------------------


@pytest.mark.gates  # the clause universe plans the whole registry's suite
def test_coverage_counts_run_and_passed_per_clause(run):
    cov = clause_coverage(run.records, clause_universe(default_registry()))
    rows = {r.qualified: r for r in cov.rows}
    null_ptr = rows["elu_backward/null-ptr"]  # only the null gradOutput case: a pass
    assert (null_ptr.run, null_ptr.passed, null_ptr.failed, null_ptr.status) == (1, 1, 0, "covered")
    assert null_ptr.generated >= 1
    dtype = rows["hardshrink_backward/dtype-gradOutput"]  # the INT8 case: a fail
    assert (dtype.run, dtype.passed, dtype.failed, dtype.status) == (1, 0, 1, "failing")
    # positive branch of elu: pass, pass, fail, error, crash, xfail (+ the skip: not run)
    pos = rows["elu_backward/positive"]
    assert (pos.run, pos.passed, pos.failed, pos.xfail, pos.skipped) == (6, 2, 3, 1, 1)
    assert rows["softplus_backward/sigmoid"].status == NOT_RUN  # an op not in the run
    assert cov.unknown == {}


def test_a_clause_without_a_case_is_flagged():
    reg = default_registry()
    plans = [(s, p) for s, p in plan_suite(reg, ["elu_backward"]) if "null-ptr" not in p.clauses]
    cov = clause_coverage([], clause_universe(reg, plans))
    rows = {r.qualified: r for r in cov.rows}
    assert rows["elu_backward/null-ptr"].status == NO_CASE
    assert rows["elu_backward/null-ptr"].generated == 0
    elu = next(o for o in cov.ops if o.op == "elu_backward")
    assert [r.id for r in elu.flagged] == ["null-ptr"]
    html = render_html([], {}, coverage=cov)
    row = re.search(r'<tr class="st-no-case">.*?</tr>', html, re.S)
    assert row and "null-ptr" in row.group(0) and "NO CASE" in row.group(0)


def test_coverage_counts_dynamic_branch_clauses_from_records(run):
    reg = default_registry()
    cov = clause_coverage(run.records, clause_universe(reg, []))  # no static plan at all
    rows = {r.qualified: r for r in cov.rows}
    assert rows["elu_backward/positive"].generated == 7  # the records that exercise it
    assert rows["elu_backward/x-zero"].status == NO_CASE


# -- HTML (without a browser; tests/test_html_chromium.py drives a real one) ------------------


def test_html_is_self_contained_and_embeds_every_case(run):
    html = render_html(run.records, run.meta)
    assert "<link" not in html and "@import" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    m = re.search(
        r'<script type="application/json" id="report-data"[^>]*>(.*?)</script>', html, re.S
    )
    data = json.loads(m.group(1))
    verdicts = [data["verdicts"][c[data["fields"].index("verdict")]] for c in data["cases"]]
    assert len(verdicts) == 14
    assert {v: verdicts.count(v) for v in COUNTS} == COUNTS
    for v, n in COUNTS.items():
        assert re.search(rf'data-verdict="{v}"[^>]*><b>{n}</b> {v}</button>', html), v


def test_html_case_payload_keeps_details_only_where_needed(run):
    data = case_payload(run.records)
    f = data["fields"]
    rows = {c[f.index("id")]: c for c in data["cases"]}
    passing = rows[E + "f32/isResult=0/values=normal"]
    assert passing[f.index("detail")] == -1
    failing = rows[E + "f16/isResult=0/values=wide"]
    detail = data["details"][failing[f.index("detail")]]
    stats, worst, policy = detail["c"]["gradInput"]
    assert policy == [2**-11, 2**-16, "f16"]  # FLOAT16's small_threshold and small_atol
    assert (
        stats[data["statKeys"].index("max_ulp")] == 2 and stats[data["statKeys"].index("n")] == 15
    )
    assert worst == [[[1, 2], 1.2001953125, 1.2021484375, 2**-9, 2**-9 / 1.2001953125, 2,
                      {"gradOutput": 1.2001953125, "selfOrResult": 0.75}]]  # fmt: skip
    assert detail["st"] == [0, 0, 0] and "r" not in detail  # the row's reason is whole
    assert data["replays"][failing[f.index("replay")]] == (
        "aclnn-conform replay '{id}' --seed 0 --backend npu-test")  # fmt: skip
    assert data["params"][failing[f.index("params")]]["gradInput"] == ["f16", [3, 5], [5, 1], 0, 15]


def test_html_escapes_what_it_embeds(run):
    recs = [r.to_dict() for r in run.records]
    recs[2] = dict(recs[2], reason="</script><script>alert(1)</script>", id="a</script>b")
    html = render_html(recs, {"host": "<b>host</b>"})
    assert "</script><script>alert(1)" not in html
    assert "<b>host</b>" not in html and "&lt;b&gt;host&lt;/b&gt;" in html


# -- write_reports and the command ------------------------------------------------------------


def test_write_reports_writes_what_is_asked_in_order(run, tmp_path):
    out = write_reports(run.records, run.meta, markdown=tmp_path / "a" / "s.md",
                        junit=tmp_path / "j.xml", json=tmp_path / "s.json")  # fmt: skip
    assert out == [tmp_path / "j.xml", tmp_path / "a" / "s.md", tmp_path / "s.json"]
    assert all(p.stat().st_size > 100 for p in out)
    assert write_reports(run.records, run.meta) == []


@pytest.mark.gates
def test_report_command_writes_all_four(tmp_path):
    shutil.copy(MIXED, tmp_path / "r.jsonl")
    shutil.copy(str(MIXED) + ".meta.json", tmp_path / "r.jsonl.meta.json")
    proc = conform("report", tmp_path / "r.jsonl", "--html", tmp_path / "o/r.html", "--junit",
                   tmp_path / "o/r.xml", "--markdown", tmp_path / "o/r.md", "--json",
                   tmp_path / "o/r.json")  # fmt: skip
    assert_clean(proc, 0)
    for name in ("r.html", "r.xml", "r.md", "r.json"):
        assert f"wrote {tmp_path / 'o' / name}" in proc.stdout
    assert "ci-host" in (tmp_path / "o/r.html").read_text("utf-8")  # the meta file was read
    assert json.loads((tmp_path / "o/r.json").read_text("utf-8"))["totals"]["failed"] == 6


@pytest.mark.parametrize(
    "content, needle",
    [
        (None, "no such results file"),
        ("", "empty results file"),
        ("\n\n", "empty results file"),
        ("{not json\n", "line 1: not JSON"),
        ('{"a": 1}\n', "line 1: not a result record"),
        (b"\x89PNG\r\n\x1a\n\xff\xfe", "not UTF-8"),
    ],
)
def test_report_command_rejects_unusable_results_in_one_line(tmp_path, content, needle):
    path = tmp_path / "r.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    proc = conform("report", path, "--json", tmp_path / "s.json")
    assert_one_line_error(proc, str(path), needle)
    assert not (tmp_path / "s.json").exists()


@pytest.mark.gates
def test_report_command_needs_an_output_and_warns_on_torn_lines(tmp_path):
    assert_one_line_error(conform("report", MIXED), "at least one of --html")
    path = tmp_path / "r.jsonl"
    path.write_text(MIXED.read_text("utf-8") + '{"id": "torn', encoding="utf-8")
    proc = conform("report", path, "--markdown", tmp_path / "s.md")
    assert_clean(proc, 0)
    assert "1 line(s) are not result records" in proc.stderr
    assert "**14 cases**" in (tmp_path / "s.md").read_text("utf-8")
