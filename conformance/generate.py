"""Case generation, driven by the op spec alone (no per-operator Python).

Generation is two steps. `plan_op` enumerates CasePlans: ids, dtypes, shapes, layouts, value
kinds and scalars, with no data, so the whole suite can be listed, filtered and budgeted
cheaply. `build` turns one plan into a Case with tensors drawn from a generator seeded by
(seed, case id): a case's values depend only on its id and the seed, which is what makes
`replay CASE-ID` possible and keeps ids stable across seeds.

Positive cases follow TOSA-style selection: every valid dtype combination once (dtype matrix),
then for each product and each same-dtype combination one axis at a time (values x variants,
special points, shapes, layouts, scalars) from a base configuration. Negative cases are one
minimal violation per error clause; each is checked with conformance.rules to fail first on
exactly the clause it targets.
"""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from conformance import dtypes as dt
from conformance import values as vals
from conformance.call import Call, ScalarArg
from conformance.rules import attribute_env, branch_hits, lets_used, validate
from conformance.spec import OpSpec

BASE_SHAPE = (3, 5)
LARGE_SHAPE = (1024, 1024)
DTYPE_KINDS = {"dtype_in", "same_dtype", "promotable", "castable"}
SHAPE_KINDS = {"broadcastable", "same_shape", "shape_is_broadcast"}
REGULAR = ["BOOL", "UINT8", "INT8", "INT16", "INT32", "INT64", "FLOAT16", "BF16", "FLOAT", "DOUBLE",
           "COMPLEX64", "COMPLEX128"]  # fmt: skip


@dataclass(frozen=True)
class TensorPlan:
    dtype: str
    shape: tuple[int, ...]
    layout: str = "contiguous"
    values: str = "normal"


@dataclass(frozen=True)
class ScalarPlan:
    dtype: str
    value: Any


@dataclass(frozen=True)
class CasePlan:
    id: str
    op: str
    product: str
    kind: str  # positive | negative
    args: tuple[tuple[str, Any], ...]
    clauses: tuple[str, ...]
    expected_status: int
    point: str | None = None

    @property
    def arg(self) -> dict[str, Any]:
        return dict(self.args)

    def dtypes(self) -> list[str]:
        return [a.dtype for _, a in self.args if isinstance(a, TensorPlan)]


@dataclass
class Case:
    id: str
    op: str
    product: str
    kind: str
    call: Call
    clauses: tuple[str, ...]
    expected_status: int
    seed: int


# -- building ------------------------------------------------------------------------------


def build(spec: OpSpec, plan: CasePlan, seed: int) -> Case:
    rng = np.random.default_rng([seed, zlib.crc32(plan.id.encode())])
    point = next((p for p in spec.special_points if p.id == plan.point), None)
    args: dict[str, Any] = {}
    for name, a in plan.args:
        if isinstance(a, ScalarPlan):
            args[name] = ScalarArg(a.dtype, a.value)
        elif not isinstance(a, TensorPlan):
            args[name] = a
    for name, a in plan.args:
        if not isinstance(a, TensorPlan):
            continue
        if spec.param(name).is_output:
            args[name] = vals.output_tensor(a.dtype, a.shape, a.layout)
            continue
        d = dt.get(a.dtype)
        logical = vals.draw(a.values, d, a.shape, rng)
        if point is not None and point.param == name:
            logical = vals.place_point(logical, _point_value(spec, point, args), d, rng)
        if a.layout == "zero-stride":
            logical = vals.zero_stride_values(logical)
        args[name] = vals.layout(logical, a.dtype, a.layout)
    call = Call(spec.name, plan.product, args)
    clauses = plan.clauses
    if plan.kind == "positive" and plan.expected_status == 0:
        verdict = validate(spec, call)
        if verdict.ok_to_compute:
            hits = branch_hits(spec, call)
            extra = lets_used(spec, hits) + hits
            clauses = tuple(dict.fromkeys((*clauses, *extra)))
    return Case(plan.id, spec.name, plan.product, plan.kind, call, clauses,
                plan.expected_status, seed)  # fmt: skip


