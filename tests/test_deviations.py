"""Spec deviations excuse only what they record (issue 22 point 1, issue 23 point 3).

A deviation names the kind of difference (`differs`): a status, values that match the library's
own formula or lie within a bound, or NaN/inf placement; it applies to a failure of that kind on
any case that exercises its clause and fits its narrowing (dtypes, products, when), whatever the
case's id; a crash, timeout or error is never a deviation. The backends below compute what they
compute with numpy, written here from the kernels' descriptions (not from the reference).
"""

from __future__ import annotations

import math
import re
import shlex
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, Outcome, ScalarArg, TensorArg
from aclnn_conformance.conformance.cases.build import Case
from aclnn_conformance.conformance.run.backend import Backend, BackendCrash, Capabilities
from aclnn_conformance.conformance.run.judging import judge
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference.backend import ReferenceBackend

from tests.support.runcli import REPO, assert_clean, assert_one_line_error, conform, read_jsonl

REG = default_registry()
ORACLE = ReferenceBackend(REG)
HARDTANH = REPO / "specs" / "ops" / "hardtanh_backward.yaml"


def _case(op: str, product: str, args: dict, expected: int = 0, kind: str = "positive",
          case_id: str = "hand/written/0") -> Case:  # fmt: skip
    spec = REG.get(op)
    return Case(case_id, spec.name, product, kind, Call(spec.name, product, args), (), expected, 0)


def _out(outcome_args: dict, name: str, values, dtype: str) -> np.ndarray:
    """The output storage a backend returns: `values` written into the call's own view."""
    t = outcome_args[name]
    storage = t.storage.copy()
    TensorArg(t.dtype, t.shape, t.strides, t.offset, storage).write(
        dt.round_to(np.asarray(values, np.float64), dt.get(dtype))
    )
    return storage


class _Fake(Backend):
    """A backend under a real backend's name, so that the deviations naming it apply."""

    capabilities = Capabilities(status="exact")

    def __init__(self, name: str, fn):
        super().__init__(REG)
        self.name = name
        self.fn = fn

    def execute(self, call: Call) -> Outcome:
        return self.fn(call)


def _hardtanh_kernel(call: Call, nan_grad_ok: bool = True) -> Outcome:
    """ops-nn's HardtanhGrad: gradOutput where min < self < max or self is NaN, else 0."""
    x = np.asarray(call.tensor("self").view(), np.float64)
    g = np.asarray(call.tensor("gradOutput").view(), np.float64)
    lo, hi = call.args["min"].value, call.args["max"].value
    keep = ((x > lo) & (x < hi)) | np.isnan(x)
    out = np.where(keep, g, 0.0)
    return Outcome(0, {"out": _out(call.args, "out", out, call.tensor("out").dtype)})


def _hardtanh_case(x, g, dtype="FLOAT", product="ascend950"):
    args = {"gradOutput": TensorArg.from_array(np.array(g), dtype),
            "self": TensorArg.from_array(np.array(x), dtype),
            "min": ScalarArg("FLOAT", -1.0), "max": ScalarArg("FLOAT", 1.0),
            "out": TensorArg.empty_like_shape((len(x),), dtype)}  # fmt: skip
    return _case("hardtanh_backward", product, args)


X_EDGES = [-1.0, 1.0, 0.5, -0.25, 2.0, -3.0]
G_EDGES = [2.0, -3.0, 1.5, 0.75, np.inf, np.nan]


# -- values: the library's formula ---------------------------------------------------------------


@pytest.mark.parametrize("backend", ["aclnn", "torch_npu", "torch"])
def test_the_kernel_formula_is_a_deviation_and_only_for_the_backends_it_names(backend):
    case = _hardtanh_case(X_EDGES, G_EDGES)
    kernel = _Fake(backend, _hardtanh_kernel)
    assert judge(REG.get("hardtanh_backward"), case, kernel, ORACLE).verdict == "fail"
    got = judge(REG.get("hardtanh_backward"), case, kernel, ORACLE, deviations=True)
    assert got.verdict == "deviation", got.reason
    x = got.record.expectation
    # self = +-1 (inside by the doc) and an infinite/NaN gradOutput outside: two branches the
    # library computes its own way, so both deviations are needed together
    assert x["differs"] == "values" and len(x["deviations"]) == 2
    assert got.record.verdict_before_expectation == "fail"
    other = _Fake("jax", _hardtanh_kernel)  # jax's deviation is select-zero only
    assert (
        judge(REG.get("hardtanh_backward"), case, other, ORACLE, deviations=True).verdict == "fail"
    )


