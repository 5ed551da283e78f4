"""Expectations: xfail hides a known failure, XPASS fails under --strict, an expired entry warns,
skip entries are not run, and --update-expectations round-trips."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from aclnn_conformance.conformance.judge import expectations as ex

from tests.support.plugins import install_plugin

NOF16 = """
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.conformance.acl.call import Outcome, TensorArg
from aclnn_conformance.reference.engine import evaluate

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
    p = subprocess.run([sys.executable, "-m", "aclnn_conformance.cli.main", "run", "--backend", "nof16", *FILTER,
                        "--results", str(results), "-q", *extra],
                       env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert "Traceback" not in p.stderr + p.stdout
    recs = [json.loads(x) for x in results.read_text().splitlines()]
    return p, {r["id"]: r for r in recs}


def write(path, entries, **top):
    path.write_text(yaml.safe_dump({"format": 1, **top, "entries": entries}), encoding="utf-8")
    return path


@pytest.mark.gates
def test_without_expectations_the_f16_cases_fail(env, tmp_path):
    p, recs = run(env, tmp_path)
    f16 = [r for i, r in recs.items() if "/f16/" in i]
    assert f16 and all(r["verdict"] == "fail" for r in f16)
    assert all(r["verdict"] == "pass" for i, r in recs.items() if "/f16/" not in i)
    assert p.returncode == 1


@pytest.mark.gates
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


@pytest.mark.gates
def test_entries_for_another_backend_or_version_do_not_apply(env, tmp_path):
    f = write(tmp_path / "e.yaml", [
        {"match": "elu_backward/*/f16/*", "kind": "xfail", "reason": "torch only", "backend": "torch"},
        {"match": "elu_backward/*/f16/*", "kind": "xfail", "reason": "old", "version": "nof16 0.*"},
    ])  # fmt: skip
    p, recs = run(env, tmp_path, "--expectations", str(f))
    assert p.returncode == 1
    assert all(r["verdict"] == "fail" for i, r in recs.items() if "/f16/" in i)


@pytest.mark.gates
def test_an_expired_entry_warns_and_no_longer_hides(env, tmp_path):
    f = write(tmp_path / "e.yaml", [
        {"match": "elu_backward/*/f16/*", "kind": "xfail", "reason": "r", "expires": "2020-01-01"},
    ], backend="nof16")  # fmt: skip
    p, recs = run(env, tmp_path, "--expectations", str(f))
    assert "expired on 2020-01-01" in p.stderr and "e.yaml:" in p.stderr
    assert p.returncode == 1
    assert all(r["verdict"] == "fail" for i, r in recs.items() if "/f16/" in i)


@pytest.mark.gates
def test_skip_entries_are_not_run(env, tmp_path):
    f = write(tmp_path / "e.yaml", [{"match": "elu_backward/*/f16/*", "kind": "skip", "reason": "later"}],
              backend="nof16")  # fmt: skip
    p, recs = run(env, tmp_path, "--expectations", str(f))
    f16 = [r for i, r in recs.items() if "/f16/" in i]
    assert f16 and all(r["verdict"] == "skip" and "durations" not in r for r in f16)
    assert p.returncode == 0


@pytest.mark.gates
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


@pytest.mark.gates
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
        (
            "format: 1\nentries:\n  - {message: m, kind: skip, reason: r}\n",
            "cannot match a message",
        ),
        ("format: 1\nentries:\n  - {match: a, kind: deviation, reason: r}\n", "needs `deviation:"),
        ("format: 1\nentries:\n  - {match: a, message: '', kind: xfail, reason: r}\n", "`message`"),
    ],
)
def test_malformed_files_are_clear_errors(tmp_path, body, message):
    f = tmp_path / "bad.yaml"
    f.write_text(body, encoding="utf-8")
    with pytest.raises(ex.ExpectationsError, match=message):
        ex.load(f)
    p = subprocess.run([sys.executable, "-m", "aclnn_conformance.cli.main", "run", "--expectations", str(f), "--max-cases", "1",
                        "--results", str(tmp_path / "r.jsonl"), "-q"], capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 2 and "Traceback" not in p.stderr and "bad.yaml" in p.stderr


@pytest.mark.gates
def test_update_expectations_keeps_comments_and_the_text_of_kept_entries(env, tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text(
        "# Known failures of nof16 -- written by hand\n"
        "format: 1\n"
        "backend: nof16\n"
        "entries:\n"
        "  # fp16 is unsupported on this device (ticket 123)\n"
        "  - match: 'elu_backward/atlas-training/f16/isResult=1/*'\n"
        "    kind: xfail\n"
        "    reason: kept reason   # inline note\n"
        "  # this one was fixed in 1.2\n"
        "  - match: 'elu_backward/atlas-training/f32/*'\n"
        "    kind: xfail\n"
        "    reason: fixed since\n"
        "# end of file\n",
        encoding="utf-8",
    )
    p, recs = run(env, tmp_path, "--expectations", str(f), "--update-expectations")
    text = f.read_text()
    assert text.startswith("# Known failures of nof16 -- written by hand\nformat: 1\n")
    assert "  # fp16 is unsupported on this device (ticket 123)\n" in text
    assert "    reason: kept reason   # inline note\n" in text
    assert "this one was fixed in 1.2" not in text and "fixed since" not in text
    assert text.rstrip().endswith("# end of file")
    doc = yaml.safe_load(text)
    failing_now = sorted(i for i, r in recs.items() if r["verdict"] == "fail")
    assert sorted(e["match"] for e in doc["entries"][1:]) == failing_now
    assert all(e["kind"] == "xfail" for e in doc["entries"])
    p2, _ = run(env, tmp_path, "--expectations", str(f))
    assert p2.returncode == 0


def test_expectations_file_and_no_expectations_contradict(tmp_path):
    f = write(tmp_path / "e.yaml", [])
    p = subprocess.run([sys.executable, "-m", "aclnn_conformance.cli.main", "run", "--expectations", str(f),
                        "--no-expectations", "--results", str(tmp_path / "r.jsonl")],
                       capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [
        f"Error: --expectations {f} and --no-expectations contradict each other; give one of them"
    ]
    assert not (tmp_path / "r.jsonl").exists()


# -- entries select by what fails: binding, dtypes, message, differs, verdicts ---------------


def _rec(case_id: str, verdict: str = "fail", **extra) -> dict:
    return {"id": case_id, "verdict": verdict, "reason": "status 0, expected 161002", **extra}


def _entries(tmp_path, *entries):
    return ex.load(write(tmp_path / "e.yaml", list(entries), backend="torch"))


def test_a_binding_entry_fits_every_spec_calling_that_kernel(tmp_path):
    e = _entries(tmp_path, {"binding": "aten::gelu_backward", "message": "reorder", "kind": "xfail",
                            "reason": "oneDNN"})  # fmt: skip
    said = {"message": "could not create a primitive descriptor for the reorder primitive"}
    for case_id in ("gelu_backward/a2/f32/-/x", "gelu_backward_v2/a2/f32/approximate=none/x",
                    "hand/made/case"):  # fmt: skip
        rec = e.apply(_rec(case_id, binding="aten::gelu_backward", **said), "torch", "2.13")
        assert rec.verdict == "xfail" and rec.expectation["binding"] == "aten::gelu_backward"
    other = e.apply(_rec("gelu/a2/f32/-/x", binding="aten::gelu", **said), "torch", "2.13")
    assert other.verdict == "fail"
    # the entry reads the outcome, so a pass never becomes an xpass
    ok = e.apply(_rec("gelu_backward/a2/x", "pass", binding="aten::gelu_backward"), "torch", "")
    assert ok.verdict == "pass"


def test_a_dtypes_entry_fits_by_the_calls_dtypes(tmp_path):
    e = _entries(tmp_path, {"dtypes": {"any": ["BF16"], "mixed": True}, "kind": "waiver",
                            "reason": "bf16 compute"})  # fmt: skip
    outs = ["gradInput"]

    def rec(**dtypes):
        return e.apply(_rec("x/y", dtypes=dtypes, outputs=outs), "torch", "").verdict

    assert rec(gradOutput="FLOAT", self="BF16", gradInput="FLOAT") == "xfail"
    assert rec(gradOutput="BF16", self="BF16", gradInput="FLOAT") == "fail"  # inputs not mixed
    assert rec(gradOutput="FLOAT", self="FLOAT16", gradInput="FLOAT") == "fail"  # no BF16
    e = _entries(tmp_path, {"dtypes": {"inputs": ["FLOAT16"], "outputs": ["BF16"]},
                            "kind": "waiver", "reason": "rounded twice"})  # fmt: skip
    assert rec(gradOutput="FLOAT16", self="FLOAT16", gradInput="BF16") == "xfail"
    assert rec(gradOutput="BF16", self="BF16", gradInput="BF16") == "fail"
    assert rec(gradOutput="FLOAT16", self="BF16", gradInput="BF16") == "fail"


def test_verdicts_and_differs_decide_what_an_entry_excuses(tmp_path):
    e = _entries(
        tmp_path,
        {"match": "a/*", "kind": "xfail", "reason": "r"},
        {"match": "b/*", "kind": "xfail", "reason": "r", "verdicts": ["crash"]},
        {"match": "c/*", "kind": "xfail", "reason": "r", "differs": "status"},
        {"match": "d/*", "kind": "xfail", "reason": "r", "differs": "values"},
    )

    def v(case_id, verdict, **extra):
        return e.apply(_rec(case_id, verdict, **extra), "torch", "").verdict

    assert v("a/1", "fail") == "xfail"
    for broken in ("crash", "timeout", "error"):  # never without naming them
        assert v("a/1", broken) == broken
    assert v("b/1", "crash") == "xfail" and v("b/1", "fail") == "fail"
    assert v("c/1", "fail", differs="status") == "xfail"
    assert v("c/1", "fail", differs="values") == "fail"
    assert v("d/1", "fail", differs="nonfinite") == "xfail"  # NaN/inf placement is a values kind
    assert v("d/1", "fail", differs="status") == "fail"


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"kind": "xfail", "reason": "r"}, "needs `match`"),
        ({"match": "a", "kind": "xfail", "reason": "r", "verdicts": ["pass"]}, "verdicts must list"),
        ({"match": "a", "kind": "xfail", "reason": "r", "differs": "shape"}, "differs must be one"),
        ({"match": "a", "kind": "xfail", "reason": "r", "differs": "values", "verdicts": ["crash"]},
         "verdicts must include fail"),
        ({"match": "a", "kind": "skip", "reason": "r", "verdicts": ["crash"]}, "a skip entry"),
        ({"dtypes": {"any": ["FLOAT99"]}, "kind": "xfail", "reason": "r"}, "unknown dtype"),
        ({"dtypes": {"mixed": "yes"}, "kind": "xfail", "reason": "r"}, "mixed must be true"),
        # found by the fuzz test's long profile: a bool where text belongs was an internal error
        ({"match": "a", "kind": "xfail", "reason": "r", "version": True}, "`version` must be text"),
        ({"match": "a", "kind": "xfail", "reason": "r", "backend": 3}, "`backend` must be text"),
        ({"match": "a", "kind": "xfail", "reason": "r", "deviation": ["x"]},
         "`deviation` must be text"),
    ],
)  # fmt: skip
def test_malformed_selectors_are_clear_errors(tmp_path, entry, message):
    with pytest.raises(ex.ExpectationsError, match=message) as info:
        ex.load(write(tmp_path / "e.yaml", [entry]))
    assert str(info.value).startswith(f"{tmp_path / 'e.yaml'}:")


