"""Judging at vendor scale: chunked evaluation and comparison, the golden as a stream, case files
mapped from disk, refinement by need, the oracle under --timeout, --exact, --profile large.

The judge's records must not depend on the chunk size: for every op (its large case and its
strided-layout cases), judging with a forced chunk of 1024 elements gives exactly the record of
judging with the default chunks (counts, maxima, MERE, the worst elements and their order).
"""

from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import replace

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.conformance.acl.views import BLOCK, FlatView
from aclnn_conformance.conformance.cases.casedir import read_case, write_case
from aclnn_conformance.conformance.cases.generate import MODEL_SHAPES, build, plan_op, plan_suite
from aclnn_conformance.conformance.compiled import mode as compiled_mode
from aclnn_conformance.conformance.judge import accumulate
from aclnn_conformance.conformance.judge.result import Result
from aclnn_conformance.conformance.run.judging import judge
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine, precise
from aclnn_conformance.reference.backend import ReferenceBackend

from tests.support.runcli import assert_clean, conform

REG = default_registry()
REF = ReferenceBackend(registry=REG)


def _strip(rec: Result) -> dict:
    rec = copy.deepcopy(rec.to_dict())
    rec.pop("durations", None)
    return rec


def _params():
    """Each op's large case (1024 x 1024, its first product); for the first ops of the registry
    also that case with its inputs transposed and its output in a view with gaps, where the
    chunks gather and scatter through offsets. Planned in the test, not at collection."""
    out = []
    for i, name in enumerate(sorted(s.name for s in REG)):
        out.append(pytest.param(name, False, id=f"{name}-large"))
        if i < 3:
            out.append(pytest.param(name, True, id=f"{name}-large-strided"))
    return out


def _large(name: str, strided: bool):
    spec = REG.get(name)
    large = next((p for p in plan_op(spec) if "shape=large" in p.id), None)
    if large is None:
        pytest.skip(f"{name} has no large case")
    if not strided:
        return large
    return replace(large, id=large.id + "-strided", args=tuple(
        (k, replace(v, layout="gaps" if spec.param(k).is_output else "transposed"))
        if hasattr(v, "shape") else (k, v) for k, v in large.args))  # fmt: skip


@pytest.fixture
def small_chunks():
    old_engine, old_acc = engine.set_chunk(BLOCK), accumulate.Accumulator.chunk
    accumulate.Accumulator.chunk = BLOCK
    yield
    engine.set_chunk(old_engine)
    accumulate.Accumulator.chunk = old_acc


def _judge(name, plan):
    spec = REG.get(name)
    return judge(spec, build(spec, plan, 0), REF, REF).record


@pytest.mark.gates
@pytest.mark.parametrize("name,strided", _params())
def test_chunked_and_unchunked_judging_give_identical_records(name, strided, request):
    plan = _large(name, strided)
    whole = _judge(name, plan)
    request.getfixturevalue("small_chunks")
    chunked = _judge(name, plan)
    assert _strip(chunked) == _strip(whole)
    assert whole.verdict == "pass"


