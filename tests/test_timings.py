"""Device timings (issue 28, point 5; docs/timings.md): the aclnn backend times phase 1 and phase
2 of each case, the Result carries the fields, the reports show them, `diff` finds slower ones.

The TEST DOUBLE makes every GetWorkspaceSize take ACLNN_TEST_DOUBLE_PHASE1_US and every kernel
ACLNN_TEST_DOUBLE_KERNEL_US of "device" time (the stream is busy that long; ACL events record
when the stream reaches them), so each measured time has a known lower bound; the upper bounds
are loose (this machine's two cores are shared), the lower ones exact.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.judge.result import Result
from aclnn_conformance.conformance.run.backend import BackendError
from aclnn_conformance.conformance.run.backends.aclnn_backend import AclnnBackend
from aclnn_conformance.reports.casetable import FIELDS, case_payload
from aclnn_conformance.reports.diff import diff_runs, render_markdown
from aclnn_conformance.reports.jsonreport import summary

from tests.aclnn_double.calls import INVALID, T, leaky
from tests.support.runcli import assert_clean, assert_one_line_error, conform, read_jsonl

pytest_plugins = ["tests.aclnn_double.fixtures"]  # lib_dir, backend, counter

KERNEL_US, PHASE1_US = 20_000, 4_000


@pytest.fixture
def slow(monkeypatch):
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_KERNEL_US", str(KERNEL_US))
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_PHASE1_US", str(PHASE1_US))


def call():
    return leaky(T([1.0, -2.0, 0.5]), T([3.0, -1.0, -0.25]))


def test_phase_1_and_the_kernel_are_timed_with_events_over_the_timed_runs(lib_dir, counter, slow):
    b = AclnnBackend(lib_dir=str(lib_dir), warmup="2", time_repeat="3")  # strings, as the CLI
    try:
        p1, p2 = counter("phase1_calls"), counter("phase2_calls")
        got = b.execute(call())
        # 2 warm-up calls and 3 timed ones, each a whole phase 1 + phase 2
        assert (counter("phase1_calls") - p1, counter("phase2_calls") - p2) == (5, 5)
        assert counter("events_live") == 2  # made once for the stream
        t = got.timings
        assert (t["timed_runs"], t["warmup_runs"], t["phase2_clock"]) == (3, 2, "event")
        assert len(t["phase1_samples_us"]) == len(t["phase2_samples_us"]) == 3
        assert all(PHASE1_US <= x < PHASE1_US + 200_000 for x in t["phase1_samples_us"])
        # the events read the stream's own clock: the kernel's time and nothing of the host's
        assert all(KERNEL_US <= x < KERNEL_US + 5_000 for x in t["phase2_samples_us"])
        assert t["phase2_us"] == sorted(t["phase2_samples_us"])[1]  # the median of three
        assert t["phase1_us"] == sorted(t["phase1_samples_us"])[1]
        # the judged call is the first timed one: the outputs are leaky_relu_backward's
        slope = np.float32(0.01)
        want = np.where(np.float32([3.0, -1.0, -0.25]) > 0, np.float32([1.0, -2.0, 0.5]),
                        np.float32([1.0, -2.0, 0.5]) * slope)  # fmt: skip
        assert np.array_equal(got.outputs["out"], want)
    finally:
        b.close()
    assert counter("events_live") == 0


def test_without_events_phase_2_is_host_time_around_the_sync(lib_dir, slow, monkeypatch):
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_NO_EVENTS", "1")
    b = AclnnBackend(lib_dir=str(lib_dir))
    try:
        t = b.execute(call()).timings
    finally:
        b.close()
    assert (t["phase2_clock"], t["timed_runs"], t["warmup_runs"]) == ("host", 1, 0)
    assert t["phase2_us"] >= KERNEL_US  # the sync waited for the kernel


def test_a_call_refused_in_phase_1_has_a_phase_1_time_only(lib_dir, slow):
    b = AclnnBackend(lib_dir=str(lib_dir), time_repeat=2)
    try:
        bad = leaky(T([1.0], "INT32"), T([1.0], "INT32"))
        got = b.execute(bad)
    finally:
        b.close()
    assert got.status == INVALID
    assert set(got.timings) == {"phase1_us", "phase1_samples_us", "timed_runs", "warmup_runs"}
    assert all(x >= PHASE1_US for x in got.timings["phase1_samples_us"])


def test_repeated_calls_of_an_in_place_op_see_the_cases_inputs(lib_dir, monkeypatch):
    """The timed calls after the judged one run on copies: an op that writes its input (the
    double's injected bug) is judged on what the first call did, never on a later one's."""
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_WRITES_INPUT", "1")
    b = AclnnBackend(lib_dir=str(lib_dir), time_repeat=3)
    try:
        c = call()
        got = b.execute(c)
    finally:
        b.close()
    assert c.args["self"].storage[0] == -12345.0  # the judged call's own write came back
    assert np.array_equal(got.outputs["out"][1:], np.float32([-2.0 * 0.01, 0.5 * 0.01]))


@pytest.mark.parametrize("options, needle", [({"warmup": -1}, "--warmup -1"),
                                             ({"time_repeat": 0}, "--time-repeat 0"),
                                             ({"time_repeat": "2.5"}, "--time-repeat '2.5'")])  # fmt: skip
def test_a_bad_count_is_one_message(lib_dir, options, needle):
    with pytest.raises(BackendError, match=needle):
        AclnnBackend(lib_dir=str(lib_dir), **options)


def test_timing_fields_are_typed_fields_of_the_record():
    rec = Result("x/y/z", "pass", phase1_us=12.5, phase2_us=2000.0, phase2_clock="event",
                 timed_runs=3, warmup_runs=1, phase1_samples_us=[12.0, 12.5, 13.0],
                 phase2_samples_us=[1990.0, 2000.0, 2100.0], device=2)  # fmt: skip
    back = Result.from_json(rec.to_json())
    assert back == rec and not back.extra
    assert (back.phase2_us, back.phase2_clock, back.device) == (2000.0, "event", 2)


# -- the whole path: run, reports, diff ----------------------------------------------------------

SELECT = ["--op", "leaky_relu_backward", "--product", "atlas-a2", "-k", "/f32/selfIsResult=0/"]


def run_timed(tmp_path: Path, lib_dir: Path, name: str, kernel_us: int, *args: str) -> Path:
    results = tmp_path / f"{name}.jsonl"
    env = {**os.environ, "ACLNN_TEST_DOUBLE_KERNEL_US": str(kernel_us)}
    proc = conform("run", "--backend", "aclnn", "--lib-dir", lib_dir, *SELECT, "--max-cases", "8",
                   "--results", results, "-q", *args, env=env, timeout=300)  # fmt: skip
    assert_clean(proc, 0)
    return results


@pytest.mark.gates
def test_a_run_records_the_timings_and_the_reports_show_them(tmp_path, lib_dir):
    results = run_timed(tmp_path, lib_dir, "a", 3_000, "--warmup", "1", "--time-repeat", "2")
    recs = read_jsonl(results)
    kernels = [r for r in recs if r.get("actual_status") == 0]  # negative cases: no kernel
    assert kernels
    for r in recs:
        assert (r["timed_runs"], r["warmup_runs"], r["device"]) == (2, 1, 0)
        assert len(r["phase1_samples_us"]) == 2
    for r in kernels:
        assert r["phase2_clock"] == "event" and all(x >= 3_000 for x in r["phase2_samples_us"])
        assert "--warmup" not in r["replay"]  # timing options do not decide a verdict
    out = tmp_path / "rep"
    proc = conform("report", results, "--junit", f"{out}.xml", "--json", f"{out}.json")
    assert_clean(proc, 0)
    want = {r["id"]: r for r in recs}
    for tc in ET.parse(f"{out}.xml").getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        r = want[tc.get("name")]
        assert float(props["phase1_us"]) == r["phase1_us"]
        assert props.get("phase2_us") == (str(r["phase2_us"]) if "phase2_us" in r else None)
        assert props["device"] == "0"
    t = json.loads(Path(f"{out}.json").read_text())["timings"]
    assert (t["timed"], t["devices"]) == (len(recs), {"0": len(recs)})
    assert t["phase2_us"]["max"] == max(r["phase2_us"] for r in kernels)
    assert t["slowest"][0]["phase2_us"] == t["phase2_us"]["max"]
    # the HTML case table carries each case's device and phases for its drill-down
    table = case_payload([Result.from_json(r) for r in recs])
    col = {f: i for i, f in enumerate(FIELDS)}
    for row in table["cases"]:
        r = want[row[col["id"]]]
        assert row[col["dev"]] == 0
        if "phase2_us" in r:  # rounded for the page, to a few significant digits
            assert row[col["p2"]] == pytest.approx(r["phase2_us"], rel=1e-3)
        else:
            assert row[col["p2"]] is None
        detail = table["details"][row[col["detail"]]]  # timed twice: a detail for every case
        assert detail["tm"] == [r.get("phase2_clock"), 2, 1]


@pytest.mark.gates
def test_diff_finds_the_cases_whose_kernel_got_slower_and_can_gate_on_them(tmp_path, lib_dir):
    old = run_timed(tmp_path, lib_dir, "old", 2_000)
    new = run_timed(tmp_path, lib_dir, "new", 7_000)
    # The double sleeps 2 ms, then 7 ms (x3.5); a loaded machine overshoots a sleep, and can
    # slow phase 1 (the workspace query) as much, so what the diff must find is computed from the
    # recorded times of both phases (the defaults: x1.5 and 20 us slower)
    phases = ("phase1_us", "phase2_us")
    o = {(r["id"], p): r[p] for r in read_jsonl(old) for p in phases if p in r}
    n = {(r["id"], p): r[p] for r in read_jsonl(new) for p in phases if p in r}
    want = {k for k in n if k in o and n[k] > 1.5 * o[k] and n[k] - o[k] >= 20}
    assert {p for _, p in want} >= {"phase2_us"}, (o, n)
    proc = conform("diff", old, new, "--markdown", tmp_path / "d.md")
    assert_clean(proc, 0)  # listed, not a failure without --fail-on-slower
    plural = "s" if len(want) != 1 else ""
    assert f"{len(want)} device time{plural} slower than x1.5" in proc.stdout
    proc = conform("diff", old, new, "--fail-on-slower")
    assert_clean(proc, 1)
    assert "--fail-on-slower fails the diff" in proc.stderr
    # a threshold above the largest factor lets it pass, and so does a floor above the largest gap
    top = max(n[k] / o[k] for k in want)
    gap = max(n[k] - o[k] for k in want)
    assert_clean(
        conform("diff", old, new, "--fail-on-slower", "--time-threshold", f"{top * 1.01:.3f}"), 0
    )
    assert_clean(conform("diff", old, new, "--fail-on-slower", "--time-floor", f"{gap + 1:.0f}"), 0)
    d = diff_runs(read_jsonl(old), read_jsonl(new))
    assert {(m.id, m.phase) for m in d.slower} == want
    assert all(
        m.factor == pytest.approx(n[m.id, m.phase] / o[m.id, m.phase], rel=1e-3) for m in d.slower
    )
    assert "Device times slower" in (tmp_path / "d.md").read_text()


def rec(cid: str, p1=None, p2=None, clock="event") -> Result:
    return Result(cid, "pass", phase1_us=p1, phase2_us=p2, phase2_clock=clock if p2 else None)


def test_a_slower_time_needs_both_the_factor_and_the_floor():
    old = [rec("a", 10, 100), rec("b", 10, 100), rec("c", 100, 100), rec("d", 10, 100, "host"),
           rec("e", 10, None), rec("f")]  # fmt: skip
    new = [rec("a", 10, 160), rec("b", 10, 149), rec("c", 100 * 1.6, 100), rec("d", 10, 900),
           rec("e", 10, 500), rec("f", 10, 10)]  # fmt: skip
    d = diff_runs(old, new, time_threshold=1.5, time_floor_us=20)
    # a: 160 > 150 and +60 >= 20; b: 149 < 150; c: phase 1 160 > 150, +60; d: another clock;
    # e: no old phase 2; f: not timed before
    assert [(m.id, m.phase, m.old, m.new) for m in d.slower] == [
        ("a", "phase2_us", 100, 160),
        ("c", "phase1_us", 100, 160.0),
    ]
    assert d.timed == 5  # a, b, c, d (phase 1), e (phase 1)
    d = diff_runs(old, new, time_threshold=1.5, time_floor_us=61)
    assert d.slower == []  # +60 is below the floor
    assert "device time" not in render_markdown(diff_runs([rec("f")], [rec("f")]))


@pytest.mark.gates
@pytest.mark.parametrize("args, needles", [
    (["run", "--backend", "torch", "--warmup", "2"], ["--warmup does not apply to --backend torch"]),
    (["run", "--backend", "reference", "--time-repeat", "3"], ["--time-repeat does not apply"]),
])  # fmt: skip
def test_timing_options_of_a_backend_that_does_not_time_are_refused(tmp_path, args, needles):
    assert_one_line_error(conform(*args, "--results", tmp_path / "r.jsonl"), *needles)


@pytest.mark.gates
@pytest.mark.parametrize("args", [["diff", "a", "b", "--time-threshold", "0.5"],
                                  ["diff", "a", "b", "--time-floor", "-1"],
                                  ["run", "--time-repeat", "0"], ["run", "--warmup", "-1"]])  # fmt: skip
def test_a_bad_timing_option_is_a_usage_error(tmp_path, args):
    proc = conform(*args, cwd=tmp_path)
    assert_clean(proc, 2)
    assert "Traceback" not in proc.stderr and "Error" in proc.stderr


def test_summary_json_has_no_timings_section_without_timed_records():
    assert "timings" not in summary([Result("a/b/c", "pass")])


@pytest.mark.gates
def test_replay_shows_the_device_and_its_timing(lib_dir):
    """replay judges on the first device of a list, and shows that device's times."""
    env = {**os.environ, "ACLNN_TEST_DOUBLE_KERNEL_US": "4000"}
    proc = conform("replay", "leaky_relu_backward/atlas-a2/f32/selfIsResult=0/point=x-zero",
                   "--backend", "aclnn", "--lib-dir", lib_dir, "--device-id", "6,7",
                   "--time-repeat", "3", "--warmup", "1", env=env)  # fmt: skip
    assert_clean(proc, 0)
    lines = proc.stdout.splitlines()
    at = lines.index("device")
    assert lines[at + 1] == "  device 6"
    head, _, tail = lines[at + 2].partition("phase 2 ")
    assert head.startswith("  phase 1 ") and tail.endswith(
        "us (event clock); median of 3 call(s) after 1 warm-up"
    )
    assert float(tail.split(" us")[0].replace(",", "")) >= 4000