def test_shipped_entries_name_no_spec():
    """Entries about PyTorch's and JAX's kernels select by binding, dtypes and message: an entry
    naming one of our specs would miss every other spec calling the same kernel (issue 23)."""
    from aclnn_conformance.conformance.spec.registry import default_registry

    names = {s.name for s in default_registry()}
    for backend in ("torch", "jax"):
        for e in ex.load(ex.shipped(backend)).entries:
            assert e.match.split("/")[0] not in names, (backend, e.line, e.match)
            assert e.narrowing, (backend, e.line)


def test_every_spec_sharing_an_aten_kernel_is_covered_by_the_same_entries():
    """For every ATen op that two specs call, a shipped entry that can fit one of them can fit
    the other (an entry keyed by a spec name would cover only one: the gelu_backward class)."""
    from aclnn_conformance.conformance.spec.bindings import binding_id
    from aclnn_conformance.conformance.spec.registry import default_registry

    by_binding: dict[str, list[str]] = {}
    for spec in default_registry():
        b = binding_id(spec, "aten")
        if b:
            by_binding.setdefault(b, []).append(spec.name)
    shared = {b: names for b, names in by_binding.items() if len(names) > 1}
    assert shared  # the registry has such pairs (gelu_backward and gelu_backward_v2)
    for e in ex.load(ex.shipped("torch")).entries:
        for binding, names in shared.items():
            covered = [n for n in names if _can_fit(e, n, binding)]
            assert covered in ([], names), (e.line, binding, covered)