def test_values_that_match_neither_the_doc_nor_the_formula_stay_a_failure():
    case = _hardtanh_case(X_EDGES, G_EDGES)

    def sevens(call):
        return Outcome(0, {"out": np.full_like(call.tensor("out").storage, 7)})

    def off_inside(call):  # the kernel's selection, but a wrong value where it keeps gradOutput
        o = _hardtanh_kernel(call)
        o.outputs["out"][2] += 0.5
        return o

    for fn in (sevens, off_inside):
        got = judge(REG.get("hardtanh_backward"), case, _Fake("aclnn", fn), ORACLE, deviations=True)
        assert got.verdict == "fail" and got.record.expectation is None, fn.__name__


@pytest.mark.parametrize("exc", [BackendCrash("segfault"), RuntimeError("harness error")])
def test_a_crash_or_error_is_never_a_deviation(exc):
    case = _hardtanh_case(X_EDGES, G_EDGES)

    def broken(call):
        raise exc

    got = judge(REG.get("hardtanh_backward"), case, _Fake("aclnn", broken), ORACLE,
                deviations=True)  # fmt: skip
    assert got.verdict == ("crash" if isinstance(exc, BackendCrash) else "error")


def test_a_deviation_applies_by_the_values_not_the_case_id():
    """The same values under a generated-looking, an imported-looking and a hand-made id."""
    kernel = _Fake("torch", _hardtanh_kernel)
    for case_id in ("hardtanh_backward/ascend950/f32/-/point=x-at-min",
                    "hardtanh_backward/atk/0007", "mine/edge"):  # fmt: skip
        case = _hardtanh_case([-1.0, 0.5, 1.0], [2.0, 1.0, 3.0])
        case.id = case_id
        got = judge(REG.get("hardtanh_backward"), case, kernel, ORACLE, deviations=True)
        assert got.verdict == "deviation", case_id
        assert got.record.expectation["deviation"] == "hardtanh_backward/torch-open-interval"
    # values that take no branch the library computes differently: nothing to excuse
    plain = _hardtanh_case([0.5, -0.5], [1.0, 2.0])

    def wrong(call):
        o = _hardtanh_kernel(call)
        o.outputs["out"][0] = 9.0
        return o

    assert judge(REG.get("hardtanh_backward"), plain, _Fake("torch", wrong), ORACLE,
                 deviations=True).verdict == "fail"  # fmt: skip


# -- values within a bound, NaN/inf placement ------------------------------------------------


def _erfinv_case(x, self_dtype, out_dtype):
    args = {"self": TensorArg.from_array(np.array(x), self_dtype),
            "out": TensorArg.empty_like_shape((len(x),), out_dtype)}  # fmt: skip
    return _case("erfinv", "ascend950", args)


def test_a_bound_deviation_takes_values_within_its_bound_only():
    """erfinv/compute-in-self-dtype (bound: 4e-3 relative or 1 ulp): 2.5e-3 off is beyond the
    FLOAT16 tolerance of a FLOAT16 -> FLOAT call (about 1e-3) and within the bound; 1 % is not."""
    from scipy import special

    x = [0.1, 0.3, 0.55, 0.7, 0.9, -0.45, 0.95, 0.999]
    case = _erfinv_case(x, "FLOAT16", "FLOAT")
    exact = special.erfinv(np.asarray(case.call.tensor("self").view(), np.float64))

    def scaled(factor):
        return lambda call: Outcome(0, {"out": _out(call.args, "out", exact * factor, "FLOAT")})

    spec = REG.get("erfinv")
    assert judge(spec, case, _Fake("torch", scaled(1.0025)), ORACLE).verdict == "fail"
    got = judge(spec, case, _Fake("torch", scaled(1.0025)), ORACLE, deviations=True)
    assert got.verdict == "deviation" and "within rel 0.004" in got.record.expectation["checked"]
    assert (
        judge(spec, case, _Fake("torch", scaled(1.01)), ORACLE, deviations=True).verdict == "fail"
    )
    # a backend the deviation does not name gets no excuse
    assert (
        judge(spec, case, _Fake("jax", scaled(1.0025)), ORACLE, deviations=True).verdict == "fail"
    )


def _hardswish_bw_case(x, g):
    args = {"gradOutput": TensorArg.from_array(np.array(g), "FLOAT"),
            "self": TensorArg.from_array(np.array(x), "FLOAT"),
            "out": TensorArg.empty_like_shape((len(x),), "FLOAT")}  # fmt: skip
    return _case("hardswish_backward", "ascend950", args)