def _point_value(spec: OpSpec, point, args: dict[str, Any]) -> float:
    env = {k: v for k, v in attribute_env(spec, Call(spec.name, "", args)).items()}
    for let in spec.formula.lets:
        if let.value.names <= set(env):
            env[let.name] = let.value.evaluate(env)
    return float(point.value.evaluate(env))


# -- planning ------------------------------------------------------------------------------


def _short(dtype: str) -> str:
    return dt.get(dtype).short


def _dtag(spec: OpSpec, args: dict[str, Any]) -> str:
    shorts = [_short(args[p.name].dtype) for p in spec.params
              if p.is_tensor and isinstance(args.get(p.name), TensorPlan)]  # fmt: skip
    return shorts[0] if len(set(shorts)) == 1 else ".".join(shorts)


def _variant_tag(spec: OpSpec, args: dict[str, Any]) -> str:
    parts = []
    for p in spec.attributes:
        if p.kind == "bool":
            parts.append(f"{p.name}={int(bool(args[p.name]))}")
        elif p.kind == "string" and p.values:
            parts.append(f"{p.name}={args[p.name]}")
    return ",".join(parts) or "-"


def _base_args(spec: OpSpec, dtypes: dict[str, str], shape=BASE_SHAPE) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for p in spec.params:
        if p.is_tensor:
            args[p.name] = TensorPlan(dtypes[p.name], shape)
        elif p.kind == "scalar":
            args[p.name] = ScalarPlan(p.default_dtype or "FLOAT", p.default)
        elif p.kind == "bool":
            args[p.name] = bool(p.default)
        else:
            args[p.name] = p.default if p.default is not None else (p.values[0] if p.values else "")
    return args


def _verdict(spec: OpSpec, product: str, args: dict[str, Any]):
    plan = CasePlan("probe", spec.name, product, "probe", tuple(args.items()), (), 0)
    return validate(spec, build(spec, plan, 0).call)


def _candidates(spec: OpSpec, product: str, name: str) -> list[str]:
    found: list[str] = []
    for c in spec.checks:
        if c.kind == "dtype_in" and name in c.params:
            allowed = spec.dtypes_for(c.dtype_set, product) if c.dtype_set else c.dtypes
            found += [d for d in allowed if d not in found]
    return found or list(REGULAR)


def dtype_combos(spec: OpSpec, product: str) -> list[dict[str, str]]:
    """Every valid assignment of dtypes to the tensor parameters on `product`."""
    tensors = [p.name for p in spec.params if p.is_tensor]
    cands = [_candidates(spec, product, n) for n in tensors]
    out = []
    for combo in itertools.product(*cands):
        dtypes = dict(zip(tensors, combo, strict=True))
        v = _verdict(spec, product, _base_args(spec, dtypes, (2, 3)))
        if v.status == 0:
            out.append(dtypes)
    return out


def _mk(spec, product, kind, args, tail, clauses, status=0, point=None) -> CasePlan:
    ident = f"{spec.name}/{product}/{_dtag(spec, args)}/{_variant_tag(spec, args)}/{tail}"
    if kind == "negative":
        ident = f"{spec.name}/{product}/neg/{tail}"
    return CasePlan(ident, spec.name, product, kind, tuple(args.items()), tuple(clauses), status,
                    point)  # fmt: skip


def _variants(spec: OpSpec) -> list[dict[str, Any]]:
    axes = []
    for p in spec.attributes:
        if p.kind == "bool":
            axes.append([(p.name, False), (p.name, True)])
        elif p.kind == "string" and p.values:
            axes.append([(p.name, v) for v in p.values])
    return [dict(c) for c in itertools.product(*axes)] if axes else [{}]


def _ids(spec: OpSpec, kinds: set[str]) -> list[str]:
    return [c.id for c in spec.checks if c.kind in kinds]