def _can_fit(e: ex.Entry, spec_name: str, binding: str) -> bool:
    """Whether the entry's id glob and binding can fit some case of the spec."""
    import fnmatch

    if e.binding is not None and not fnmatch.fnmatchcase(binding, e.binding):
        return False
    head = e.match.split("/")[0]
    return fnmatch.fnmatchcase(spec_name, head) or head == e.match == "*"


def test_the_elu_example_at_minus_1e300_is_rejected_by_the_documented_rule():
    """The doc: alpha >= 0 when isResult; a DOUBLE -1e-300 is negative, so 161002 (the library
    tests alpha->ToFloat() = -0.0f and accepts it: the spec records that as a deviation)."""
    import numpy as np
    from aclnn_conformance import reference
    from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg

    x = np.array([-1.0, 2.0], dtype=np.float32)
    args = {"gradOutput": TensorArg.from_array(x, "FLOAT"), "alpha": ScalarArg("DOUBLE", -1e-300),
            "scale": ScalarArg("FLOAT", 1.0), "inputScale": ScalarArg("FLOAT", 1.0),
            "isResult": True, "selfOrResult": TensorArg.from_array(x, "FLOAT"),
            "gradInput": TensorArg.empty_like_shape((2,), "FLOAT")}  # fmt: skip
    out = reference.evaluate(Call("aclnnEluBackward", "atlas-a2", args))
    assert out.status == 161002 and out.clause == "elu_backward/alpha-nonneg-if-result"
    args["alpha"] = ScalarArg("FLOAT", -1e-300)  # a FLOAT scalar holds -0.0: accepted
    assert reference.evaluate(Call("aclnnEluBackward", "atlas-a2", args)).status == 0


