"""Provenance: `merge` and `run --resume` refuse to join runs of different backend, backend
version, oracle, seed, spec or tool version unless forced, and then record the mix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from aclnn_conformance.conformance.judge import provenance as pv
from aclnn_conformance.conformance.judge.provenance import Conflict, Provenance, ProvenanceError
from aclnn_conformance.conformance.judge.result import Result

from tests.support.runcli import assert_clean, assert_one_line_error, conform, read_jsonl


def parts(records: list[dict], meta: dict) -> Provenance:
    """pv.from_parts of records given as their fields (a case id and verdict added)."""
    return pv.from_parts(
        [Result.from_json({"id": "c", "verdict": "pass", **r}) for r in records], meta
    )


RUN = ("run", "--op", "leaky_relu_backward", "--max-cases", "20", "-q")
H1, H2 = "1" * 64, "2" * 64


def meta_of(path: Path) -> dict:
    return json.loads(Path(str(path) + ".meta.json").read_text(encoding="utf-8"))


def write(path: Path, records: list[dict], meta: dict | None = None) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    if meta is not None:
        Path(str(path) + ".meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return path


def forge(src: Path, dst: Path, keep: int | None = None, **fields) -> Path:
    """A copy of a results file (its first `keep` records) with fields of records and meta set."""
    records = read_jsonl(src)[:keep]
    meta = meta_of(src)
    for rec in records:
        rec.update(fields)
    meta.update(fields)
    return write(dst, records, meta)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two real runs of the same cases: seed 0 (the default) and seed 5."""
    d = tmp_path_factory.mktemp("prov")
    ref, seed5 = d / "ref.jsonl", d / "seed5.jsonl"
    assert_clean(conform(*RUN, "--results", ref), 0)
    assert_clean(conform(*RUN, "--seed", "5", "--results", seed5), 0)
    return ref, seed5


# -- merge (CLI) ----------------------------------------------------------------------------


@pytest.mark.gates
def test_merge_refuses_another_seed(runs, tmp_path):
    ref, seed5 = runs
    out = tmp_path / "m.jsonl"
    line = assert_one_line_error(
        conform("merge", ref, seed5, "-o", out), "seed", "5 vs 0", str(ref), str(seed5), "--force"
    )
    assert "backend" not in line
    assert not out.exists()


def test_merge_force_records_the_mix(runs, tmp_path):
    ref, _ = runs
    # the first 10 cases again, labelled seed 5 but judged alike (a case judged differently
    # in two inputs is refused even with --force: test_merge_force_does_not_excuse_conflicts)
    half = forge(ref, tmp_path / "half.jsonl", keep=10, seed=5)  # the other 10 stay seed 0
    out = tmp_path / "m.jsonl"
    p = conform("merge", "--force", ref, half, "-o", out)
    assert_clean(p, 0)
    assert "warning:" in p.stderr and "seed 0, 5" in p.stderr
    meta = meta_of(out)
    assert meta["mixed"] == {"seed": [0, 5]}
    assert "seed" not in meta  # no single seed speaks for these records
    assert meta["backend"] == "reference"
    assert sorted({r["seed"] for r in read_jsonl(out)}) == [0, 5]


def test_merge_force_does_not_excuse_conflicts(runs, tmp_path):
    """Runs of two seeds judge the same case ids on other values: their statistics differ, so
    --force (which accepts the provenance mix) still refuses them, naming a case and both."""
    ref, seed5 = runs
    out = tmp_path / "m.jsonl"
    line = assert_one_line_error(conform("merge", "--force", ref, seed5, "-o", out),
                                 "judged differently", str(ref), str(seed5))  # fmt: skip
    first = {r["id"]: r for r in read_jsonl(ref)}
    later = {r["id"]: r for r in read_jsonl(seed5)}
    named = line.split("case ", 1)[1].split(" is judged", 1)[0]
    assert first[named]["stats"] != later[named]["stats"]
    assert not out.exists() and not Path(f"{out}.lock").exists()