def test_a_failing_output_is_reported_alike_whatever_the_chunk(small_chunks):
    """A backend off by one ulp on every 7th element: the same figures and worst list."""
    from aclnn_conformance.conformance.run.backend import Backend, Capabilities

    class Sloppy(Backend):
        name = "sloppy"
        capabilities = Capabilities(status="exact")

        def execute(self, call):
            got = REF.execute(call)
            out = got.outputs["out"]
            out[::7] = np.nextafter(out[::7], np.float32(np.inf))
            return got

    spec = REG.get("leaky_relu_backward")
    plan = next(p for p in plan_op(spec) if "shape=large" in p.id)
    case = build(spec, plan, 0)
    small = judge(spec, case, Sloppy(REG), REF).record
    accumulate.Accumulator.chunk = 1 << 20
    engine.set_chunk(0)
    whole = judge(spec, case, Sloppy(REG), REF).record
    assert _strip(small) == _strip(whole)
    assert whole.stats["max_ulp"] == 1 and whole.stats["mismatches"] == 0
    assert len(whole.worst) == 5 and whole.worst[0]["ulp"] == 1


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "gaps", "offset", "zero-stride", "broadcast"])  # fmt: skip
def test_flat_view_reads_and_writes_the_elements_of_any_view(layout):
    from aclnn_conformance.conformance.cases import layouts

    rng = np.random.default_rng(3)
    logical = rng.normal(size=(5, 7, 3)).astype(np.float32)
    if layout == "broadcast":
        t = layouts.layout(logical[:, :1, :], "FLOAT", "contiguous")
    else:
        t = layouts.layout(layouts.zero_stride_values(logical) if layout == "zero-stride" else logical,
                        "FLOAT", layout)  # fmt: skip
    shape = (5, 7, 3)
    want = np.broadcast_to(t.view(), shape).reshape(-1)
    f = FlatView(t, shape)
    got = np.concatenate([f.get(s, min(s + 8, f.size)) for s in range(0, f.size, 8)])
    assert np.array_equal(got, want)
    if layout not in ("zero-stride", "broadcast"):
        before = t.storage.copy()
        f.set(3, 40, np.full(37, 9.0, np.float32))
        view = t.view().reshape(-1)
        assert (view[3:40] == 9).all() and np.array_equal(view[:3], want[:3])
        outside = np.ones(t.storage.size, bool)
        outside[f.offsets(0, f.size)] = False
        assert np.array_equal(t.storage[outside], before[outside], equal_nan=True)


def test_a_case_directory_is_mapped_not_copied(tmp_path):
    spec = REG.get("leaky_relu_backward")
    plan = next(p for p in plan_op(spec) if "shape=large" in p.id)
    case = build(spec, plan, 0)
    d = write_case(tmp_path, case, spec.sha256)
    back = read_case(d, tmp_path)
    t = back.call.tensor("self")
    assert not t.storage.flags.writeable and not t.storage.flags.owndata
    assert np.array_equal(t.storage, case.call.tensor("self").storage)
    assert judge(spec, back, REF, REF).verdict == "pass"


def test_the_reference_backend_reads_the_case_inputs_in_place():
    """It never writes an input, so the judge hands it the case's own arrays, read-only."""
    from aclnn_conformance.conformance.run.judging import backend_call

    spec = REG.get("softplus_backward")
    case = build(spec, next(p for p in plan_op(spec) if p.kind == "positive"), 0)
    call = backend_call(spec, case.call, REF)
    x, out = call.tensor("self"), call.tensor("gradInput")
    assert np.shares_memory(x.storage, case.call.tensor("self").storage)
    assert not x.storage.flags.writeable
    assert not np.shares_memory(out.storage, case.call.tensor("gradInput").storage)


def _double_scalar_call(n: int, dtype: str = "FLOAT16") -> Call:
    rng = np.random.default_rng(5)
    x = TensorArg.from_array(rng.normal(0, 2, n), dtype)
    g = TensorArg.from_array(rng.normal(0, 2, n), dtype)
    out = TensorArg.empty_like_shape((n,), dtype, fill=np.nan)
    return Call("leaky_relu_backward", "atlas-a2", {"gradOutput": g, "self": x,
                "negativeSlope": ScalarArg("DOUBLE", 1.0), "selfIsResult": False, "out": out})  # fmt: skip


def test_a_double_scalar_refines_only_the_elements_float64_cannot_decide(monkeypatch):
    """float64 holds every DOUBLE value: the scalar's dtype alone refines nothing."""
    calls = []
    real = precise._value_at
    monkeypatch.setattr(precise, "_value_at", lambda *a: calls.append(1) or real(*a))
    call = _double_scalar_call(100_000)
    got = engine.evaluate(call).outputs["out"]
    assert len(calls) < 100  # the near-midpoint ones only (products of two fp16 values: none)
    g = call.tensor("gradOutput").storage.astype(np.float64)
    assert np.array_equal(got, g.astype(np.float16))  # slope 1: gradOutput on both branches