def test_a_nonfinite_deviation_takes_nan_and_inf_placement_only():
    """hardswish_backward/jax-vjp-nan: NaN where the doc's value is finite is excused; a wrong
    finite value next to it is not."""
    x, g = [4.0, 5.0, 0.5, -4.0], [1.0, np.inf, 2.0, 3.0]
    case = _hardswish_bw_case(x, g)
    want = [1.0, np.inf, 2.0 * (0.5 / 3 + 0.5), 0.0]  # the doc, by hand

    def vjp(call, bad=False):
        y = list(want)
        y[1] = np.nan  # inf * 0 in the product rule
        if bad:
            y[2] += 0.25
        return Outcome(0, {"out": _out(call.args, "out", y, "FLOAT")})

    spec = REG.get("hardswish_backward")
    got = judge(spec, case, _Fake("jax", vjp), ORACLE, deviations=True)
    assert got.verdict == "deviation" and got.record.differs == "nonfinite"
    assert got.record.expectation["deviation"] == "hardswish_backward/jax-vjp-nan"
    bad = judge(spec, case, _Fake("jax", lambda c: vjp(c, True)), ORACLE, deviations=True)
    assert bad.verdict == "fail" and bad.record.differs == "values"


# -- status deviations ---------------------------------------------------------------------------


def _accepts(call):
    return Outcome(0, {"out": call.tensor("out").storage.copy()})


def _celu_neg(alpha: float):
    args = {"self": TensorArg.from_array(np.array([1.0, -2.0]), "FLOAT"),
            "alpha": ScalarArg("FLOAT", alpha), "out": TensorArg.empty_like_shape((2,), "FLOAT")}  # fmt: skip
    return _case("celu", "ascend950", args, 161002, "negative")


def test_a_status_deviation_needs_its_clause_its_when_and_its_actual_status():
    spec = REG.get("celu")
    torch_like = _Fake("torch", _accepts)
    torch_like.capabilities = Capabilities(status="accept_reject")
    # torch-nan-alpha: PyTorch accepts a NaN alpha (when: alpha != alpha)
    got = judge(spec, _celu_neg(math.nan), torch_like, ORACLE, deviations=True)
    assert got.verdict == "deviation" and got.record.differs == "status"
    assert got.record.expectation["deviation"] == "celu/torch-nan-alpha"
    # alpha = 0 is rejected by the same clause, but the deviation is about NaN only
    assert judge(spec, _celu_neg(0.0), torch_like, ORACLE, deviations=True).verdict == "fail"


def test_actual_status_and_products_narrow_a_status_deviation():
    spec = REG.get("sigmoid")

    def bf16(product):
        args = {"self": TensorArg.from_array(np.array([0.5, -1.0]), "BF16"),
                "out": TensorArg.empty_like_shape((2,), "BF16")}  # fmt: skip
        return _case("sigmoid", product, args)

    def rejects(code):
        return lambda call: Outcome(code, {"out": call.tensor("out").storage.copy()}, "no bf16")

    # bf16-soc-gated: the library returns 161002 for BF16 on Atlas inference/training
    got = judge(spec, bf16("atlas-training"), _Fake("aclnn", rejects(161002)), ORACLE,
                deviations=True)  # fmt: skip
    assert got.verdict == "deviation", got.reason
    # another status than the one recorded, or a product the deviation does not name: a failure
    assert judge(spec, bf16("atlas-training"), _Fake("aclnn", rejects(561003)), ORACLE,
                 deviations=True).verdict == "fail"  # fmt: skip
    assert judge(spec, bf16("atlas-a2"), _Fake("aclnn", rejects(161002)), ORACLE,
                 deviations=True).verdict == "fail"  # fmt: skip


def test_a_status_deviation_does_not_excuse_values():
    """elu/out-list-unchecked lets the library accept a COMPLEX64 out; a valid call with wrong
    values is still a failure."""
    spec = REG.get("elu")
    args = {"self": TensorArg.from_array(np.array([0.5, -1.0]), "FLOAT"),
            "alpha": ScalarArg("FLOAT", 1.0), "scale": ScalarArg("FLOAT", 1.0),
            "inputScale": ScalarArg("FLOAT", 1.0), "out": TensorArg.empty_like_shape((2,), "FLOAT")}  # fmt: skip
    case = _case("elu", "ascend950", args)

    def wrong(call):
        return Outcome(0, {"out": _out(call.args, "out", [9.0, 9.0], "FLOAT")})

    got = judge(spec, case, _Fake("aclnn", wrong), ORACLE, deviations=True)
    assert got.verdict == "fail" and got.record.differs == "values"


# -- lint ----------------------------------------------------------------------------------------


