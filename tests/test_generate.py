"""Case generation (conformance.cases.generate / negatives / values): determinism, coverage, exactness.

Every op-generic test runs for every op of the registry. Expected sets that need an op's seed
doc (its valid dtype combinations, scalar dtypes, special-point values) are enumerated
independently in its oracle, tests/oracles/<spec name>.py, from the seed docs' dtype tables and
rules, not read back from the generator; an op without an oracle gets the generic tests only.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import ScalarArg, TensorArg, contiguous_strides
from aclnn_conformance.conformance.cases.generate import build, plan_op, plan_suite, select
from aclnn_conformance.conformance.cases.negatives import unreachable
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference.engine import evaluate

from tests import oracles
from tests.support.representatives import op_params, representatives
from tests.support.runcli import assert_clean, conform

REG = default_registry()
OPS = sorted(s.name for s in REG)
ORACLES = oracles.of(OPS)  # {op: its module in tests/oracles/}
# the per-op tests: every op in the registry tier, one op per combination of concepts (and each
# op with a gradient oracle of the seeds) in the fast tier (tests/support/representatives.py)
FAST = representatives(REG, {op for op, m in ORACLES.items() if oracles.kind(m) == "gradient"})
EACH_OP = op_params(OPS, FAST)
BF16 = ml_dtypes.bfloat16


def rne(value: float, dtype: str) -> float:
    """value rounded to nearest (ties to even) in dtype, chosen among exact neighbours."""
    npd = dt.get(dtype).np
    guess = np.array([value], dtype=np.float64).astype(npd)
    bits_t = {2: np.uint16, 4: np.uint32, 8: np.uint64}[npd.itemsize]
    b = guess.view(bits_t).astype(np.int64)[0]
    cands = np.array([b - 1, b, b + 1]).astype(bits_t).view(npd)
    finite = [c for c in cands if np.isfinite(float(c))]
    best = min(
        finite,
        key=lambda c: (abs(float(c) - value), int(np.array(c, npd).view(bits_t)) & 1),
    )
    return float(best)


# -- fixtures -------------------------------------------------------------------------------------


class _PerOp(dict):
    """op -> its value, made when first asked for (a worker builds only the ops of its tests)."""

    def __init__(self, make) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, op: str) -> list:
        self[op] = value = self.make(op)
        return value


@pytest.fixture(scope="module")
def plans() -> dict[str, list]:
    return _PerOp(lambda op: plan_op(REG.get(op)))


@pytest.fixture(scope="module")
def suite() -> list:
    return plan_suite(REG)


@pytest.fixture(scope="module")
def cases(plans) -> dict[str, list]:
    """Every generated case of an op, built with seed 0."""
    return _PerOp(lambda op: [build(REG.get(op), p, 0) for p in plans[op]])


def _tensors(case, outputs: bool | None = None) -> dict[str, TensorArg]:
    spec = REG.get(case.op)
    return {
        n: a
        for n, a in case.call.args.items()
        if isinstance(a, TensorArg)
        and (outputs is None or (spec.param(n).is_output if outputs else spec.param(n).is_read))
    }  # an in-place op's tensor is both: read (holds values) and written


def _positive(cases_of_op):
    return [c for c in cases_of_op if c.kind == "positive"]


# -- determinism ----------------------------------------------------------------------------------


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, dict[str, bytes]]:
    """The same selection exported with seed 3 (twice) and seed 4."""
    root = tmp_path_factory.mktemp("exports")
    sel = ["--op", "hardshrink_backward", "--product", "atlas-a2", "--max-cases", "90"]
    out = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        proc = conform("cases", "export", root / name, "--seed", seed, *sel)
        assert_clean(proc, 0)
        out[name] = _files(root / name)
    return out


@pytest.mark.gates
def test_same_seed_exports_byte_identical_case_directories(exports):
    a, b = exports["a"], exports["b"]
    assert a, "nothing exported"
    assert sorted(a) == sorted(b)
    differing = [name for name in a if a[name] != b[name]]
    assert differing == []


def test_another_seed_keeps_the_ids_but_changes_tensor_values(exports):
    a, c = exports["a"], exports["c"]
    ids_a = {Path(n).parent.as_posix() for n in a if n.endswith("case.json")}
    ids_c = {Path(n).parent.as_posix() for n in c if n.endswith("case.json")}
    assert ids_a == ids_c
    assert sorted(a) == sorted(c)
    for name in a:
        if name.endswith("case.json"):
            ja, jc = json.loads(a[name]), json.loads(c[name])
            assert (ja["seed"], jc["seed"]) == (3, 4)
            assert ja["id"] == jc["id"] == str(Path(name).parent.as_posix())
            # branch clauses depend on the values drawn; the rest of the case does not
            for key in ("op", "product", "kind", "expected_status"):
                assert ja[key] == jc[key]
    changed_inputs = [n for n in a if n.endswith(("/self.npy", "/gradOutput.npy")) and a[n] != c[n]]
    assert len(changed_inputs) > 40
    # outputs start as NaN-filled storages whatever the seed
    assert all(a[n] == c[n] for n in a if n.endswith("/gradInput.npy"))


@pytest.mark.gates
def test_case_ids_are_unique_across_the_suite(suite):
    ids = [p.id for _, p in suite]
    assert len(ids) == len(set(ids)) > 1000
    for i in ids:
        op, product = i.split("/")[:2]
        assert op in OPS and product in REG.get(op).products


@pytest.mark.gates
def test_case_values_depend_only_on_seed_and_id(plans):
    spec = REG.get("gelu_backward_v2")
    plan = next(p for p in plans[spec.name] if p.id.endswith("/values=normal"))
    a, b, c = build(spec, plan, 11), build(spec, plan, 11), build(spec, plan, 12)
    assert a.call.args["self"].storage.tobytes() == b.call.args["self"].storage.tobytes()
    assert a.call.args["self"].storage.tobytes() != c.call.args["self"].storage.tobytes()
    assert a.clauses == b.clauses


# -- clause coverage ------------------------------------------------------------------------------


@pytest.mark.gates
@pytest.mark.parametrize("op", EACH_OP)
def test_every_clause_of_the_spec_is_exercised(op, cases):
    spec = REG.get(op)
    exercised = set().union(*(c.clauses for c in cases[op]))
    missing = [c for c in spec.clause_ids() if c not in exercised]
    assert missing == []
    assert exercised <= set(spec.clause_ids())


def _allowed_before(spec, check, product) -> dict[str, set[str]]:
    """Dtypes a tensor can still have when `check` runs: narrowed by earlier dtype_in rules."""
    out: dict[str, set[str]] = {}
    for c in spec.checks:
        if c is check:
            break
        if c.kind == "dtype_in":
            allowed = set(spec.dtypes_for(c.dtype_set, product) if c.dtype_set else c.dtypes)
            for t in c.terms:
                if t.param:
                    out[t.param] = out.get(t.param, allowed) & allowed
    return out


def _dtype_of(term, assign: dict[str, str]) -> str | None:
    if term.dtype:
        return term.dtype
    if term.param:
        return assign[term.param]
    return dt.tables().promote(*(assign[p] for p in term.promote))


def _shadow_proof(spec, check, product) -> str:
    """Why `check` can never be the first rule to fail on `product`; fails when no reason holds."""
    before = _allowed_before(spec, check, product)
    index = spec.checks.index(check)
    if check.kind in ("promotable", "castable"):
        names = set(check.params) | {p for t in check.terms for p in t.params()}
        if check.to is not None:
            names |= set(check.to.params())
        names = {n for n in names if spec.param(n).is_tensor}
        assert names <= set(before), f"{check.id}: {names - set(before)} unconstrained"
        order = sorted(names)
        for combo in itertools.product(*(sorted(before[n]) for n in order)):
            assign = dict(zip(order, combo, strict=True))
            if check.kind == "promotable":
                a, b = (assign[p] for p in check.params[:2])
                assert dt.tables().promote(a, b) is not None, (check.id, a, b)
            else:
                dst = _dtype_of(check.to, assign)
                for t in check.terms:
                    src = _dtype_of(t, assign)
                    assert src and dst and dt.tables().can_cast(src, dst), (check.id, assign)
        return "every dtype the earlier dtype_in rules allow satisfies it"
    if check.kind == "dtype_in":
        allowed = set(spec.dtypes_for(check.dtype_set, product))
        for (p,) in [t.params() for t in check.terms]:
            if p in before and before[p] <= allowed:  # its own earlier list (in place: out's
                continue  # list on self after self's own)
            ties = [c for c in spec.checks[:index] if c.kind == "same_dtype" and p in c.params]
            partners = {q for c in ties for q in c.params if q != p and q in before}
            assert any(before[q] <= allowed for q in partners), f"{check.id}: not shadowed"
        return "an earlier rule limits it to a list no larger (its own, or a same_dtype tie)"
    pytest.fail(f"{spec.name}/{check.id}: no shadowing argument for kind {check.kind}")


@pytest.mark.parametrize("op", EACH_OP)
def test_every_error_clause_has_a_negative_case_or_is_provably_shadowed(op, plans):
    spec = REG.get(op)
    for product in spec.products:
        mine = [p for p in plans[op] if p.product == product]
        reached = {p.clauses[0] for p in mine if p.kind == "negative"}
        errors = [c.id for c in spec.checks if c.status != 0 and c.applies_on(product)]
        gone = unreachable(spec, mine)
        assert sorted(gone) == sorted(set(errors) - reached)
        for cid in gone:
            check = next(c for c in spec.checks if c.id == cid)
            assert _shadow_proof(spec, check, product)


@pytest.mark.parametrize("op", list(ORACLES))
def test_known_shadowed_clauses(op):
    """The concrete cases the proof above covers (from the specs as written): the oracle's
    UNREACHABLE clauses (leaky's cast-out is reachable: an INT32 out)."""
    spec = REG.get(op)
    want = set(ORACLES[op].UNREACHABLE)
    assert set(unreachable(spec, plan_op(spec, ["atlas-a2"]))) == want, op


@pytest.mark.parametrize("op", EACH_OP)
def test_negative_cases_expect_the_reference_status_and_clause(op, cases):
    spec = REG.get(op)
    negatives = [c for c in cases[op] if c.kind == "negative"]
    assert negatives
    for case in negatives:
        assert len(case.clauses) == 1, case.id
        check = next(c for c in spec.checks if c.id == case.clauses[0])
        assert case.expected_status == check.status != 0, case.id
        got = evaluate(case.call)
        assert got.status == case.expected_status, (case.id, got.message)
        assert got.clause == spec.clause(case.clauses[0]), (case.id, got.clause)


# -- positive coverage ----------------------------------------------------------------------------


@pytest.mark.parametrize("op", list(ORACLES))
def test_dtype_matrix_is_every_valid_combination_on_every_product(op, plans):
    spec = REG.get(op)
    tensors = [p.name for p in spec.params if p.is_tensor]
    for product in spec.products:
        positive = [p for p in plans[op] if p.product == product and p.kind == "positive"]
        matrix = {
            tuple((n, p.arg[n].dtype) for n in tensors)
            for p in positive
            if p.id.endswith("/dtypes")
        }
        want = ORACLES[op].dtype_combos(product)
        assert matrix == want, (product, sorted(matrix ^ want))
        # no other positive case strays outside the valid combinations
        for p in positive:
            assert tuple((n, p.arg[n].dtype) for n in tensors) in want, p.id


@pytest.mark.parametrize("op", EACH_OP)
def test_positive_dtype_combinations_are_accepted_by_the_reference(op, cases):
    """Every op: each case of the dtype matrix is a valid call (status 0 in the reference)."""
    matrix = [c for c in _positive(cases[op]) if c.id.endswith("/dtypes")]
    assert matrix
    for c in matrix:
        got = evaluate(c.call)
        assert got.status == 0, (c.id, got.message)


def test_dtype_matrix_sizes_for_elu():
    """elu: gradOutput == selfOrResult in {FLOAT, FLOAT16}(+BF16), gradInput any of the same."""
    spec = REG.get("elu_backward")
    sizes = {
        product: sum(1 for p in plan_op(spec, [product]) if p.id.endswith("/dtypes"))
        for product in spec.products
    }
    # 2 x 2 without BF16; 3 x 3 where the doc lists BF16 (A2, and A3 and 950 on ops-nn)
    assert sizes == {"atlas-inference": 4, "atlas-training": 4, "atlas-a2": 9, "atlas-a3": 9,
                     "ascend950": 9}  # fmt: skip


def _first_product_cases(op, cases):
    first = REG.get(op).products[0]
    return [c for c in _positive(cases[op]) if c.product == first]


@pytest.mark.parametrize("op", EACH_OP)
def test_shapes_cover_ranks_empty_tensors_and_broadcast(op, cases):
    spec = REG.get(op)
    mine = _first_product_cases(op, cases)
    ins = [p.name for p in spec.tensor_inputs]
    out = spec.formula.output
    shapes = [{n: t.shape for n, t in _tensors(c).items()} for c in mine]
    # a 0-d tensor cannot be split in halves (a min_rank check, or its one element is odd)
    splits = any(t.form == "split" for p in spec.params if p.shape for t in p.shape.terms())
    ranks = (1, 2, 4, 8) if splits else (0, 1, 2, 4, 8)
    # shape rules derive those tensors (and a tensor laid along a dim takes its count from its
    # `of`): the free ones cover the ranks their checks allow
    ruled = {p.name for p in spec.params if p.is_tensor and (p.shape or p.along) is not None}
    if ruled:
        free = [p.name for p in spec.tensor_inputs if p.name not in ruled]
        lo = max((c.min for c in spec.checks if c.kind == "min_rank" and set(c.params) & set(free)), default=0)  # fmt: skip
        hi = min((c.max for c in spec.checks if c.kind == "max_rank" and set(c.params) & set(free)), default=8)  # fmt: skip
        for rank in (r for r in ranks if lo <= r <= hi):
            assert any(all(len(sh[n]) == rank and 0 not in sh[n] for n in free) for sh in shapes), (
                f"no {rank}-d case"
            )
        if any(lo <= len(e) <= hi for e in ((0,), (2, 0, 3), (4, 0))):
            assert any(0 in sh[free[0]] for sh in shapes), "no empty case"
        return
    for rank in ranks:
        assert any(all(len(s) == rank and 0 not in s for s in sh.values()) for sh in shapes), (
            f"no {rank}-d case"
        )
    # the tensors' shapes alike (a tensor a split rule halves: alike but along the split dim)
    empties = [sh[out] for sh in shapes if 0 in sh[out] and len({len(s) for s in sh.values()}) == 1
               and len({s.index(0) for s in sh.values() if 0 in s}) == 1]  # fmt: skip
    assert any(s.index(0) == 0 for s in empties), "no empty case with the zero first"
    assert any(0 < s.index(0) < len(s) - 1 for s in empties), "no zero in a middle dim"
    assert any(len(s) > 1 and s[-1] == 0 for s in empties), "no zero in the last dim"
    empty_rules = {c.id for c in spec.checks if c.kind == "empty_success"}
    for c in mine:  # (a ruled output may be empty where the op still computes: a loss's
        # reduction 0 of empty inputs, whose mean is NaN; empty_success cannot say that)
        if spec.param(out).shape is None and _tensors(c, outputs=True)[out].is_empty:
            assert empty_rules & set(c.clauses), c.id
    if any(p.kind == "broadcast" for p in spec.properties) and spec.param(ins[0]).is_inout:
        a, b = ins[:2]  # in place: a is the output, only b may broadcast into its shape
        assert any(sh[b] != sh[a] for sh in shapes), f"{b} broadcast"
        assert any(len(sh[b]) < len(sh[a]) for sh in shapes), "rank-extending broadcast"
        for sh in shapes:
            assert sh[a] == tuple(np.broadcast_shapes(sh[a], sh[b]))
    elif any(p.kind == "broadcast" for p in spec.properties):
        a, b = ins[:2]
        assert any(sh[a] != sh[out] and sh[b] == sh[out] for sh in shapes), f"{a} broadcast"
        assert any(sh[b] != sh[out] and sh[a] == sh[out] for sh in shapes), f"{b} broadcast"
        assert any(sh[a] != sh[out] and sh[b] != sh[out] for sh in shapes), "both broadcast"
        assert any(len(sh[a]) < len(sh[out]) for sh in shapes), "rank-extending broadcast"
        assert any(len(sh[b]) < len(sh[out]) for sh in shapes), "rank-extending broadcast"
        for sh in shapes:
            assert sh[out] == tuple(np.broadcast_shapes(sh[a], sh[b]))


@pytest.mark.gates
@pytest.mark.parametrize("op", EACH_OP)
def test_one_case_per_op_has_at_least_a_million_elements(op, cases):
    spec = REG.get(op)
    out = spec.formula.output
    # a ruled output may be one element (a mean), a laid weight C: the free inputs carry it
    ruled = {p.name for p in spec.params if p.is_tensor and (p.shape or p.along) is not None}
    if ruled:
        free = [p.name for p in spec.tensor_inputs if p.name not in ruled]
        big = [
            c for c in _positive(cases[op]) if all(c.call.args[n].numel >= 1 << 20 for n in free)
        ]
        assert big, "no case with a million elements"
        return
    big = [c for c in _positive(cases[op]) if c.call.args[out].numel >= 1 << 20]
    assert big, "no case with a million elements"
    free = {p.name for p in spec.params if p.is_tensor and p.shape is None}
    assert all(t.numel >= 1 << 20 for n, t in _tensors(big[0]).items() if n in free)


def _all_nan(storage: np.ndarray) -> bool:
    wide = storage.astype(np.complex128 if storage.dtype.kind == "c" else np.float64)
    return bool(np.isnan(wide).all())


def _layout(t: TensorArg) -> str:
    if t.rank == 0 or t.is_empty:
        return "scalar-or-empty"
    if 0 in t.strides and max(t.shape) > 1:
        return "zero-stride"
    if t.is_contiguous():
        return "contiguous"
    if t.strides == tuple(reversed(contiguous_strides(tuple(reversed(t.shape))))):
        return "transposed"
    if t.strides[-1] > 1:
        return "gaps"
    if t.offset > 0 and t.strides == contiguous_strides(t.shape):
        return "offset"
    return "other"


@pytest.mark.parametrize("op", EACH_OP)
def test_layouts_for_inputs_and_outputs(op, cases):
    mine = _first_product_cases(op, cases)
    seen_in, seen_out = set(), set()
    spec = REG.get(op)
    pure = [p.name for p in spec.tensor_inputs if not p.is_output]  # an in-place op's other inputs
    for c in mine:
        reads = _tensors(c, outputs=False)
        # the inputs' layouts: the pure inputs' where an in-place op has some (its inout tensor
        # takes the output layouts), else every read tensor's
        ins = {_layout(t) for n, t in reads.items() if n in (pure or reads)}
        if len(ins) == 1:
            seen_in |= ins
        elif any(p.shape is not None for p in spec.params if p.is_tensor):
            # ruled shapes (a 1-D target beside a 2-D self): a layout one transposes alone
            seen_in |= {_layout(t) for t in reads.values()}
        seen_out |= {_layout(t) for t in _tensors(c, outputs=True).values()}
        for t in _tensors(c, outputs=False).values():
            if t.dtype_info.is_float and _layout(t) in ("gaps", "offset", "zero-stride"):
                mask = np.ones(t.storage.size, bool)
                idx = TensorArg(t.dtype, t.shape, t.strides, t.offset, np.arange(t.storage.size))
                mask[np.asarray(idx.view()).reshape(-1)] = False
                # reading outside the view must show: padding and gaps hold NaN
                assert np.isnan(t.storage[mask].astype(np.float64)).all(), c.id
    spec = REG.get(op)
    # zero-stride outputs would alias elements (write races): only pure inputs use them
    pure_inputs = any(p.is_read and not p.is_output for p in spec.tensor_inputs)
    assert {"transposed", "gaps", "offset"} | ({"zero-stride"} if pure_inputs else set()) <= seen_in
    if not any(p.shape is not None for p in spec.outputs):  # a ruled out may be 0-d (a mean)
        assert {"transposed", "gaps", "offset"} <= seen_out
    assert "zero-stride" not in seen_out
    for c in mine:
        for n, t in _tensors(c, outputs=True).items():
            if spec.param(n).is_read:  # in place: it holds the input values instead
                continue
            if t.dtype_info.is_float:
                assert _all_nan(t.storage), f"{c.id}: float outputs must start as NaN"
            else:
                assert np.unique(t.storage).size <= 1, f"{c.id}: outputs start as one fill value"


@pytest.mark.parametrize("op", EACH_OP)
def test_value_kinds_draw_what_they_say(op, cases):
    spec = REG.get(op)
    seen = defaultdict(set)
    for c in _positive(cases[op]):
        kind = c.id.rsplit("/values=", 1)[1] if "/values=" in c.id else None
        if kind is None:
            continue
        tensors = list(_tensors(c, outputs=False).values())
        inputs = [t for t in tensors if t.dtype_info.category in ("float", "complex")]
        if not inputs:  # integer inputs (hardsigmoid's INT32, say): values, not float kinds
            assert tensors and all(t.dtype_info.category in ("int", "bool") for t in tensors)
            continue
        seen[(c.product, inputs[0].dtype)].add(kind)
        if inputs[0].dtype_info.category == "complex":  # its parts are the float values
            fi = np.finfo(np.real(np.zeros(1, inputs[0].dtype_info.np)).dtype)
            parts = [np.asarray(t.view()).reshape(-1) for t in inputs]
            v = np.concatenate([f(a).astype(np.float64) for a in parts for f in (np.real, np.imag)])
        else:
            fi = ml_dtypes.finfo(inputs[0].dtype_info.np)
            v = np.concatenate([np.asarray(t.view()).astype(np.float64).reshape(-1)
                                for t in inputs])  # fmt: skip
        finite = v[np.isfinite(v)]
        if kind == "special":
            assert np.isnan(v).any() and np.isposinf(v).any() and np.isneginf(v).any(), c.id
            assert (np.abs(finite) == float(fi.max)).any(), c.id
            assert (np.abs(finite) == float(fi.smallest_subnormal)).any(), c.id
            assert (np.signbit(v) & (v == 0)).any(), f"{c.id}: no -0.0"
        else:
            assert np.isfinite(v).all(), c.id
        if kind == "tiny":
            assert (np.abs(v) < 1.01e-3).all(), c.id
            sub = (v != 0) & (np.abs(v) < float(fi.smallest_normal))
            assert sub.any(), f"{c.id}: no subnormal"
        if kind == "large":
            assert (np.abs(v) >= float(fi.max) / 4).all(), c.id
        if kind == "wide":
            assert np.abs(v).max() > 100, c.id
    assert seen
    for key, kinds in seen.items():
        assert kinds == {"normal", "wide", "tiny", "large", "special"}, key
    assert {p for p, _ in seen} == set(spec.products)


@pytest.mark.parametrize("op", EACH_OP)
def test_every_special_point_has_a_case(op, cases):
    """Every op: each special point of the spec is placed by a positive case on each product."""
    spec = REG.get(op)
    for product in spec.products:
        found = {
            c.id.rsplit("/point=", 1)[1]
            for c in _positive(cases[op])
            if c.product == product and "/point=" in c.id
        }
        assert found == {p.id for p in spec.special_points}, product


@pytest.mark.parametrize("op", list(ORACLES))
def test_special_points_are_placed_exactly_after_rounding(op, cases):
    param = ORACLES[op].X
    expected = ORACLES[op].POINT_VALUES
    found = set()
    for c in _positive(cases[op]):
        if "/point=" not in c.id:
            continue
        point = c.id.rsplit("/point=", 1)[1]
        t = c.call.args[param]
        want = rne(expected[point], t.dtype)
        view = np.asarray(t.view()).astype(np.float64).reshape(-1)
        assert (view == want).any(), (c.id, want)
        found.add(point)
    assert found == set(expected)


def test_hardshrink_bf16_point_at_unrepresentable_lambd(cases):
    case = next(
        c
        for c in cases["hardshrink_backward"]
        if c.id == "hardshrink_backward/atlas-a2/bf16/-/point=x-at-unrepresentable-lambd"
    )
    assert case.call.args["lambd"] == ScalarArg("FLOAT", 0.3)
    self_ = np.asarray(case.call.args["self"].view())
    assert self_.dtype == BF16
    bf16_03 = BF16(0.3)  # 0.30078125: 0.3 is not representable in bf16 (nor in FLOAT)
    assert float(bf16_03) == 0.30078125
    assert (self_ == bf16_03).any()
    # every placed element is the point or one of its two neighbours in bf16
    below, above = float(np.nextafter(bf16_03, BF16(0))), float(np.nextafter(bf16_03, BF16(1)))
    assert (below, above) == (0.298828125, 0.302734375)
    # and the engine decides them against the exact FLOAT lambda (0.30000001192...)
    got = evaluate(case.call)
    assert got.status == 0
    assert {"dead-zone", "pass-through"} <= set(case.clauses)


@pytest.mark.parametrize("op", list(ORACLES))
def test_scalar_dtypes_cover_every_allowed_dtype(op, cases):
    spec = REG.get(op)
    scalars = [p.name for p in spec.attributes if p.kind == "scalar"]
    for product in spec.products:
        for name in scalars:
            got = {
                c.call.args[name].dtype
                for c in _positive(cases[op])
                if c.product == product and isinstance(c.call.args.get(name), ScalarArg)
            }
            assert got == ORACLES[op].scalar_dtypes(product, name), (product, name)


@pytest.mark.parametrize("op", EACH_OP)
def test_scalar_values_fit_their_dtype(op, cases):
    spec = REG.get(op)
    scalars = [p.name for p in spec.attributes if p.kind == "scalar"]
    for c in _positive(cases[op]):
        for name in scalars:
            s = c.call.args[name]
            if s is None:  # a null the spec accepts (if_null): only in its own null case
                assert spec.param(name).nullable and c.id.endswith(f"/null={name}")
                continue
            cat = dt.get(s.dtype).category
            if cat == "bool":
                assert s.value is True
            elif cat == "int":
                assert float(s.value).is_integer()


# -- select ---------------------------------------------------------------------------------------


def _static(pairs) -> set[tuple[str, str]]:
    return {(s.name, c) for s, p in pairs for c in p.clauses}


@pytest.mark.gates
def test_select_keeps_every_static_clause_and_the_budget(suite):
    pairs = suite
    clauses = _static(pairs)
    # each case the cover keeps adds a clause: a budget of len(clauses) always suffices
    for budget in (len(clauses), len(clauses) + 7, len(clauses) + 500):
        chosen = select(pairs, budget)
        assert len(chosen) <= budget
        assert len(chosen) == budget  # more cases than budget: the budget is used up
        assert _static(chosen) == clauses, budget
        again = select(pairs, budget)
        assert [p.id for _, p in chosen] == [p.id for _, p in again]
        order = {p.id: i for i, (_, p) in enumerate(pairs)}
        idx = [order[p.id] for _, p in chosen]
        assert idx == sorted(idx), "select must keep the suite order"
    # with room to spare, every op x product x kind group gets cases
    groups = {(p.op, p.product, p.kind) for _, p in pairs}
    roomy = len(clauses) + len(groups)  # grows with the registry
    assert {(p.op, p.product, p.kind) for _, p in select(pairs, roomy)} == groups


def test_select_small_budgets_and_no_budget():
    pairs = plan_suite(REG, ["softplus_backward"])
    assert select(pairs, None) == pairs
    assert select(pairs, len(pairs) + 5) == pairs
    for budget in (1, 3, 10):
        assert len(select(pairs, budget)) <= budget


def test_gelu_none_cases_do_not_claim_the_tanh_lets():
    """approximate = none takes the erf branch only: the tanh mode's u and du (lets tanh-inner,
    tanh-inner-derivative) are never evaluated, so a failure there must not be blamed on them."""
    spec = default_registry().get("gelu_backward_v2")
    for plan in plan_op(spec, ["atlas-a2"]):
        if plan.kind != "positive" or "approximate=" not in plan.id:
            continue
        clauses = set(build(spec, plan, 0).clauses)
        if "empty" in clauses:  # nothing computed
            continue
        if "approximate=none" in plan.id:
            assert "erf" in clauses and not clauses & {"tanh-inner", "tanh-inner-derivative"}
        elif "/values=" in plan.id:
            assert {"tanh", "tanh-inner", "tanh-inner-derivative"} <= clauses, plan.id


@pytest.mark.parametrize("spec", list(default_registry()), ids=lambda s: s.name)
def test_a_credited_let_is_read_by_a_credited_branch(spec):
    lets = {x.id: x for x in spec.formula.lets}
    branches = {b.id: b for b in spec.formula.branches}
    for plan in plan_op(spec, list(spec.products)[:1]):
        if plan.kind != "positive":
            continue
        clauses = build(spec, plan, 0).clauses
        read: set[str] = set()
        for b in (branches[c] for c in clauses if c in branches):
            read |= b.value.names | (b.when.names if b.when is not None else set())
        for x in reversed(list(lets.values())):  # lets read by lets (a let reads earlier
            if x.name in read:  # ones: latest first, so that lets read through lets count)
                read |= x.value.names
        for c in clauses:
            if c in lets and lets[c].name not in read:
                # only a condition tested before the taken branch may read it
                assert any(b.when is not None and lets[c].name in b.when.names
                           for b in spec.formula.branches), (plan.id, c)  # fmt: skip


def test_a_same_dtype_rule_ties_its_tensors_only_where_the_library_always_runs_it():
    """Planning enumerates tensors a same_dtype rule ties as one; a rule scoped to other products
    or to some attributes (`when:`) ties nothing, and the matrix is the brute force's either way."""
    from dataclasses import replace

    from aclnn_conformance.conformance.cases.build import verdict
    from aclnn_conformance.conformance.cases.generate import _candidates, _tie_groups, dtype_combos
    from aclnn_conformance.conformance.cases.plan import base_args
    from aclnn_conformance.conformance.spec.expr.language import compile_expr

    spec = REG.get("mse_loss_backward")
    tensors = [p.name for p in spec.params if p.is_tensor]
    product = spec.products[0]
    tie = next(c for c in spec.checks if c.kind == "same_dtype")
    assert any(len(g) > 1 for g in _tie_groups(spec, product, tensors))
    for loose in (
        replace(tie, products=("nowhere",)),
        replace(tie, when=compile_expr("reduction == 7", ["reduction"])),
    ):
        checks = tuple(loose if c is tie else c for c in spec.checks)
        loosened = replace(spec, checks=checks)
        tied = {n for g in _tie_groups(loosened, product, tensors) if len(g) > 1 for n in g}
        assert not set(tie.params) <= tied
    # the brute force over every tensor's candidates alone
    cands = [_candidates(spec, product, n) for n in tensors]
    brute = []
    for combo in itertools.product(*cands):
        dtypes = dict(zip(tensors, combo, strict=True))
        if verdict(spec, product, base_args(spec, dtypes, (2, 3))).status == 0:
            brute.append(dtypes)
    assert dtype_combos(spec, product) == brute  # the same combinations, in the same order
