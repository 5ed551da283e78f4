"""Every parameter check of every op spec with an oracle, triggered by hand-built calls.

Expectations come from the vendor docs (shared/seeds/) and the fact sheet
(shared/research/aclnn-facts.md §1-§7): status codes 161001 (null pointer) and 161002 (invalid
parameter), the check order (the first violated rule decides), dtype lists per product, promotion
and castability, broadcast and shape rules, value constraints and the empty-tensor shortcut. The
dtype lists, nullable parameters and each op's own calls are written out from the docs in the op's
oracle, tests/oracles/<spec name>.py (interface: tests/oracles/__init__.py), not read from the
specs. An op of the registry without an oracle is checked by the op-generic tests only
(tests/test_oracles.py lists them; the generated negative cases of tests/test_generate.py still
cover its checks).

Every failing call must leave every output storage byte-identical.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference.engine import evaluate

from tests import oracles
from tests.oracles._common import INVALID, NULLPTR, OK, R8, R9, Scalar

ALL_DTYPES = dt.tables().names()
ORACLES = oracles.of(default_registry().names())  # {op: its module in tests/oracles/}

# -- building calls -----------------------------------------------------------------------------

SENTINEL = 7.25


def tensor(dtype: str, shape: tuple[int, ...], fill: float = 0.5, extra: int = 0) -> TensorArg:
    """A contiguous tensor; `extra` spare storage elements after the view."""
    d = dt.get(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    size = n + extra
    if d.opaque:
        storage = np.full(size, 0xAB, dtype=np.uint8)
    elif d.category == "bool":
        storage = np.ones(size, dtype=d.np)
    else:
        with np.errstate(all="ignore"):
            storage = np.full(size, fill).astype(d.np)
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return TensorArg(d.name, tuple(shape), tuple(reversed(strides)), 0, storage)


def out_tensor(dtype: str, shape: tuple[int, ...]) -> TensorArg:
    return tensor(dtype, shape, fill=SENTINEL, extra=3)


def to_arg(value: Any) -> Any:
    """An oracle's Scalar(dtype, value) as the call's ScalarArg; anything else as it is."""
    return ScalarArg(value.dtype, value.value) if isinstance(value, Scalar) else value


def base_args(op: str, shape=(2, 3), dtype: str = "FLOAT") -> dict[str, Any]:
    """A valid call's arguments: gradOutput, x and output of `dtype` and `shape`."""
    o = ORACLES[op]
    args: dict[str, Any] = {
        "gradOutput": tensor(dtype, shape, 0.5),
        o.X: tensor(dtype, shape, -1.0),
        o.OUT: out_tensor(dtype, shape),
    }
    args |= {k: to_arg(v) for k, v in o.base_scalars().items()}
    return args


@dataclass
class Case:
    id: str
    op: str
    product: str
    args: Callable[[], dict[str, Any]]
    status: int
    clause: str | None  # check id, or None for a plain success


CASES: list[Case] = []
DEFAULT_SHAPE = (2, 3)


def case(op, product, desc, status, clause=None, *, g=None, x=None, o=None, gs=None, xs=None,
         os=None, **changes):  # fmt: skip
    """Register a call: the valid base call with some changes.

    g / x / o: dtype names of gradOutput, the x tensor and the output (default FLOAT);
    gs / xs / os: their shapes (default 2x3); other keywords replace arguments as given
    (None for a null pointer, Scalar(dtype, value) for an aclScalar)."""

    def build():
        args = base_args(op)
        for name, d, shape, make in (
            ("gradOutput", g, gs, tensor),
            (ORACLES[op].X, x, xs, tensor),
            (ORACLES[op].OUT, o, os, out_tensor),
        ):
            if d is not None or shape is not None:
                args[name] = make(d or "FLOAT", DEFAULT_SHAPE if shape is None else shape)
        args.update({k: to_arg(v) for k, v in changes.items()})
        return args

    CASES.append(Case(f"{op}-{product}-{desc}", op, product, build, status, clause))