def _with_deviations(block: str) -> str:
    text = HARDTANH.read_text(encoding="utf-8")
    head, rest = text.split("\ndeviations:\n", 1)
    tail = rest[rest.index("\nbindings:") :]
    return head + "\ndeviations:\n" + textwrap.indent(textwrap.dedent(block), "  ") + tail


LINT_CASES = {
    "cases-removed": (
        """\
        - id: d
          clause: inside
          differs: values
          bound: {rel: 1.0e-3}
          cases: ["*/f16/*"]
          backends: [aclnn]
          summary: s
          source: s
        """,
        "`cases:` (case-id globs) was removed",
    ),
    "differs-required": (
        """\
        - {id: d, clause: inside, backends: [aclnn], summary: s, source: s}
        """,
        "needs `differs: status | values | nonfinite`",
    ),
    "values-needs-formula-or-bound": (
        """\
        - {id: d, clause: inside, differs: values, backends: [aclnn], summary: s, source: s}
        """,
        "needs exactly one of `formula`",
    ),
    "not-both": (
        """\
        - {id: d, clause: inside, differs: values, formula: {value: 0}, bound: {ulp: 1},
           backends: [aclnn], summary: s, source: s}
        """,
        "needs exactly one of `formula`",
    ),
    "formula-needs-branch": (
        """\
        - {id: d, clause: x-zero, differs: values, formula: {value: 0}, backends: [aclnn],
           summary: s, source: s}
        """,
        "`formula` needs a formula branch or let",
    ),
    "nan-bound": (
        """\
        - {id: d, clause: inside, differs: values, bound: {rel: .nan}, backends: [aclnn],
           summary: s, source: s}
        """,
        "bound rel must be a finite number > 0",
    ),
    "zero-bound": (
        """\
        - {id: d, clause: inside, differs: values, bound: {abs: 0}, backends: [aclnn],
           summary: s, source: s}
        """,
        "bound abs must be a finite number > 0",
    ),
    "unknown-status": (
        """\
        - {id: d, clause: dtype-self, differs: status, actual_status: 42, backends: [aclnn],
           summary: s, source: s}
        """,
        "unknown status code 42",
    ),
    "status-needs-check": (
        """\
        - {id: d, clause: inside, differs: status, backends: [aclnn], summary: s, source: s}
        """,
        "differs: status needs a check as clause",
    ),
    "values-not-on-check": (
        """\
        - {id: d, clause: dtype-self, differs: nonfinite, backends: [aclnn], summary: s, source: s}
        """,
        "needs a formula branch or let, a special point or a property",
    ),
    "last-branch-stays-otherwise": (
        """\
        - {id: d, clause: inside, differs: values, formula: {when: self > 0}, backends: [aclnn],
           summary: s, source: s}
        """,
        "the last branch stays `when: otherwise`",
    ),
    "unknown-dtype-param": (
        """\
        - {id: d, clause: inside, differs: values, bound: {ulp: 1}, dtypes: {grad: [FLOAT]},
           backends: [aclnn], summary: s, source: s}
        """,
        "dtypes.grad: no parameter of that name",
    ),
    "unknown-product": (
        """\
        - {id: d, clause: inside, differs: values, bound: {ulp: 1}, products: [ascend910],
           backends: [aclnn], summary: s, source: s}
        """,
        "product 'ascend910' is not a product of this op",
    ),
    "when-on-tensors": (
        """\
        - {id: d, clause: dtype-self, differs: status, when: self > 0, backends: [aclnn],
           summary: s, source: s}
        """,
        "in expression 'self > 0'",
    ),
}


@pytest.mark.parametrize("name", sorted(LINT_CASES))
def test_lint_says_what_a_gating_deviation_lacks(tmp_path, name):
    block, message = LINT_CASES[name]
    f = tmp_path / "hardtanh_backward.yaml"
    f.write_text(_with_deviations(block), encoding="utf-8")
    spec, problems = lint_file(f)
    assert spec is None and any(message in p.message for p in problems), problems
    assert all(p.file == str(f) and p.line > 1 for p in problems)


def test_a_deviation_without_backends_needs_no_differs(tmp_path):
    f = tmp_path / "hardtanh_backward.yaml"
    f.write_text(_with_deviations("- {id: d, clause: inside, summary: s, source: s}\n"), "utf-8")
    spec, problems = lint_file(f)
    assert problems == [] and spec.deviations[0].differs is None


@pytest.mark.parametrize("spec", list(REG), ids=lambda s: s.name)
def test_every_gating_deviation_says_what_it_excuses(spec):
    for d in spec.deviations:
        if not d.backends:
            continue
        assert d.differs in ("status", "values", "nonfinite") and d.clause, d.id
        if d.differs == "values":
            assert (d.formula is None) != (not d.bound), d.id