def _values_fail(max_abs: float, max_rel: float = 1e-3, nan: int = 0) -> dict:
    stats = {"max_abs": max_abs, "max_rel": max_rel, "nan_mismatches": nan, "inf_mismatches": 0}
    return {"differs": "values", "comparisons": {
        "out": {"passed": False, "stats": stats},
        "other": {"passed": True, "stats": {"max_abs": 1.0, "max_rel": 1.0}}}}  # fmt: skip


def test_within_excuses_only_a_values_failure_inside_its_bound(tmp_path):
    """`within` bounds the largest error of every failed output; an output that passed, a
    larger error, a NaN misplaced or another kind of failure are not excused."""
    e = _entries(tmp_path, {"binding": "aten::k", "differs": "values", "within": {"abs": 4e-6},
                            "kind": "waiver", "reason": "float32 evaluation"})  # fmt: skip

    def v(**extra):
        return e.apply(_rec("any/id", binding="aten::k", **extra), "torch", "").verdict

    assert v(**_values_fail(2.3e-6)) == "xfail"
    assert v(**_values_fail(4e-6)) == "xfail"  # the bound itself
    assert v(**_values_fail(4.1e-6)) == "fail"
    assert v(**_values_fail(1e-9, nan=1)) == "fail"  # a NaN where a number belongs
    assert v(**{**_values_fail(1e-9), "differs": "nonfinite"}) == "fail"
    assert v(differs="values") == "fail"  # no statistics: nothing shows it is within
    e2 = _entries(tmp_path, {"match": "*/x", "differs": "values", "within": {"rel": 1e-3,
                             "abs": 1e-5}, "kind": "waiver", "reason": "r"})  # fmt: skip
    rec = e2.apply(_rec("a/x", **_values_fail(1e-6, max_rel=9e-4)), "torch", "")
    assert rec.verdict == "xfail" and rec.expectation["within"] == {"abs": 1e-5, "rel": 1e-3}
    assert e2.apply(_rec("a/x", **_values_fail(1e-6, max_rel=2e-3)), "t", "").verdict == "fail"