def _dtype_case(key: str, param: str, dtype: str) -> tuple[str, dict]:
    """A disallowed dtype of one tensor alone breaks that tensor's dtype rule."""
    return f"dtype-{param}", {key: dtype}


NULL_COVERED: set[tuple[str, str]] = set()


def register(op: str, orc: ModuleType) -> None:
    """The calls every op gets from its oracle's tables, then the op's own (error_cases)."""

    def add(product, desc, status, clause=None, **kw):
        case(op, product, desc, status, clause, **kw)

    # 1. null pointers, each separately (doc: 161001)
    for p in orc.NULLABLE:
        for prod in orc.PRODUCTS:
            add(prod, f"null-{p}", NULLPTR, "null-ptr", **{p: None})
            NULL_COVERED.add((op, p))
    # 2. disallowed dtypes, per tensor and per product
    dtype_case = getattr(orc, "dtype_case", _dtype_case)
    for prod in orc.PRODUCTS:
        for key, param in (("g", "gradOutput"), ("x", orc.X), ("o", orc.OUT)):
            for d in ALL_DTYPES:
                if d in orc.allowed(param, prod):
                    continue
                clause, kw = dtype_case(key, param, d)
                add(prod, f"dtype-{param}-{d}", INVALID, clause, **kw)
    # scalars: a dtype list (bad None: what allowed() does not list) or the dtypes `bad`
    for params, clause, bad in orc.SCALAR_RULES:
        for prod in orc.PRODUCTS:
            for p in params:
                for d in ALL_DTYPES:
                    fails = d in bad if bad is not None else d not in orc.allowed(p, prod)
                    value = Scalar(d, True if d == "BOOL" else 1.0)
                    if fails:
                        add(prod, f"scalar-{p}-{d}", INVALID, clause, **{p: value})
                    else:
                        add(prod, f"scalar-{p}-{d}", OK, **{p: value})
    # 4. ranks and 0-d tensors
    first = orc.PRODUCTS[0]
    add(first, "rank8-ok", OK, gs=R8, xs=R8, os=R8)
    add(first, "rank9-all", INVALID, "max-rank", gs=R9, xs=R9, os=R9)
    add(first, "zero-dim-ok", OK, gs=(), xs=(), os=())
    # 6. empty tensors
    for shape in ((0,), (2, 0, 3), (3, 0)):
        add(first, f"empty-{'x'.join(map(str, shape))}", OK, "empty", gs=shape, xs=shape,
            os=shape)  # fmt: skip
    # 3, 5, 7: promotion, shapes, value constraints, empties and two violations of the op
    orc.error_cases(add)


for _op, _orc in ORACLES.items():
    register(_op, _orc)

# -- running the table --------------------------------------------------------------------------


def _storage_bytes(args: dict[str, Any]) -> dict[str, bytes]:
    return {k: v.storage.tobytes() for k, v in args.items() if isinstance(v, TensorArg)}


def run_case(c: Case):
    args = c.args()
    before = _storage_bytes(args)
    outcome = evaluate(Call(c.op, c.product, args))
    return args, before, outcome


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule(c: Case):
    args, before, outcome = run_case(c)
    full = f"{c.op}/{c.clause}" if c.clause else None
    assert outcome.status == c.status, f"{outcome.status} ({outcome.clause}): {outcome.message}"
    if c.status != 0:
        assert outcome.clause == full, outcome.message
    elif c.clause is not None:  # a success decided by a check (the empty shortcut)
        assert outcome.clause in (None, full)
        assert full in outcome.message, outcome.message
    # inputs are never written; a failing or empty call leaves every output byte-identical
    after = _storage_bytes(args)
    assert after == before, "the call's own storage arrays were modified"
    out = ORACLES[c.op].OUT
    if (
        c.status != 0
        or c.clause == "empty"
        or (isinstance(args.get(out), TensorArg) and args[out].is_empty)
    ):
        for name, storage in outcome.outputs.items():
            assert storage.tobytes() == before[name], f"{name} storage changed"
    assert set(outcome.outputs) == ({out} if isinstance(args.get(out), TensorArg) else set())


