"""`aclnn-conform run`: results file, resume, shards, filters, jobs, fail-fast, exit codes, summary.

Expected case sets are computed from the plans (plan_suite / build), not from the filter code.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from aclnn_conformance.cli.main import main as cli_main
from aclnn_conformance.conformance.cases.generate import build, plan_op, plan_suite
from aclnn_conformance.conformance.run import runner as runner_mod
from aclnn_conformance.conformance.spec.registry import default_registry
from click.testing import CliRunner

from tests.support.runcli import (
    assert_clean,
    assert_one_line_error,
    by_id,
    conform,
    read_jsonl,
)
from tests.support.wrong_plugin import install_wrong_backends

REG = default_registry()
STATS = {"n", "compared", "max_abs", "max_rel", "mere", "mare", "max_ulp", "mismatches",
         "mismatch_ratio", "nan_mismatches", "inf_mismatches"}  # fmt: skip


@pytest.fixture(scope="module")
def suite():
    return _cached_plan_suite(REG)


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    return install_wrong_backends(tmp_path_factory.mktemp("plugin"))


_PLANNED: dict = {}


def _cached_plan_suite(registry, ops=None, products=None, profile="default"):
    """plan_suite, memoised per selection: the filters are what these tests exercise."""
    key = (tuple(ops or ()), tuple(products or ()), profile)
    if key not in _PLANNED:
        _PLANNED[key] = plan_suite(registry, ops, products, profile)
    return list(_PLANNED[key])


@pytest.fixture(scope="module")
def in_process():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner_mod, "plan_suite", _cached_plan_suite)
        yield


def _listed(*args: str) -> list[str]:
    """`aclnn-conform cases list ARGS` in this process (same selection code as `run`)."""
    result = CliRunner().invoke(cli_main, ["cases", "list", *args])
    assert result.exit_code == 0, result.output
    ids = result.stdout.split()
    assert result.stderr.strip().endswith(f"{len(ids)} cases")
    return ids


# -- the whole default suite, once ----------------------------------------------------------------


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("full") / "results.jsonl"
    proc = conform("run", "--results", results, "-q", timeout=600)
    return proc, results


@pytest.mark.gates
def test_the_full_default_suite_passes_against_the_reference(full_run, suite):
    proc, results = full_run
    assert_clean(proc, 0)
    lines = results.read_text(encoding="utf-8").splitlines()
    recs = read_jsonl(results)  # one JSON object per line, every line
    assert len(lines) == len(recs) == len(suite)
    ids = by_id(recs)  # each id once
    assert list(ids) == [p.id for _, p in suite]  # in suite order
    assert Counter(r["verdict"] for r in recs) == {"pass": len(suite)}
    assert proc.stdout.strip().endswith(f"results: {results}")  # quiet: no summary when all pass


@pytest.mark.gates
def test_every_record_has_the_design_fields(full_run, suite):
    _, results = full_run
    recs = read_jsonl(results)
    plans = {p.id: (s, p) for s, p in suite}
    for rec in recs:
        spec, plan = plans[rec["id"]]
        assert rec["op"] == spec.name and rec["product"] == plan.product
        assert rec["kind"] == plan.kind
        tensors = {n: a.dtype for n, a in plan.args if hasattr(a, "shape")}
        assert rec["dtypes"] == tensors
        assert rec["clauses"][: len(plan.clauses)] == [f"{spec.name}/{c}" for c in plan.clauses]
        assert rec["expected_status"] == plan.expected_status
        assert rec["actual_status"] == rec["oracle_status"] == plan.expected_status
        assert rec["verdict"] == "pass" and rec["reason"] == ""
        assert rec["backend"] == "reference"
        assert rec["backend_version"].startswith("aclnn-conformance reference")
        assert rec["tool_version"] and rec["spec_sha256"] == spec.sha256
        assert rec["seed"] == 0
        assert rec["durations"]["total"] > 0
        assert {"oracle", "backend"} <= set(rec["durations"])
        assert rec["replay"] == f"aclnn-conform replay '{rec['id']}' --seed 0"
        shapes = {k: a.shape for k, a in plan.args if hasattr(a, "shape")}
        written = plan.kind == "positive" and not any(0 in s for s in shapes.values())
        # a ruled output of empty inputs (a loss's mean of nothing) may still hold a value
        held = plan.kind == "positive" and any(
            0 not in s for k, s in shapes.items() if spec.param(k).is_output
        )
        judged = rec.get("comparisons", {}).values()
        if held and not written:
            pass
        elif written and judged and all("relations" in c for c in judged):
            # every output random, judged by its relations: no ulp statistics to take
            assert all(c["passed"] and c["relations"] for c in judged), rec["id"]
            assert "stats" not in rec
        elif written:
            assert set(rec["stats"]) >= STATS, rec["id"]
            assert rec["stats"]["max_ulp"] == 0 and rec["stats"]["mismatches"] == 0
            # the worst elements are measured against the exact values: the reference's own
            # rounded outputs are 0 ulp from them
            assert all(w["ulp"] == 0 for w in rec["worst"])
        else:
            assert "stats" not in rec
    meta = json.loads(Path(str(results) + ".meta.json").read_text(encoding="utf-8"))
    assert meta["backend"] == "reference" and meta["cases"] == len(recs) == meta["run"]


# -- resume ---------------------------------------------------------------------------------------

RESUME_SEL = ("--op", "hardshrink_backward", "--product", "atlas-training", "-k", "/f16/")


def _progress_total(stderr: str) -> int:
    totals = {int(m.group(1)) for m in re.finditer(r"^\d+/(\d+) cases,", stderr, re.M)}
    assert len(totals) == 1, stderr
    return totals.pop()


@pytest.fixture(scope="module")
def resume_base(tmp_path_factory):
    results = tmp_path_factory.mktemp("resume") / "complete.jsonl"
    assert_clean(conform("run", "--results", results, "-q", *RESUME_SEL), 0)
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) > 20
    return lines


@pytest.mark.gates
def test_resume_runs_only_the_missing_cases(resume_base, tmp_path):
    results = tmp_path / "r.jsonl"
    results.write_text("".join(resume_base[:12]), encoding="utf-8")
    proc = conform("run", "--results", results, "--resume", *RESUME_SEL)
    assert_clean(proc, 0)
    assert _progress_total(proc.stderr) == len(resume_base) - 12
    text = results.read_text(encoding="utf-8")
    assert text.startswith("".join(resume_base[:12]))  # earlier records kept as they were
    recs = read_jsonl(results)
    assert [r["id"] for r in recs] == [json.loads(line)["id"] for line in resume_base]


@pytest.mark.gates
def test_resume_after_a_torn_last_line_records_every_case_once(resume_base, tmp_path):
    results = tmp_path / "r.jsonl"
    torn = resume_base[12][: len(resume_base[12]) // 2]
    results.write_text("".join(resume_base[:12]) + torn, encoding="utf-8")
    proc = conform("run", "--results", results, "--resume", *RESUME_SEL)
    assert_clean(proc, 0)
    assert _progress_total(proc.stderr) == len(resume_base) - 12
    good = []
    for line in results.read_text(encoding="utf-8").splitlines():
        try:
            good.append(json.loads(line)["id"])
        except json.JSONDecodeError:
            continue  # the torn line itself may stay
    assert Counter(good) == Counter(json.loads(line)["id"] for line in resume_base)


@pytest.mark.gates
def test_without_resume_the_results_file_starts_afresh(resume_base, tmp_path):
    results = tmp_path / "r.jsonl"
    results.write_text("".join(resume_base[:5]) + '{"id": "stale", "verdict": "fail"}\n')
    assert_clean(conform("run", "--results", results, "-q", *RESUME_SEL), 0)
    assert [r["id"] for r in read_jsonl(results)] == [json.loads(x)["id"] for x in resume_base]


# -- shards ---------------------------------------------------------------------------------------


@pytest.mark.gates
def test_three_shards_cover_exactly_the_unsharded_set(tmp_path, in_process):
    sel = ("--op", "softplus_backward", "--product", "atlas-training", "--max-cases", "100")
    whole = _listed(*sel)
    shards = []
    for i in (1, 2, 3):
        results = tmp_path / f"shard{i}.jsonl"
        assert_clean(conform("run", "--results", results, "-q", "--shard", f"{i}/3", *sel), 0)
        shards.append([r["id"] for r in read_jsonl(results)])
    assert all(shards)
    assert sorted(sum(shards, [])) == sorted(whole)  # disjoint and complete
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


# -- filters --------------------------------------------------------------------------------------


def test_filter_op_accepts_any_name_of_the_op(in_process):
    want = [p.id for p in plan_op(REG.get("elu_backward"))]  # planned here, not by the CLI
    assert _listed("--op", "elu_backward") == want
    assert _listed("--op", "aclnnEluBackward") == want


def test_filter_product_keeps_only_that_product(in_process):
    ids = _listed("--product", "atlas-inference")
    assert ids and all(i.split("/")[1] == "atlas-inference" for i in ids)
    # ops without that product contribute nothing
    assert not any(i.startswith(("hardshrink_backward/", "softplus_backward/")) for i in ids)


@pytest.mark.gates
def test_filter_product_selects_a_subset_of_the_suite(suite, in_process):
    ids = _listed("--product", "atlas-a2")
    assert set(ids) == {p.id for _, p in suite if p.product == "atlas-a2"}


def test_filter_dtype_keeps_cases_with_a_tensor_of_that_dtype(in_process):
    # two ops (the whole suite: test_filter_product_selects_a_subset_of_the_suite's tier)
    ops = ["gelu_backward_v2", "nll_loss"]
    ids = _listed("--dtype", "bf16", *(a for op in ops for a in ("--op", op)))
    want = [p.id for op in ops for p in plan_op(REG.get(op)) if "BF16" in p.dtypes()]
    assert ids and sorted(ids) == sorted(want)
    assert _listed("--dtype", "BFLOAT16", "--op", "gelu_backward_v2") == [
        i for i in ids if i.startswith("gelu_backward_v2/")
    ]


def test_filter_dtype_accepts_the_short_names_used_in_case_ids(in_process):
    assert _listed("--dtype", "f16", "--op", "gelu_backward_v2") == _listed(
        "--dtype", "FLOAT16", "--op", "gelu_backward_v2"
    )


@pytest.mark.gates
def test_filter_clause_by_id_and_by_qualified_name(suite, in_process):
    ids = _listed("--clause", "null-ptr")
    assert ids == [p.id for _, p in suite if "null-ptr" in p.clauses]
    assert {i.split("/")[0] for i in ids} == set(REG.names())
    assert _listed("--clause", "elu_backward/null-ptr") == [
        i for i in ids if i.startswith("elu_backward/")
    ]
    points = _listed("--clause", "softplus_backward/at-threshold")
    assert points and all(i.endswith("/point=at-threshold") for i in points)


def test_filter_clause_selects_cases_exercising_a_formula_branch(in_process):
    pairs = plan_suite(REG, ["hardshrink_backward"])
    want = [p.id for s, p in pairs if "dead-zone" in build(s, p, 0).clauses]
    assert want
    assert _listed("--clause", "hardshrink_backward/dead-zone") == want


def test_filter_keyword(suite, in_process):
    ids = _listed("-k", "point=x-zero")
    assert ids == [p.id for _, p in suite if "point=x-zero" in p.id]


def test_filter_max_cases_keeps_the_static_clauses_covered(suite, in_process):
    ids = _listed("--op", "hardshrink_backward", "--max-cases", "25")
    assert len(ids) == 25
    plans = {p.id: p for s, p in suite if s.name == "hardshrink_backward"}
    covered = {c for i in ids for c in plans[i].clauses}
    assert covered == {c for p in plans.values() for c in p.clauses}
    assert ids == [i for i in plans if i in set(ids)]  # suite order


@pytest.mark.gates
def test_run_selects_what_cases_list_selects(tmp_path, suite, in_process):
    sel = ("--op", "leaky_relu_backward", "--product", "atlas-inference", "--dtype", "fp16",
           "-k", "values=")  # fmt: skip
    want = [
        p.id
        for s, p in suite
        if s.name == "leaky_relu_backward"
        and p.product == "atlas-inference"
        and "FLOAT16" in p.dtypes()
        and "values=" in p.id
    ]
    assert want and _listed(*sel) == want
    results = tmp_path / "r.jsonl"
    assert_clean(conform("run", "--results", results, "-q", *sel), 0)
    assert [r["id"] for r in read_jsonl(results)] == want


# -- jobs, fail-fast, summary, progress -----------------------------------------------------------

ULP_SEL = ("--op", "hardshrink_backward", "--product", "atlas-a2", "--max-cases", "80")


@pytest.fixture(scope="module")
def ulp_runs(plugin_env, tmp_path_factory):
    root = tmp_path_factory.mktemp("ulp")
    out = {}
    for jobs in (1, 2):
        results = root / f"jobs{jobs}.jsonl"
        quiet = ("-q",) if jobs == 2 else ()
        proc = conform("run", "--backend", "wrong-ulp", "--results", results, "--jobs", jobs,
                       "--seed", 7, *quiet, *ULP_SEL, env=plugin_env)  # fmt: skip
        assert_clean(proc, 1)
        out[jobs] = (proc, read_jsonl(results))
    return out


@pytest.mark.gates
def test_jobs_2_gives_the_same_verdicts_as_jobs_1(ulp_runs):
    one, two = ulp_runs[1][1], ulp_runs[2][1]
    assert len(one) == 80
    assert [r["id"] for r in one] == [r["id"] for r in two]
    for a, b in zip(one, two, strict=True):
        assert (a["verdict"], a["reason"]) == (b["verdict"], b["reason"]), a["id"]
        assert a.get("stats") == b.get("stats") and a.get("worst") == b.get("worst")
    assert {"pass", "fail"} <= {r["verdict"] for r in one}


def test_summary_prints_the_matrix_failing_clauses_and_replay_lines(ulp_runs):
    proc, recs = ulp_runs[1]
    out = proc.stdout
    assert "op x product x dtype" in out
    # rows: op x product x column, where the column is the output dtype (short name) or `neg`
    shorts = {"FLOAT": "f32", "FLOAT16": "f16", "BF16": "bf16", "DOUBLE": "f64",
              "COMPLEX64": "c64", "COMPLEX128": "c128"}  # fmt: skip
    matrix = Counter()
    for r in recs:
        tag = r["dtype_tag"]  # short dtypes in parameter order, as in the case ids
        if r["kind"] == "positive":
            assert tag == r["id"].split("/")[2]
        col = "neg" if r["kind"] == "negative" else shorts[r["out_dtype"]]
        matrix[(r["op"], r["product"], col, r["verdict"] == "pass")] += 1
    for (op, product, col, passed), n in matrix.items():
        if not passed:
            failed = n
            ok = matrix.get((op, product, col, True), 0)
            line = re.search(rf"^{op}\s+{product}\s+{re.escape(col)}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$",
                             out, re.M)  # fmt: skip
            assert line, (op, product, col)
            assert (int(line.group(1)), int(line.group(2))) == (ok, failed)
    assert "failing clauses" in out
    failing = [r for r in recs if r["verdict"] == "fail"]
    clause_counts = Counter(c for r in failing for c in r["clauses"])
    for clause, n in clause_counts.items():
        assert f"  {clause}: {n}" in out
    assert f"of {len(failing)} failures" in out
    for r in failing[:20]:
        assert f"fail: {r['id']}: " in out
        assert f"    aclnn-conform replay '{r['id']}' --seed 7 --backend wrong-ulp" in out


def test_progress_is_plain_lines_when_not_a_tty(ulp_runs):
    proc, recs = ulp_runs[1]
    assert "\r" not in proc.stderr and "\x1b[" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert lines
    for line in lines:
        assert re.fullmatch(r"\d+/80 cases, \d+ failed, \d+ cases/s", line), line
    last = re.fullmatch(r"(\d+)/80 cases, (\d+) failed, .*", lines[-1])
    failed = sum(r["verdict"] in ("fail", "error") for r in recs)
    assert (int(last.group(1)), int(last.group(2))) == (80, failed)
    assert len(lines) <= 25  # about every 5 %
    assert ulp_runs[2][0].stderr == ""  # -q: no progress at all


@pytest.mark.gates
@pytest.mark.parametrize("jobs", [1, 2])
def test_fail_fast_stops_after_the_first_failure(plugin_env, tmp_path, jobs):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", "wrong-ulp", "--results", results, "--fail-fast",
                   "--jobs", jobs, "-q", *ULP_SEL, env=plugin_env)  # fmt: skip
    assert_clean(proc, 1)
    recs = read_jsonl(results)
    verdicts = [r["verdict"] for r in recs]
    assert verdicts[-1] == "fail"
    assert "fail" not in verdicts[:-1]
    assert len(recs) < 80


# -- exit codes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--op", "no_such_op"], "unknown operator 'no_such_op'"),
        (["--shard", "0/3"], "--shard '0/3'"),
        (["--shard", "4/3"], "--shard '4/3'"),
        (["--shard", "one/three"], "expected i/n"),
        (["--backend", "no_such_backend"], "unknown backend 'no_such_backend'"),
        (["--dtype", "FLOAT33"], "unknown dtype 'FLOAT33'"),
        (["--product", "atlas-z9"], "unknown product"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path, args, needle):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--results", results, *args)
    assert_one_line_error(proc, needle)
    assert not results.exists()


@pytest.mark.gates
def test_exit_code_1_on_failures_and_0_when_all_pass(plugin_env, tmp_path):
    sel = ("--op", "elu_backward", "--product", "atlas-training", "-k", "/f16/isResult=0/values=")
    failing = conform("run", "--backend", "wrong-ulp", "--results", tmp_path / "a.jsonl", "-q",
                      *sel, env=plugin_env)  # fmt: skip
    assert_clean(failing, 1)
    passing = conform("run", "--results", tmp_path / "b.jsonl", "-q", *sel)
    assert_clean(passing, 0)