def test_the_oracle_is_bounded_by_the_timeout():
    """An --exact DOUBLE case of 2^20 elements needs minutes in mpmath: the judge stops it."""
    spec = REG.get("softplus_backward")
    plan = next(p for p in plan_op(spec) if p.kind == "positive" and "/f64/" in p.id)
    case = build(spec, plan, 0)
    n = 1 << 20
    for name in ("gradOutput", "self"):
        case.call.args[name] = TensorArg.from_array(np.linspace(-3, 3, n), "DOUBLE")
    case.call.args["gradInput"] = TensorArg.empty_like_shape((n,), "DOUBLE", fill=np.nan)
    exact = ReferenceBackend(registry=REG, exact=True)
    t0 = time.monotonic()
    # 5 s: the backend (faithful DOUBLE, ~0.5 s alone) must finish under a loaded machine too;
    # the exact oracle needs minutes
    judged = judge(spec, case, REF, exact, "reference", timeout=5.0)
    assert judged.verdict == "timeout"
    assert "oracle reference did not finish within 5 s" in judged.reason
    assert time.monotonic() - t0 < 30


@pytest.mark.gates
def test_compiling_the_oracles_kernels_is_not_charged_to_the_timeout(monkeypatch):
    """A kernel's first compilation on a machine takes seconds (the comparison pass: 20 s on 2
    cores): the golden stream is prepared before the clock starts, so the case still passes."""
    real = engine.GoldenStream.prepare
    prepared = []

    def slow(stream, *shared):
        time.sleep(1.5)  # a cold compilation, longer than the timeout
        prepared.append(time.monotonic())
        return real(stream, *shared)

    monkeypatch.setattr(engine.GoldenStream, "prepare", slow)
    spec = REG.get("leaky_relu_backward")
    case = build(spec, next(p for p in plan_op(spec) if p.kind == "positive"), 0)
    judged = judge(spec, case, REF, REF, "reference", timeout=1.0)
    assert prepared and judged.verdict == "pass", judged.reason


@pytest.mark.gates
def test_compiling_the_reference_backends_kernels_is_not_charged_to_the_timeout(monkeypatch):
    """The reference as the backend compiles its kernels before the case's clock starts
    (Backend.prepare_call): a cold compilation longer than the timeout leaves the case a pass
    (an ATK case of GeGluBackward timed out at 17 s under load; 1 s with its kernel cached)."""
    pytest.importorskip("numba")
    from aclnn_conformance.reference import kernel

    real = kernel._load
    loads = []

    def slow(key, text):
        time.sleep(1.5)  # a cold compilation, longer than the timeout
        loads.append(key)
        return real(key, text)

    monkeypatch.setattr(kernel, "_load", slow)
    monkeypatch.setattr(kernel, "_loaded", {})  # every kernel cold
    spec = REG.get("leaky_relu_backward")
    case = build(spec, next(p for p in plan_op(spec) if "shape=large" in p.id), 0)
    old = compiled_mode.set_mode("numba")  # the compiled path at this case's 2^20 elements
    try:
        judged = judge(spec, case, ReferenceBackend(registry=REG), REF, "reference", timeout=1.0)
    finally:
        compiled_mode.set_mode(old)
    assert loads and judged.verdict == "pass", judged.reason


@pytest.mark.gates
def test_exact_is_recorded_in_the_results_and_the_reports(tmp_path):
    results = tmp_path / "r.jsonl"
    md = tmp_path / "r.md"
    proc = conform("run", "--op", "softplus_backward", "--dtype", "DOUBLE", "--exact",
                   "--results", results, "--markdown", md, "-q")  # fmt: skip
    assert_clean(proc, 0)
    recs = [json.loads(line) for line in results.read_text().splitlines()]
    assert recs and all("DOUBLE exact" in r["oracle_version"] for r in recs)
    assert all("--exact" in r["replay"] for r in recs)
    meta = json.loads((tmp_path / "r.jsonl.meta.json").read_text())
    assert meta["exact"] is True and "DOUBLE exact" in meta["oracle_version"]
    assert "DOUBLE exact" in md.read_text()
    plain = tmp_path / "p.jsonl"
    assert_clean(conform("run", "--op", "softplus_backward", "--dtype", "DOUBLE",
                         "--results", plain, "-q"), 0)  # fmt: skip
    recs = [json.loads(line) for line in plain.read_text().splitlines()]
    assert all("DOUBLE faithful" in r["oracle_version"] for r in recs)


