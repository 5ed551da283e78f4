"""Building a case: a CasePlan and a seed become a Case with tensors in memory.

Tensors are drawn from a generator seeded by (seed, case id): a case's values depend only on its
id and the seed, which is what makes `replay CASE-ID` possible and keeps ids stable across seeds.
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import ArrayArg, Call, ScalarArg, TensorArg, contiguous_strides
from ..acl.planned import ListPlan, ScalarPlan, TensorPlan
from ..spec.expr.numpy_arith import NUMPY
from ..spec.expr.walk import Formula
from ..spec.interpret import (
    Validation,
    attribute_env,
    branch_hits,
    lets_used,
    random_relations,
    validate,
)
from ..spec.model import IndexOf, OpSpec, SpecialPoint
from . import layouts
from . import values as vals
from .plan import CasePlan


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


def build(spec: OpSpec, plan: CasePlan, seed: int, probe: bool = False) -> Case:
    """The Case of `plan`; a valid positive case is also credited with the branches it takes.

    `probe`: tensors get their dtype, shape and format but no drawn values (`probe_tensor`), for
    planning, which asks only what the checks say.
    """
    # a probe draws nothing (and planning builds many): no generator to seed
    rng = None if probe else np.random.default_rng([seed, zlib.crc32(plan.id.encode())])
    point = next((p for p in spec.special_points if p.id == plan.point), None)
    args: dict[str, Any] = {}
    for name, a in plan.args:
        if isinstance(a, ScalarPlan):
            args[name] = ScalarArg(a.dtype, a.value)
        elif isinstance(a, ListPlan) and a.kind == "scalar_list":
            args[name] = ArrayArg(a.kind, tuple(ScalarArg(x.dtype, x.value) for x in a.items))
        elif isinstance(a, ListPlan):  # a tensor list: each item drawn like an input tensor
            items = []
            for t in a.items:
                if probe:
                    items.append(probe_tensor(t))
                    continue
                logical = vals.draw(t.values, dt.get(t.dtype), t.shape, rng)
                items.append(layouts.layout(logical, t.dtype, t.layout))
            args[name] = ArrayArg(a.kind, tuple(items))
        elif not isinstance(a, TensorPlan):
            args[name] = a
    for name, a in plan.args:
        if not isinstance(a, TensorPlan):
            continue
        if probe:
            args[name] = probe_tensor(a)
            continue
        if not spec.param(name).is_read:  # a pure output (an in-place tensor holds values)
            args[name] = layouts.output_tensor(a.dtype, a.shape, a.layout)
            args[name].format = a.format
            continue
        d = dt.get(a.dtype)
        index_of = spec.param(name).index_of
        if index_of is not None and index_of.pad is not None:
            size, _ = _index_range(index_of, plan, args)
            dim = index_of.dim if isinstance(index_of.dim, int) else args.get(index_of.dim)
            logical = vals.padded(a.shape, size, index_of.pad, int(dim or 0), d, rng)
        elif index_of is not None:
            logical = vals.indices(a.shape, *_index_range(index_of, plan, args), d, rng)
        else:
            logical = vals.draw(a.values, d, a.shape, rng)
        if point is not None and point.param == name and index_of is None:
            logical = vals.place_point(logical, _point_value(spec, point, args), d, rng)
        if a.layout == "zero-stride":
            logical = layouts.zero_stride_values(logical)
        args[name] = layouts.layout(logical, a.dtype, a.layout)
        args[name].format = a.format
    call = Call(spec.name, plan.product, args)
    clauses = plan.clauses
    if plan.kind == "positive" and plan.expected_status == 0 and not probe:
        verdict = validate(spec, call)
        if verdict.ok_to_compute:
            hits = branch_hits(spec, call)
            extra = lets_used(spec, hits) + hits + random_relations(spec, call)
            clauses = tuple(dict.fromkeys((*clauses, *extra)))
    return Case(
        plan.id, spec.name, plan.product, plan.kind, call, clauses, plan.expected_status, seed
    )


def probe_tensor(a: TensorPlan) -> TensorArg:
    """A tensor with the dtype, shape and format of `a` whose storage is one zero seen n times (a
    read-only broadcast view: no memory, no drawing). The checks read shapes, dtypes and formats,
    never tensor values, so a verdict needs no more."""
    d = dt.get(a.dtype)
    n = math.prod(a.shape)
    return TensorArg(d.name, a.shape, contiguous_strides(a.shape), 0, _zeros(d.name, n), a.format)


@functools.lru_cache(maxsize=256)
def _zeros(dtype: str, n: int) -> np.ndarray:
    """n zeros of dtype as a read-only view of one (shared: nothing writes a probe)."""
    return np.broadcast_to(np.zeros(1, dtype=dt.get(dtype).np), (n,))


def _index_range(index_of: IndexOf, plan: CasePlan, args: dict[str, Any]) -> tuple[int, int | None]:
    """(the size an index tensor's values index: its source tensor's size along the dim, 1
    where that dim is out of range; the ignore index, or None)."""
    source = dict(plan.args).get(index_of.param)
    shape = tuple(getattr(source, "shape", ()))
    dim = index_of.dim if isinstance(index_of.dim, int) else args.get(index_of.dim)
    rank = len(shape)
    size = shape[dim % rank] if isinstance(dim, int) and rank and -rank <= dim < rank else 1
    ignore = args.get(index_of.ignore) if index_of.ignore else None
    return int(size), None if ignore is None else int(ignore)


def _point_value(spec: OpSpec, point: SpecialPoint, args: dict[str, Any]) -> float:
    env = {k: v for k, v in attribute_env(spec, Call(spec.name, "", args)).items()}
    with np.errstate(all="ignore"):
        Formula.of(spec.formula).bind(env, point.value.names, NUMPY)
    return float(point.value.evaluate(env))


def verdict(spec: OpSpec, product: str, args: dict[str, Any]) -> Validation:
    """What the spec's checks say of the call that plan arguments `args` make on `product`.

    Planning uses it to keep only valid positive cases and negative cases that fail first on the
    clause they target.
    """
    plan = CasePlan("probe", spec.name, product, "probe", tuple(args.items()), (), 0)
    return validate(spec, build(spec, plan, 0, probe=True).call)