# -- the exec backend, end to end (issue 22 point 1's reproduction) ------------------------------

HARNESS = """\
    import json, os, signal, sys
    from pathlib import Path
    import numpy as np

    mode = sys.argv[1]
    case, out = Path(sys.argv[2]), Path(sys.argv[3])
    if mode == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    meta = json.loads((case / "case.json").read_text())
    args = meta["args"]

    def view(a):
        s = np.load(case / a["storage"])
        return np.lib.stride_tricks.as_strided(s[a["offset"]:], shape=a["shape"],
                                               strides=[k * s.itemsize for k in a["strides"]])

    o = args["out"]
    storage = np.load(case / o["storage"])
    if mode == "sevens":
        storage[:] = 7
    else:  # the kernel: gradOutput where min < self < max or self is NaN, else 0
        x, g = view(args["self"]).astype(np.float64), view(args["gradOutput"]).astype(np.float64)
        lo, hi = float(args["min"]["value"]), float(args["max"]["value"])
        y = np.where(((x > lo) & (x < hi)) | np.isnan(x), g, 0.0).astype(storage.dtype)
        np.lib.stride_tricks.as_strided(storage[o["offset"]:], shape=o["shape"],
                                        strides=[k * storage.itemsize for k in o["strides"]])[...] = y
    np.save(out / "out.npy", storage)
    (out / "result.json").write_text(json.dumps({"status": 0, "message": ""}))
"""


@pytest.fixture(scope="module")
def exec_setup(tmp_path_factory):
    """hardtanh_backward as `hardtanh_backward_x`, with `exec` among the backends of its two
    kernel deviations, and a harness with three modes."""
    root = tmp_path_factory.mktemp("exec")
    text = HARDTANH.read_text(encoding="utf-8")
    text = text.replace("name: hardtanh_backward", "name: hardtanh_backward_x", 1)
    text = text.replace("op: aclnnHardtanhBackward", "op: aclnnHardtanhBackwardX", 1)
    text = re.sub(r"(id: kernel-(open-interval|select-zero)\n(?:    .*\n)*?    backends: \[)",
                  r"\1exec, ", text)  # fmt: skip
    assert text.count("backends: [exec, ") == 2
    (root / "specs").mkdir()
    (root / "specs" / "hardtanh_backward_x.yaml").write_text(text, encoding="utf-8")
    harness = root / "harness.py"
    harness.write_text(textwrap.dedent(HARNESS), encoding="utf-8")
    return root, harness


def _exec_run(root: Path, harness: Path, mode: str, *extra):
    results = root / f"{mode}.jsonl"
    cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(harness))} {mode}"
    proc = conform("--specs", root / "specs", "run", "--backend", "exec", "--exec-cmd", cmd,
                   "--op", "hardtanh_backward_x", "--product", "ascend950", "--dtype", "FLOAT",
                   "-k", "/point=x-at-m", "--results", results, "-q", *extra, timeout=600)  # fmt: skip
    return proc, read_jsonl(results)


@pytest.mark.gates
def test_exec_harness_with_the_kernel_formula_is_a_deviation(exec_setup):
    proc, recs = _exec_run(*exec_setup, "kernel")
    assert_clean(proc, 0)
    assert recs and {r["verdict"] for r in recs} == {"deviation"}


@pytest.mark.gates
@pytest.mark.parametrize("mode", ["sevens", "segfault"])
def test_exec_harness_writing_sevens_or_crashing_is_red(exec_setup, mode):
    proc, recs = _exec_run(*exec_setup, mode)
    assert_clean(proc, 1)
    assert recs and all(r["verdict"] in ("fail", "crash", "error") for r in recs)
    assert "deviation" not in proc.stdout


# -- --strict: a run must prove something (issue 22 point 4) -------------------------------------