def test_merge_force_when_later_file_replaces_all(runs, tmp_path):
    ref, _ = runs
    seed5 = forge(ref, tmp_path / "seed5.jsonl", seed=5)  # every case again, judged alike
    out = tmp_path / "m.jsonl"
    p = conform("merge", "--force", ref, seed5, "-o", out)
    assert_clean(p, 0)
    assert "inputs differ" in p.stderr and "seed 0, 5" in p.stderr
    meta = meta_of(out)
    assert meta["seed"] == 5 and "mixed" not in meta  # every merged record is seed 5
    assert {r["seed"] for r in read_jsonl(out)} == {5}


def test_merge_refuses_another_backend(runs, tmp_path):
    ref, _ = runs
    torch = forge(ref, tmp_path / "torch.jsonl", backend="torch")
    line = assert_one_line_error(
        conform("merge", ref, torch, "-o", tmp_path / "m.jsonl"),
        "in backend: 'torch' vs 'reference'",
        str(ref),
        str(torch),
    )
    assert line == (
        f"Error: merge: {torch} differs from {ref} in backend: 'torch' vs 'reference' "
        "(merge only runs of one backend, or pass --force to record the mix)"
    )
    half = forge(ref, tmp_path / "half.jsonl", keep=10, backend="torch")
    out = tmp_path / "f.jsonl"
    assert_clean(conform("merge", "--force", ref, half, "-o", out), 0)
    meta = meta_of(out)
    assert meta["mixed"] == {"backend": ["reference", "torch"]} and "backend" not in meta


def test_merge_of_a_mixed_file_is_refused(runs, tmp_path):
    ref, _ = runs
    mixed = tmp_path / "mixed.jsonl"
    half = forge(ref, tmp_path / "half.jsonl", keep=5, seed=5)
    assert_clean(conform("merge", "--force", ref, half, "-o", mixed), 0)
    assert_one_line_error(
        conform("merge", ref, mixed, "-o", tmp_path / "m.jsonl"), "seed", "mixed [0, 5] vs 0"
    )


def test_merge_names_the_op_whose_spec_changed(runs, tmp_path):
    ref, _ = runs
    old = forge(ref, tmp_path / "old.jsonl", spec_sha256=H1)
    line = assert_one_line_error(
        conform("merge", ref, old, "-o", tmp_path / "m.jsonl"), "spec_sha256", H1
    )
    assert "op leaky_relu_backward" in line


def test_merge_of_old_files_without_provenance(runs, tmp_path):
    """Records and metas lacking the fields (older files) are not a difference."""
    ref, _ = runs
    records = read_jsonl(ref)
    for r in records:
        for k in ("backend", "backend_version", "seed", "spec_sha256", "tool_version", "oracle"):
            r.pop(k, None)
    bare = write(tmp_path / "bare.jsonl", records[:10])  # no meta at all
    out = tmp_path / "m.jsonl"
    assert_clean(conform("merge", bare, ref, "-o", out), 0)
    assert "mixed" not in meta_of(out)


# -- conflicts / describe -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, a, b",
    [
        ("backend", "reference", "torch"),
        ("backend_version", "torch 2.13.0", "torch 2.12.0"),
        ("seed", 0, 5),
        ("tool_version", "0.1.0", "0.2.0"),
        ("oracle", "reference", "jax"),
    ],
)
def test_conflicts_each_scalar_field(name, a, b):
    base = {"id": "x", "verdict": "pass", "op": "elu_backward", name: a}
    pa = parts([base], {})
    pb = parts([{**base, name: b}], {})
    assert pv.conflicts(pa, pb) == [Conflict(name, a, b)]
    assert pv.conflicts(pa, pa) == []
    # the same from the metas (records without the field)
    ma, mb = parts([], {name: a}), parts([], {name: b})
    assert pv.conflicts(ma, mb) == [Conflict(name, a, b)]
    msg = pv.describe(pv.conflicts(pa, pb)[0], "a.jsonl", "b.jsonl")
    assert f"b.jsonl differs from a.jsonl in {name}: {b!r} vs {a!r}" in msg
    assert "\n" not in msg and "--force" in msg