def test_case_ids_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]


KNOWN_KINDS = {
    "not_null",
    "dtype_in",
    "same_dtype",
    "promotable",
    "castable",
    "max_rank",
    "broadcastable",
    "same_shape",
    "shape_is_broadcast",
    "value",
    "string_in",
    "empty_success",
}


def _spec_checks():
    return [
        pytest.param(spec.name, chk.id, id=f"{spec.name}-{chk.id}")
        for spec in default_registry()
        if spec.name in ORACLES
        for chk in spec.checks
    ]


@pytest.mark.parametrize(("op", "check_id"), _spec_checks())
def test_every_check_has_a_triggering_call(op, check_id):
    """A check added to a spec with an oracle, without a call that triggers it, fails this test."""
    spec = default_registry().get(op)
    chk = next(c for c in spec.checks if c.id == check_id)
    assert chk.kind in KNOWN_KINDS, f"new check kind {chk.kind!r}: add cases for it"
    expected_status = (
        NULLPTR if chk.kind == "not_null" else 0 if chk.kind == "empty_success" else INVALID
    )
    assert chk.status == expected_status, f"{op}/{check_id} returns {chk.status}"
    triggering = [c for c in CASES if c.op == op and c.clause == check_id]
    if check_id in ORACLES[op].UNREACHABLE:
        assert not triggering
        return
    assert triggering, f"no call of tests/oracles/{op}.py triggers {op}/{check_id}"
    if chk.kind == "not_null":
        nullable = set(ORACLES[op].NULLABLE)
        assert {p for o, p in NULL_COVERED if o == op} == nullable
        assert set(chk.params) == nullable, "the spec's nullable parameters differ from the doc"


@pytest.mark.parametrize("op", list(ORACLES))
def test_spec_products_match_docs(op):
    assert tuple(default_registry().get(op).products) == ORACLES[op].PRODUCTS


# A representative dtype universe for the exhaustive searches: every dtype with host storage
# plus one exotic dtype of each category.
SEARCH_DTYPES = [d for d in ALL_DTYPES if not dt.get(d).opaque] + [
    "UNDEFINED",
    "INT4",
    "COMPLEX32",
    "HIFLOAT8",
]


def _unreachable_ops():
    return [op for op, orc in ORACLES.items() if orc.UNREACHABLE]


@pytest.mark.gates
@pytest.mark.parametrize("op", _unreachable_ops())
def test_unreachable_clauses_are_unreachable(op):
    """Sweep every dtype combination of the three tensors: the listed clauses never decide.

    These are spec findings: rules that can never fire because earlier dtype-list rules already
    reject everything they would reject. If a spec change makes one reachable, this test fails
    and a triggering call belongs in the op's oracle."""
    dead = set(ORACLES[op].UNREACHABLE)
    seen: dict[str, int] = {}
    x, out = ORACLES[op].X, ORACLES[op].OUT
    made = {d: tensor(d, (2,)) for d in SEARCH_DTYPES}  # never written: reused across calls
    args = base_args(op, shape=(2,))
    for product in ORACLES[op].PRODUCTS:
        for a, b, c in itertools.product(SEARCH_DTYPES, repeat=3):
            args["gradOutput"], args[x], args[out] = made[a], made[b], made[c]
            outcome = evaluate(Call(op, product, dict(args)))
            seen[str(outcome.clause)] = seen.get(str(outcome.clause), 0) + 1
    hit = {f"{op}/{cid}" for cid in dead} & set(seen)
    assert not hit, f"reachable after all: {hit}"
    assert "None" in seen  # some combinations are valid