def _with_shapes(args: dict[str, Any], shapes: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    return {k: replace(v, shape=shapes[k]) if k in shapes else v for k, v in args.items()}


def _shape_cases(spec: OpSpec) -> list[tuple[str, dict[str, tuple[int, ...]], list[str]]]:
    """(tag, shape per tensor, clause ids) for the shape axis."""
    tensors = [p.name for p in spec.params if p.is_tensor]
    ins = [p.name for p in spec.tensor_inputs]
    outs = [p.name for p in spec.outputs]
    shape_ids = _ids(spec, SHAPE_KINDS)
    rank_ids = _ids(spec, {"max_rank"})
    empty_ids = _ids(spec, {"empty_success"})
    zero_dim = [p.id for p in spec.properties if p.kind == "zero_dim"]
    cases = []
    for tag, shp in [("0d", ()), ("1d-7", (7,)), ("2d-3x5", (3, 5)), ("4d-2x3x1x4", (2, 3, 1, 4)),
                     ("8d", (1, 2, 1, 2, 1, 2, 1, 2))]:  # fmt: skip
        clauses = shape_ids + (rank_ids if len(shp) == 8 else []) + (zero_dim if not shp else [])
        cases.append((f"shape={tag}", dict.fromkeys(tensors, shp), clauses))
    for tag, shp in [("0", (0,)), ("2x0x3", (2, 0, 3)), ("4x0", (4, 0))]:
        cases.append((f"shape=empty-{tag}", dict.fromkeys(tensors, shp), empty_ids + shape_ids))
    bprop = next((p for p in spec.properties if p.kind == "broadcast"), None)
    if bprop and len(ins) >= 2:
        a, b = bprop.params[:2]
        pairs = [((3, 1), (1, 5)), ((1, 5), (3, 1)), ((2, 3, 4), (4,)), ((4,), (2, 3, 4)),
                 ((1,), (5, 5)), ((0, 3), (1, 3))]  # fmt: skip
        for sa, sb in pairs:
            out = tuple(int(n) for n in np.broadcast_shapes(sa, sb))
            shp = {a: sa, b: sb, **dict.fromkeys(outs, out)}
            tag = f"shape=bcast-{'x'.join(map(str, sa))}.{'x'.join(map(str, sb))}"
            extra = empty_ids if 0 in out else []
            cases.append((tag, shp, [bprop.id, *shape_ids, *extra]))
    return cases


def plan_op(spec: OpSpec, products: list[str] | None = None) -> list[CasePlan]:
    plans: list[CasePlan] = []
    noncontig = [p.id for p in spec.properties if p.kind == "noncontiguous"]
    value_ids = _ids(spec, {"value"})
    string_ids = _ids(spec, {"string_in"})
    large_done = False
    for product in products or list(spec.products):
        if product not in spec.products:
            continue
        combos = dtype_combos(spec, product)
        dtype_ids = _ids(spec, DTYPE_KINDS)
        for combo in combos:
            plans.append(
                _mk(spec, product, "positive", _base_args(spec, combo), "dtypes", dtype_ids)
            )
        diag = [c for c in combos if len(set(c.values())) == 1] or combos[:1]
        for combo in diag:
            base = _base_args(spec, combo)
            for variant in _variants(spec):
                vargs = {**base, **variant}
                for kind in vals.VALUE_KINDS:
                    args = {k: replace(v, values=kind) if isinstance(v, TensorPlan) else v
                            for k, v in vargs.items()}  # fmt: skip
                    plans.append(_mk(spec, product, "positive", args, f"values={kind}", string_ids))
            for point in spec.special_points:
                args = dict(base)
                for k, v in point.with_.items():
                    p = spec.param(k)
                    args[k] = ScalarPlan(p.default_dtype or "FLOAT", v) if p.kind == "scalar" else v
                plans.append(_mk(spec, product, "positive", args, f"point={point.id}", [point.id],
                                 point=point.id))  # fmt: skip
            for tag, shapes, clauses in _shape_cases(spec):
                plans.append(
                    _mk(spec, product, "positive", _with_shapes(base, shapes), tag, clauses)
                )
            for lay in ("transposed", "gaps", "offset", "zero-stride"):
                args = {k: replace(v, layout=lay) if isinstance(v, TensorPlan)
                        and not spec.param(k).is_output else v for k, v in base.items()}  # fmt: skip
                plans.append(_mk(spec, product, "positive", args, f"layout=in-{lay}", noncontig))
                if lay != "zero-stride":
                    args = {k: replace(v, layout=lay) if isinstance(v, TensorPlan)
                            and spec.param(k).is_output else v for k, v in base.items()}  # fmt: skip
                    plans.append(
                        _mk(spec, product, "positive", args, f"layout=out-{lay}", noncontig)
                    )
            plans += _scalar_plans(spec, product, base, value_ids)
            if (not large_done and product == spec.products[0]
                    and all(d == "FLOAT" for d in combo.values())):  # fmt: skip
                shapes = dict.fromkeys([p.name for p in spec.params if p.is_tensor], LARGE_SHAPE)
                tag = f"shape=large-{LARGE_SHAPE[0]}x{LARGE_SHAPE[1]}"
                plans.append(_mk(spec, product, "positive", _with_shapes(base, shapes), tag, []))
                large_done = True
        if diag:
            from conformance.negatives import negative_plans

            plans += negative_plans(spec, product, _base_args(spec, diag[0]))
    return _valid_positive(spec, plans)


def _scalar_plans(spec: OpSpec, product: str, base: dict[str, Any], value_ids: list[str]):
    out = []
    for p in spec.attributes:
        if p.kind != "scalar":
            continue
        named = [c.id for c in spec.checks if c.kind == "value" and p.name in c.violated_if.names]
        ddt = p.default_dtype or "FLOAT"
        for label, v in [("0", 0.0), ("neg", -1.5), ("large", 1.0e4), ("small", 1.0e-3)]:
            args = {**base, p.name: ScalarPlan(ddt, v)}
            out.append(_mk(spec, product, "positive", args, f"scalar={p.name}:{label}", named))
        for d in ["FLOAT16", "BF16", "DOUBLE", "INT32", "INT64", "INT8", "UINT8", "INT16", "BOOL"]:
            if d == ddt:
                continue
            value = True if d == "BOOL" else 2
            args = {**base, p.name: ScalarPlan(d, value)}
            out.append(_mk(spec, product, "positive", args, f"scalar={p.name}:{d}",
                           _ids(spec, DTYPE_KINDS)))  # fmt: skip
    return out


def _valid_positive(spec: OpSpec, plans: list[CasePlan]) -> list[CasePlan]:
    """Drop positive plans the spec itself rejects (a scalar dtype not allowed, say)."""
    out, seen = [], set()
    for plan in plans:
        if plan.id in seen:
            continue
        if plan.kind == "positive":
            v = _verdict(spec, plan.product, plan.arg)
            if v.status != 0:
                continue
        seen.add(plan.id)
        out.append(plan)
    return out


# -- the suite -----------------------------------------------------------------------------


def plan_suite(registry, ops: list[str] | None = None, products: list[str] | None = None):
    """(spec, plan) for every case of the selected ops, in a stable order."""
    specs_ = [registry.get(o) for o in ops] if ops else list(registry)
    out = []
    for spec in sorted(specs_, key=lambda s: s.name):
        out += [(spec, p) for p in plan_op(spec, products)]
    return out


def select(pairs: list[tuple[OpSpec, CasePlan]], budget: int | None):
    """At most `budget` cases, every static clause kept covered, the rest spread over groups."""
    if budget is None or budget >= len(pairs):
        return pairs
    chosen: dict[str, int] = {}
    covered: set[tuple[str, str]] = set()
    for i, (spec, plan) in enumerate(pairs):
        new = [(spec.name, c) for c in plan.clauses if (spec.name, c) not in covered]
        if new:
            covered.update(new)
            chosen[plan.id] = i
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, (_, plan) in enumerate(pairs):
        if plan.id not in chosen:
            key = (plan.op, plan.product, plan.kind)
            groups.setdefault(key, []).append(i)
    queues = list(groups.values())
    while len(chosen) < budget and any(queues):
        for q in queues:
            if q and len(chosen) < budget:
                i = q.pop(0)
                chosen[pairs[i][1].id] = i
    keep = sorted(chosen.values())[:budget] if len(chosen) > budget else sorted(chosen.values())
    return [pairs[i] for i in keep]