def test_conflicts_spec_hash_per_op_and_registry():
    a = parts([{"op": "elu_backward", "spec_sha256": H1}], {"spec_sha256": "r1"})
    b = parts([{"op": "elu_backward", "spec_sha256": H2}], {"spec_sha256": "r2"})
    assert pv.conflicts(a, b) == [
        Conflict("spec_sha256", H1, H2, "op elu_backward"),
        Conflict("spec_sha256", "r1", "r2", "registry"),
    ]
    # other ops' hashes are not compared with each other; the registry hash still is
    c = parts([{"op": "gelu_backward_v2", "spec_sha256": H2}], {"spec_sha256": "r1"})
    assert pv.conflicts(a, c) == []
    msg = pv.describe(pv.conflicts(a, b)[1], "a", "b")
    assert "spec_sha256 of the whole spec registry: 'r2' vs 'r1'" in msg


def test_missing_fields_are_no_conflict():
    full = parts(
        [{"op": "elu_backward", "backend": "torch", "backend_version": "2.13", "seed": 5,
          "spec_sha256": H1, "tool_version": "0.1.0", "oracle": "reference"}],
        {"spec_sha256": "r1"},
    )  # fmt: skip
    assert pv.conflicts(full, Provenance()) == []
    assert pv.conflicts(Provenance(), full) == []
    assert pv.conflicts(full, parts([{"op": "elu_backward", "seed": None}], {})) == []
    assert pv.conflicts(full, pv.from_run({"backend": "torch", "seed": None})) == []


def test_records_win_over_a_stale_meta():
    p = parts([{"backend": "torch", "seed": 5}], {"backend": "reference", "seed": 0})
    assert p.backend == ("torch",) and p.seed == (5,)
    assert p.origin["backend"] == "records"
    q = parts([{"backend": "torch"}], {"seed": 0, "spec_sha256": "mixed: r1, r2"})
    assert q.seed == (0,) and q.origin["seed"] == "meta"
    assert q.spec_sha256 == ("r1", "r2")


def test_odd_values_do_not_crash(tmp_path):
    p = parts([{"backend": ["a"], "seed": {"x": 1}, "op": 3, "spec_sha256": 1}], {})
    assert pv.conflicts(p, parts([{"backend": "a", "seed": 1}], {}))
    bad = write(tmp_path / "r.jsonl", [{"id": "x", "verdict": "pass", "seed": 1}])
    Path(str(bad) + ".meta.json").write_text("[not json", encoding="utf-8")
    assert pv.from_results(bad).seed == (1,)


def test_mix_and_describe_mix():
    a = parts([{"backend": "reference", "seed": 0, "op": "o", "spec_sha256": H1}], {})
    b = parts([{"backend": "torch", "seed": 0, "op": "o", "spec_sha256": H2}], {})
    mixed = pv.mix([a, b])
    assert mixed == {"backend": ["reference", "torch"], "op_spec_sha256": {"o": [H1, H2]}}
    assert pv.describe_mix(mixed) == (
        f"backend 'reference', 'torch'; spec_sha256 of op o '{H1}', '{H2}'"
    )
    assert pv.mix([a, a]) == {}


def test_label_merged_follows_the_records():
    meta = {"backend": "reference", "seed": 0, "mixed": {"seed": [0, 1]}}
    records = [Result(f"c{seed}", "pass", backend="torch", seed=seed) for seed in (5, 6)]
    mixed = pv.label_merged(meta, records, [{"tool_version": "0.1.0"}, {"tool_version": "0.2"}])
    assert meta["backend"] == "torch" and "seed" not in meta and "tool_version" not in meta
    assert mixed == meta["mixed"] == {"seed": [5, 6], "tool_version": ["0.1.0", "0.2"]}


# -- check_resume ---------------------------------------------------------------------------


def now_of(path: Path, **changes) -> dict:
    """The `now` dict run_cmd builds, for a run like the one that wrote `path`."""
    rec = read_jsonl(path)[0]
    now = {k: rec[k] for k in ("backend", "backend_version", "seed", "tool_version", "oracle")}
    now["spec_sha256"] = {rec["op"]: rec["spec_sha256"]}
    return {**now, **changes}