@pytest.mark.parametrize("entry", [
    {"match": "*", "kind": "waiver", "reason": "everything"},
    {"match": "*/*", "kind": "skip", "reason": "everything"},
])  # fmt: skip
def test_strict_refuses_an_entry_that_fits_every_case(exec_setup, tmp_path, entry):
    import yaml

    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"format": 1, "entries": [entry]}), encoding="utf-8")
    root, harness = exec_setup
    cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(harness))} segfault"
    proc = conform("--specs", root / "specs", "run", "--backend", "exec", "--exec-cmd", cmd,
                   "--op", "hardtanh_backward_x", "--results", tmp_path / "r.jsonl",
                   "--expectations", exp, "--strict", "-q")  # fmt: skip
    line = assert_one_line_error(proc, "--strict", "fits every case", "narrow it")
    assert re.search(rf"{re.escape(str(exp))}:\d+: this (waiver|skip) entry", line), line
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.gates
def test_strict_fails_a_message_entry_that_excused_every_case(exec_setup, tmp_path):
    import yaml

    exp = tmp_path / "e.yaml"
    entries = [{"message": "e", "kind": "xfail", "reason": "anything", "verdicts": [
        "crash", "error"]}]  # fmt: skip
    exp.write_text(yaml.safe_dump({"format": 1, "entries": entries}), encoding="utf-8")
    proc, recs = _exec_run(*exec_setup, "segfault", "--expectations", exp, "--strict")
    assert_clean(proc, 1)
    assert {r["verdict"] for r in recs} == {"xfail"}
    assert re.search(r"--strict: .*e\.yaml:\d+: the xfail entry \(message 'e'\) excused every one "
                     rf"of the {len(recs)} judged cases", proc.stderr), proc.stderr  # fmt: skip
    # the same entry without `verdicts` excuses no crash or error: the run fails as it is
    entries[0].pop("verdicts")
    exp.write_text(yaml.safe_dump({"format": 1, "entries": entries}), encoding="utf-8")
    proc, recs = _exec_run(*exec_setup, "segfault", "--expectations", exp, "--strict")
    assert_clean(proc, 1)
    assert {r["verdict"] for r in recs} <= {"crash", "error"}


@pytest.mark.gates
def test_strict_fails_a_run_that_judged_no_case(tmp_path):
    pytest.importorskip("jax")
    proc = conform("run", "--backend", "jax", "--op", "relu", "--product", "ascend950", "-k",
                   "/neg/", "--results", tmp_path / "r.jsonl", "--strict", "-q")  # fmt: skip
    assert_clean(proc, 1)
    assert {r["verdict"] for r in read_jsonl(tmp_path / "r.jsonl")} == {"skip"}
    assert "--strict: no case was judged" in proc.stderr
    plain = conform("run", "--backend", "jax", "--op", "relu", "--product", "ascend950", "-k",
                    "/neg/", "--results", tmp_path / "r.jsonl", "-q")  # fmt: skip
    assert_clean(plain, 0)


@pytest.mark.gates
@pytest.mark.parametrize("backend", ["torch", "reference"])
def test_strict_refuses_a_backend_judged_by_itself(tmp_path, backend):
    if backend == "torch":
        pytest.importorskip("torch")
    proc = conform("run", "--backend", backend, "--oracle", backend, "--op", "relu",
                   "--results", tmp_path / "r.jsonl", "--strict")  # fmt: skip
    assert_one_line_error(proc, "--strict", "judged against itself", f"--oracle {backend}")
    assert not (tmp_path / "r.jsonl").exists()


# -- through PyTorch: an imported case, the gelu_backward tail (issue 23) --------------------------


def _atk_case(case_id: int, lambd: float) -> dict:
    def tensor(name, rng):
        return {"name": name, "type": "tensor", "required": True, "dtype": "fp32",
                "shape": [16], "range_values": rng, "backward": False, "align_32B": None}  # fmt: skip

    return {"id": case_id, "name": "written for tests/test_deviations.py",
            "aclnn_name": "aclnnHardshrinkBackward", "api_type": "test",
            "standard": {"acc": "single_bm", "perf": "not_key"},
            "inputs": [tensor("gradOutput", [-3, 5]), tensor("self", 0),
                       {"name": "lambd", "type": "scalar", "required": True, "dtype": "fp32",
                        "shape": None, "range_values": lambd, "backward": False,
                        "align_32B": None}]}  # fmt: skip


@pytest.mark.gates
def test_an_imported_case_gets_the_deviation_its_values_exercise(tmp_path):
    """hardshrink_backward/negative-lambd-torch: an ATK-style case (self = 0, lambd = -0.5) is
    judged like the generated point=x-zero-negative-lambd, though its id names no point."""
    import json

    pytest.importorskip("torch")
    src = tmp_path / "atk_aclnnHardshrinkBackward.json"
    src.write_text(json.dumps([_atk_case(0, -0.5), _atk_case(1, 0.5)]), encoding="utf-8")
    out = tmp_path / "cases"
    assert_clean(conform("cases", "import-atk", src, "-o", out), 0)
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", "torch", "--cases", out, "--results", results, "-q")
    assert_clean(proc, 0)
    recs = {r["id"].rsplit("/", 1)[-1]: r for r in read_jsonl(results)}
    neg, pos = (next(r for k, r in recs.items() if k.endswith(n)) for n in ("0", "1"))
    assert neg["verdict"] == "deviation", neg["reason"]
    assert neg["expectation"]["deviation"] == "hardshrink_backward/negative-lambd-torch"
    assert pos["verdict"] == "pass"
    proc = conform("run", "--backend", "torch", "--cases", out, "--results", results, "-q",
                   "--no-expectations")  # fmt: skip
    assert_clean(proc, 1)


