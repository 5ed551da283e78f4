"""`aclnn-conform replay`: one failing case, rebuilt from its id and seed, shows the same numbers."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.support.runcli import assert_clean, assert_one_line_error, by_id, conform, read_jsonl
from tests.support.wrong_plugin import install_wrong_backends

SEED = 5
SAME = ("verdict", "reason", "expected_status", "oracle_status", "actual_status", "status_match",
        "clauses", "dtypes", "layouts", "message", "kind", "op", "product", "seed")  # fmt: skip


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return install_wrong_backends(tmp_path_factory.mktemp("plugin"))


@pytest.fixture(scope="module")
def failing_runs(env, tmp_path_factory):
    """Two runs with wrong backends: output values (2 ulp) and status codes (161002)."""
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for backend, sel in (
        ("wrong-ulp", ("--op", "elu_backward", "--product", "atlas-a2", "-k", "values=")),
        ("wrong-status", ("--op", "gelu_backward_v2", "--product", "atlas-a2", "-k", "null-ptr")),
    ):
        results = root / f"{backend}.jsonl"
        proc = conform("run", "--backend", backend, "--seed", SEED, "--results", results, "-q",
                       *sel, env=env)  # fmt: skip
        assert_clean(proc, 1)
        out[backend] = by_id(read_jsonl(results))
    return out


def _replay_json(env, *args) -> dict:
    proc = conform("replay", *args, "--json", env=env)
    assert_clean(proc, (0, 1))
    return json.loads(proc.stdout)


@pytest.mark.gates
def test_replay_of_a_failing_case_reproduces_its_stats_and_worst_elements(env, failing_runs):
    failing = [r for r in failing_runs["wrong-ulp"].values() if r["verdict"] == "fail"]
    assert len(failing) >= 4
    for rec in failing[-1:]:
        got = _replay_json(env, rec["id"], "--seed", SEED, "--backend", "wrong-ulp")
        assert got["id"] == rec["id"]
        for key in SAME:
            assert got[key] == rec[key], key
        assert got["stats"] == rec["stats"]
        assert got["worst"] == rec["worst"]
        assert got["comparisons"] == rec["comparisons"]
        assert got["stats"]["max_ulp"] == 2


@pytest.mark.gates
def test_replay_of_a_status_failure_reproduces_the_statuses(env, failing_runs):
    recs = failing_runs["wrong-status"]
    assert len(recs) == 4 and {r["verdict"] for r in recs.values()} == {"fail"}
    for rec in list(recs.values())[1:2]:
        got = _replay_json(env, rec["id"], "--seed", SEED, "--backend", "wrong-status")
        for key in SAME:
            assert got[key] == rec[key], key
        assert (got["expected_status"], got["actual_status"]) == (161001, 161002)


@pytest.mark.gates
def test_the_recorded_replay_line_runs_as_printed(env, failing_runs):
    rec = next(r for r in failing_runs["wrong-ulp"].values() if r["verdict"] == "fail")
    argv = shlex.split(rec["replay"])
    assert argv[:3] == ["aclnn-conform", "replay", rec["id"]]
    proc = conform(*argv[1:], "--json", env=env)
    assert_clean(proc, 1)
    got = json.loads(proc.stdout)
    assert (got["stats"], got["worst"], got["verdict"]) == (rec["stats"], rec["worst"], "fail")


@pytest.mark.gates
def test_another_seed_replays_different_values(env, failing_runs):
    rec = next(r for r in failing_runs["wrong-ulp"].values() if r["verdict"] == "fail")
    got = _replay_json(env, rec["id"], "--seed", SEED + 1, "--backend", "wrong-ulp")
    assert got["worst"] != rec["worst"]


@pytest.mark.gates
def test_plain_replay_shows_inputs_statuses_worst_elements_clauses_and_verdict(env, failing_runs):
    rec = next(r for r in failing_runs["wrong-ulp"].values() if r["verdict"] == "fail")
    proc = conform("replay", rec["id"], "--seed", SEED, "--backend", "wrong-ulp", env=env)
    assert_clean(proc, 1)
    out = proc.stdout
    assert f"{rec['id']}  (seed {SEED})" in out
    assert "clauses: " + ", ".join(rec["clauses"]) in out
    for name in rec["dtypes"]:
        if name != "gradInput":
            assert f"  {name}: {rec['dtypes'][name]} shape " in out
    assert "  alpha: FLOAT scalar" in out and "  isResult: " in out
    assert "expected 0  actual 0" in out
    assert "worst elements" in out
    worst = rec["worst"][0]
    assert f"    {worst['index']}: {worst['expected']} / {worst['actual']}, 2.0 ulp" in out
    assert f"max_ulp: {rec['stats']['max_ulp']}" in out
    assert f"  fail: {rec['reason']}" in out


@pytest.mark.gates
def test_replay_of_a_passing_case_exits_0(env):
    proc = conform("replay", "softplus_backward/atlas-training/f32/-/point=at-threshold")
    assert_clean(proc, 0)
    assert "  pass" in proc.stdout


@pytest.mark.gates
@pytest.mark.parametrize(
    ("case_id", "needle"),
    [
        ("leaky_relu_backward/atlas-a2/f16/selfIsResult=0/values=nope", "no generated case"),
        ("no_such_op/atlas-a2/f16/x", "unknown operator 'no_such_op'"),
        ("leaky_relu_backward/atlas-z9/f16/x", "has no product 'atlas-z9'"),
        ("just-a-word", "is not a case id"),
    ],
)
def test_replay_of_an_unknown_id_exits_2_with_one_line(case_id, needle):
    assert_one_line_error(conform("replay", case_id, "--seed", SEED), needle)


def test_replay_with_an_unknown_backend_exits_2_with_one_line():
    proc = conform("replay", "softplus_backward/atlas-training/f32/-/point=x-zero",
                   "--backend", "no_such_backend")  # fmt: skip
    assert_one_line_error(proc, "unknown backend 'no_such_backend'")