@pytest.mark.parametrize(
    "within, message",
    [
        ({"abs": 0}, "within.abs must be a finite number > 0"),
        ({"abs": float("inf")}, "within.abs must be a finite number > 0"),
        ({"rel": True}, "within.rel must be a finite number > 0"),
        ({"ulp": 4}, "within must map some of abs, rel"),
        ("tight", "within must map some of abs, rel"),
    ],
)
def test_malformed_within_is_a_clear_error(tmp_path, within, message):
    entry = {"binding": "aten::k", "differs": "values", "within": within, "kind": "waiver",
             "reason": "r"}  # fmt: skip
    with pytest.raises(ex.ExpectationsError, match=message):
        ex.load(write(tmp_path / "e.yaml", [entry]))
    del entry["differs"]
    entry["within"] = {"abs": 1e-6}
    with pytest.raises(ex.ExpectationsError, match="needs `differs: values`"):
        ex.load(write(tmp_path / "e.yaml", [entry]))


def test_the_shipped_gelu_backward_bound_holds_for_torch_against_mpmath():
    """The shipped `within` entry for aten::gelu_backward (float32) rests on a measurement: over
    x in [-7, 7] and |gradOutput| = 16, PyTorch's error against the derivative computed with
    mpmath stays under the entry's bound, while near the derivative's zero its relative error is
    far beyond the float32 tolerance (why the entry exists)."""
    torch = pytest.importorskip("torch")
    mpmath = pytest.importorskip("mpmath")
    (entry,) = [e for e in ex.load(ex.shipped("torch")).entries
                if e.binding == "aten::gelu_backward" and e.within]  # fmt: skip
    bound = dict(entry.within)["abs"]
    x = torch.linspace(-7, 7, 3001, dtype=torch.float32)
    g = torch.full_like(x, 16.0)
    got = torch.ops.aten.gelu_backward(g, x).double().numpy()
    with mpmath.workprec(80):
        exact = [16 * float(mpmath.ncdf(v) + v * mpmath.npdf(v)) for v in map(float, x.numpy())]
    err = abs(got - exact)
    assert err.max() <= bound, err.max()
    near = torch.full((64,), -0.7516675591468811, dtype=torch.float32)  # the vectorized kernel
    t = torch.ops.aten.gelu_backward(torch.full_like(near, 9.0), near)[0].item()
    v = float(near[0].item())
    e = 9 * float(mpmath.ncdf(v) + v * mpmath.npdf(v))
    assert abs(t - e) / abs(e) > 1e-4  # beyond FLOAT's relative tolerance: a real failure