def test_gelu_backward_tail_is_an_expectation_of_the_kernel_for_every_spec_calling_it():
    """PyTorch 2.13's CPU gelu_backward gives exactly 0 for x <= ~-6.15, so an infinite
    gradOutput gives NaN where the derivative's sign says -+inf: the shipped entry keyed by the
    ATen kernel explains it for gelu_backward and gelu_backward_v2 alike (vendor-style values)."""
    torch = pytest.importorskip("torch")
    from aclnn_conformance.conformance.judge import expectations as ex
    from aclnn_conformance.conformance.run.backend import load_backend

    x = [-7.0, -6.5, -10.0, -1.0, 0.5, 3.0]
    g = [np.inf, -np.inf, np.inf, 1.0, 2.0, -1.5]
    got = torch.ops.aten.gelu_backward(torch.tensor(g), torch.tensor(x))
    if not torch.isnan(got[:3]).all():
        pytest.skip("this PyTorch's gelu_backward has no zero tail")
    # the derivative at x = -7 is -6.3e-11 (by hand: Phi(-7) + x phi(x)), so inf * it is -inf
    assert 0.5 * math.erfc(7 / math.sqrt(2)) - 7 * math.exp(-24.5) / math.sqrt(2 * math.pi) < 0
    backend = load_backend("torch", REG)
    shipped = ex.load(ex.shipped("torch"))
    for op, extra in (("gelu_backward", {}), ("gelu_backward_v2", {"approximate": "none"})):
        args = {"gradOutput": TensorArg.from_array(np.array(g), "FLOAT"),
                "self": TensorArg.from_array(np.array(x), "FLOAT"), **extra,
                "gradInput": TensorArg.empty_like_shape((len(x),), "FLOAT")}  # fmt: skip
        case = _case(op, "ascend950", args, case_id=f"{op}/atk/0001")
        rec = judge(REG.get(op), case, backend, ORACLE, deviations=True).record
        assert rec.verdict == "fail" and rec.differs == "nonfinite", rec.reason
        assert rec.binding == "aten::gelu_backward"
        rec = shipped.apply(rec, "torch", backend.version())
        assert rec.verdict == "xfail", op
        assert rec.expectation["binding"] == "aten::gelu_backward"
        assert rec.expectation["differs"] == "nonfinite"


def test_an_in_place_variant_renames_the_output_in_a_deviations_dtypes():
    """The variant's tensor takes the output's place: a condition on the output's dtype is one on
    that tensor (both named: the dtypes both allow; none left: the deviation cannot apply)."""
    import yaml
    from aclnn_conformance.conformance.spec.inplace import derive

    data = yaml.safe_load((REPO / "specs" / "ops" / "sigmoid.yaml").read_text(encoding="utf-8"))
    base = {"id": "d", "clause": "sigmoid", "differs": "values", "bound": {"ulp": 1},
            "backends": ["aclnn"], "summary": "s", "source": "s"}  # fmt: skip
    data["deviations"] = [{**base, "id": "out-only", "dtypes": {"out": ["FLOAT"]}},
                          {**base, "id": "both", "dtypes": {"self": ["FLOAT", "BF16"],
                                                            "out": ["BF16"]}},
                          {**base, "id": "none", "dtypes": {"self": ["FLOAT"], "out": ["BF16"]}}]  # fmt: skip
    got = {d["id"]: d.get("dtypes") for d in derive(data)["deviations"]}
    assert got == {"out-only": {"self": ["FLOAT"]}, "both": {"self": ["BF16"]}}