def test_check_resume_same_run(runs, tmp_path):
    ref, _ = runs
    assert pv.check_resume(ref, now_of(ref), force=False) is None
    assert pv.check_resume(tmp_path / "none.jsonl", now_of(ref, seed=9), force=False) is None
    # a registry hash is compared with the meta's
    reg = meta_of(ref)["spec_sha256"]
    assert pv.check_resume(ref, now_of(ref, spec_sha256=reg), force=False) is None


def test_check_resume_refuses_another_seed(runs):
    ref, _ = runs
    with pytest.raises(ProvenanceError) as exc:
        pv.check_resume(ref, now_of(ref, seed=5), force=False)
    msg = str(exc.value)
    assert msg == (
        f"--resume: this run differs from {ref} in seed: 5 vs 0 (resume with --seed 0 or run "
        "without --resume, or pass --force to record the mix)"
    )
    assert isinstance(exc.value, ValueError)


@pytest.mark.parametrize(
    "changes, needle",
    [
        ({"backend": "torch"}, "in backend: 'torch' vs 'reference' (resume with --backend"),
        ({"backend_version": "v2"}, "backend_version: 'v2' vs"),
        ({"tool_version": "9.9"}, "tool_version: '9.9' vs '0.1.0'"),
        ({"oracle": "jax"}, "oracle: 'jax' vs 'reference'"),
        ({"spec_sha256": {"leaky_relu_backward": H1}}, "of op leaky_relu_backward"),
        ({"spec_sha256": H1}, "of the whole spec registry"),
    ],
)
def test_check_resume_each_field(runs, changes, needle):
    ref, _ = runs
    with pytest.raises(ProvenanceError, match="--force") as exc:
        pv.check_resume(ref, now_of(ref, **changes), force=False)
    assert needle in str(exc.value)


def test_check_resume_force_returns_the_mix(runs, tmp_path):
    ref, _ = runs
    assert pv.check_resume(ref, now_of(ref, seed=5), force=True) == {"seed": [0, 5]}
    assert pv.check_resume(ref, now_of(ref), force=True) is None
    # a file already mixed stays labelled mixed, even by a run that agrees with part of it
    copy = tmp_path / "r.jsonl"
    shutil.copy(ref, copy)
    with open(copy, "a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "other", "verdict": "pass", "seed": 7}) + "\n")
    assert pv.check_resume(copy, now_of(ref, seed=None), force=False) == {"seed": [0, 7]}


def test_check_resume_unknown_fields(runs):
    """Fields the run does not know (None, absent: e.g. the seed of a --cases run)."""
    ref, _ = runs
    assert pv.check_resume(ref, {"seed": None}, force=False) is None
    assert pv.check_resume(ref, {}, force=False) is None


@pytest.mark.gates
def test_resume_refuses_other_expectations(tmp_path):
    """The expectations decide verdicts, so --resume keeps the records only under the same
    expectations (file content and spec deviations, by hash); --force records the mix and the
    meta still names the expectations in force (issue 22 point 5)."""
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("format: 1\nentries:\n  - {match: 'none/*', kind: xfail, reason: r}\n", "utf-8")
    b.write_text("format: 1\nentries:\n  - {match: 'none/*', kind: waiver, reason: r}\n", "utf-8")
    results = tmp_path / "r.jsonl"
    assert_clean(conform(*RUN, "--expectations", a, "--results", results), 0)
    recs = read_jsonl(results)
    sha = recs[0]["expectations_sha256"]
    assert (
        {r["expectations_sha256"] for r in recs}
        == {sha}
        == {meta_of(results)["expectations_sha256"]}
    )
    for other in (("--expectations", b), ("--no-expectations",)):
        proc = conform(*RUN, *other, "--results", results, "--resume")
        assert_one_line_error(proc, "--resume", "expectations_sha256", "same expectations")
    assert_clean(conform(*RUN, "--expectations", a, "--results", results, "--resume"), 0)
    assert_clean(conform(*RUN, "--expectations", b, "--results", results, "--resume", "--force"), 0)
    meta = meta_of(results)
    assert meta["expectations"] == str(b) and sha in meta["mixed"]["expectations_sha256"]
    assert len(meta["mixed"]["expectations_sha256"]) == 2