@pytest.mark.gates
def test_exact_is_refused_where_nothing_has_an_exact_mode(tmp_path):
    proc = conform("run", "--backend", "torch", "--oracle", "torch", "--exact", "--op",
                   "softplus_backward", "--results", tmp_path / "r.jsonl")  # fmt: skip
    assert_clean(proc, 2)
    assert "--exact" in proc.stderr and "drop --exact" in proc.stderr


@pytest.mark.large
def test_the_large_profile_adds_model_shapes_for_every_op():
    default = {p.id for _, p in plan_suite(REG)}
    large = plan_suite(REG, profile="large")
    added = [(s, p) for s, p in large if p.id not in default]
    assert {p.id for _, p in large} >= default
    for spec in REG:
        if any(p.index_of is not None for p in spec.params):
            continue  # KNOWN GAP (closing note): no model shapes for an op with an index tensor yet
        mine = [p for s, p in added if s.name == spec.name]
        model = [p for p in mine if "shape=model-" in p.id]
        # a ruled or laid tensor takes its rule's shape: the free ones carry the model shapes
        shapes = {tuple(a.shape) for p in model for k, a in p.args
                  if hasattr(a, "shape") and (spec.param(k).shape or spec.param(k).along) is None}  # fmt: skip
        if shapes != set(MODEL_SHAPES):  # a rank the checks refuse: leading dims merged
            low = min((c.max for c in spec.checks if c.kind == "max_rank" and c.max), default=8)
            assert low < max(map(len, MODEL_SHAPES)), spec.name
            want = {m if len(m) <= low else (math.prod(m[: len(m) - low + 1]), *m[len(m) - low + 1 :])
                    for m in MODEL_SHAPES}  # fmt: skip
            assert shapes == want, spec.name
        # and an op with a dim parameter reduces a 2 x 2^20 tensor along its last dim
        rows = [p for p in mine if "shape=model-" not in p.id]
        assert all("@long-2x1048576" in p.id for p in rows), spec.name
        assert bool(rows) == any(c.kind == "dim_in_range" for c in spec.checks), spec.name


def test_the_large_profile_is_refused_with_a_case_directory(tmp_path):
    proc = conform("run", "--profile", "large", "--cases", tmp_path, "--results", tmp_path / "r")
    assert_clean(proc, 2)
    assert "--profile" in proc.stderr


def test_flat_view_offsets_are_the_views_elements_in_c_order():
    """FlatView.offsets (the trailing dims' pattern plus each block's base) gives, for random
    views (broadcast dims, any strides, an offset) and random ranges, the storage index of each
    element that numpy's own strided view holds there in C order (np.lib.stride_tricks)."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(x) for x in rng.integers(1, 7, rank))
        own = tuple(s if rng.random() < 0.7 else 1 for s in shape)
        strides = tuple(int(x) for x in rng.integers(0, 50, rank))
        size = 3 + 1 + sum((a - 1) * b for a, b in zip(own, strides, strict=True))
        storage = np.arange(size, dtype=np.int64)
        flat = FlatView(TensorArg("INT64", own, strides, 3, storage), shape)
        view = np.lib.stride_tricks.as_strided(
            storage[3:], own, tuple(8 * s for s in strides), writeable=False
        )
        want = np.broadcast_to(view, shape).reshape(-1)  # the storage index is the value
        for _ in range(5):
            a = int(rng.integers(0, flat.size))
            b = int(rng.integers(a + 1, flat.size + 1))
            assert np.array_equal(flat.offsets(a, b), want[a:b]), (shape, own, strides, a, b)