def test_sigmoid_backward_torch_rounding_applies_under_any_id():
    """sigmoid_backward/torch-f16-rounding (a bound) on the values of a generated FLOAT16 case
    that PyTorch's float16 arithmetic gets 1.5 ulp wrong, handed over under an imported-looking
    id: the deviation follows the values (issue 23 point 3)."""
    pytest.importorskip("torch")
    from aclnn_conformance.conformance.cases.build import build
    from aclnn_conformance.conformance.cases.generate import plan_op
    from aclnn_conformance.conformance.run.backend import load_backend

    spec = REG.get("sigmoid_backward")
    plan = next(
        p for p in plan_op(spec, ["ascend950"]) if p.id.endswith("/f16/-/layout=out-transposed")
    )
    case = build(spec, plan, 0)
    case.id = "sigmoid_backward/atk/0042"
    case.clauses = ()
    backend = load_backend("torch", REG)
    plain = judge(spec, case, backend, ORACLE)
    if plain.verdict == "pass":
        pytest.skip("this PyTorch rounds these values correctly")
    assert plain.verdict == "fail" and plain.record.differs == "values"
    got = judge(spec, case, backend, ORACLE, deviations=True)
    assert got.verdict == "deviation"
    assert got.record.expectation["deviation"] == "sigmoid_backward/torch-f16-rounding"


def test_a_formula_and_a_nonfinite_deviation_together_excuse_both_and_nothing_else():
    """sigmoid_backward on COMPLEX64 under torch's name: PyTorch's conjugating formula
    (torch-complex-conj) with the NaN of a complex product placed in the other part
    (complex-nonfinite-parts) is a deviation of both; the conjugate with a wrong finite value
    beside the NaN stays a failure."""
    g = np.array([1 + 2j, 0.5 - 1j, np.inf + 0j], np.complex64)
    y = np.array([0.3 + 0.4j, -0.2 + 0.1j, 0.25 + 0j], np.complex64)
    args = {"gradOutput": TensorArg.from_array(g, "COMPLEX64"),
            "output": TensorArg.from_array(y, "COMPLEX64"),
            "gradInput": TensorArg.empty_like_shape((3,), "COMPLEX64")}  # fmt: skip
    case = _case("sigmoid_backward", "atlas-a2", args)
    g128, y128 = g.astype(np.complex128), y.astype(np.complex128)
    with np.errstate(all="ignore"):
        conj = g128 * np.conj(y128 * (1 - y128))  # PyTorch's value, by its own formula
    conj[2] = complex(np.nan, np.inf)  # the inf * 0 of the product lands in the real part

    def torchlike(call, bad=False):
        out = conj.copy()
        if bad:
            out[0] += 0.25
        storage = call.args["gradInput"].storage.copy()
        storage[:] = out.astype(np.complex64)
        return Outcome(0, {"gradInput": storage})

    spec = REG.get("sigmoid_backward")
    got = judge(spec, case, _Fake("torch", torchlike), ORACLE, deviations=True)
    assert got.verdict == "deviation", got.reason
    assert got.record.expectation["deviations"] == [
        "sigmoid_backward/torch-complex-conj",
        "sigmoid_backward/complex-nonfinite-parts",
    ]
    bad = judge(spec, case, _Fake("torch", lambda c: torchlike(c, True)), ORACLE, deviations=True)
    assert bad.verdict == "fail"


def test_a_bound_and_a_nonfinite_deviation_together_excuse_both_and_nothing_else():
    """logit_grad (eps = 0) on BF16 under torch's name: a NaN x, where the kernel writes 0 and
    PyTorch NaN (torch-nan-x, nonfinite), beside an element 2 ulp off (torch-half-steps, bound
    ulp 2) is a deviation of both; 4 ulp off beside the NaN stays a failure."""
    x = np.array([np.nan, 0.3, 0.5, 0.25])
    dy = np.array([1.0, 2.0, 3.0, -1.5])
    args = {"x": TensorArg.from_array(x, "BF16"), "dy": TensorArg.from_array(dy, "BF16"),
            "eps": 0.0, "out": TensorArg.empty_like_shape((4,), "BF16")}  # fmt: skip
    case = _case("logit_grad", "atlas-a2", args)
    xb = np.asarray(case.call.tensor("x").view(), np.float64)  # 0.3 as BF16 holds it
    with np.errstate(all="ignore"):
        exact = dy / (xb * (1 - xb))  # by hand; element 0 is PyTorch's NaN

    def torchlike(call, ulps):
        out = dt.round_to(exact, dt.get("BF16")).astype(np.float64)
        out[1] += ulps * 2.0**-7 * 8  # |out[1]| = 9.5...: a BF16 ulp there is 2^-7 * 8 = 1/16
        return Outcome(0, {"out": _out(call.args, "out", out, "BF16")})

    spec = REG.get("logit_grad")
    got = judge(spec, case, _Fake("torch", lambda c: torchlike(c, 2)), ORACLE, deviations=True)
    assert got.verdict == "deviation", got.reason
    assert "only NaN/inf placement differs" in got.record.expectation["checked"]
    bad = judge(spec, case, _Fake("torch", lambda c: torchlike(c, 4)), ORACLE, deviations=True)
    assert bad.verdict == "fail"
