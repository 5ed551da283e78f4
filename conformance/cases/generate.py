"""Case planning, driven by the op spec alone (no per-operator Python).

Generation is two steps. `plan_op` enumerates CasePlans (conformance.cases.plan): ids, dtypes, shapes,
layouts, value kinds and scalars, with no data, so the whole suite can be listed, filtered and
budgeted cheaply. `build` (conformance.cases.build, re-exported here) turns one plan into a Case with
tensors drawn from a generator seeded by (seed, case id).

Positive cases follow TOSA-style selection: every valid dtype combination once (dtype matrix),
then for each product and each same-dtype combination one axis at a time (values x variants,
special points, shapes, layouts, scalars) from a base configuration. Each check kind says which
axes exercise its clauses (conformance.spec.checks.kinds). Negative cases are one minimal violation per
error clause (conformance.cases.negatives).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..acl.call import ArrayArg
from ..acl.planned import ListPlan, ScalarPlan, TensorPlan, with_shapes
from ..spec.checks.kinds import kind_of
from ..spec.checks.shape import DimNonempty, derive_shapes, rule_variants
from ..spec.expr import ir
from ..spec.expr.walk import Formula
from ..spec.interpret import Validation
from ..spec.model import OpSpec
from . import values as vals
from .build import Case, build, verdict
from .negatives import negative_plans
from .plan import CasePlan, base_args, fit_split_rules, make_plan, number_default, point_arg

if TYPE_CHECKING:
    from ..spec.registry import Registry

# Re-exported: runner, the CLI, backends and tests take these from here.
__all__ = ["Case", "CasePlan", "ScalarPlan", "TensorPlan", "build", "dtype_combos", "plan_op",
           "plan_suite", "select"]  # fmt: skip

LARGE_SHAPE = (1024, 1024)
# A paired reduction (its argument reads `outer`) costs the element count times the size of the
# dim it pairs along: a formula holding one takes its large case with that dim PAIRED_SIZE long
# (2^20 elements still, 2^26 pairs), not 1024 (2^30 pairs, minutes in numpy).
PAIRED_SIZE = 64
# The large profile (--profile large): shapes real models run these activations on (an LLaMA-7B
# MLP activation, a 4096-wide attention block, and a shape of the vendor's own ATK cases).
MODEL_SHAPES = ((8, 4096, 11008), (16, 4096, 4096), (9, 6, 232, 4096))
PROFILES = ("default", "large")
REGULAR = ["BOOL", "UINT8", "INT8", "INT16", "INT32", "INT64", "FLOAT16", "BF16", "FLOAT", "DOUBLE",
           "COMPLEX64", "COMPLEX128"]  # fmt: skip


def _candidates(spec: OpSpec, product: str, name: str) -> list[str]:
    found: list[str] = []
    for c in spec.checks:
        found += [d for d in kind_of(c).allowed_dtypes(spec, c, product, name) if d not in found]
    return found or list(REGULAR)


def _tie_groups(spec: OpSpec, product: str, tensors: list[str]) -> list[list[str]]:
    """`tensors` grouped by the checks that make them share a dtype (kind `tied`), in order."""
    root = {n: n for n in tensors}

    def find(n: str) -> str:
        while root[n] != n:
            n = root[n]
        return n

    for c in spec.checks:
        tied = [n for n in kind_of(c).tied(spec, c, product) if n in root]
        for n in tied[1:]:
            root[find(n)] = find(tied[0])
    groups: dict[str, list[str]] = {}
    for n in tensors:
        groups.setdefault(find(n), []).append(n)
    return list(groups.values())


def dtype_combos(spec: OpSpec, product: str) -> list[dict[str, str]]:
    """Every valid assignment of dtypes to the tensor parameters on `product`, in the order of
    the product of each tensor's candidates. Tensors a check ties to one dtype are enumerated as
    one (a valid call has them equal): a loss backward's 186,624 assignments become 216."""
    tensors = [p.name for p in spec.params if p.is_tensor]
    cands = {n: _candidates(spec, product, n) for n in tensors}
    groups = _tie_groups(spec, product, tensors)
    choices = [[d for d in cands[g[0]] if all(d in cands[n] for n in g[1:])] for g in groups]
    found = []
    for combo in itertools.product(*choices):
        dtypes = {n: d for g, d in zip(groups, combo, strict=True) for n in g}
        v = verdict(spec, product, base_args(spec, dtypes, (2, 3)))
        if v.status == 0:
            rank = tuple(cands[n].index(dtypes[n]) for n in tensors)
            found.append((rank, {n: dtypes[n] for n in tensors}))
    return [d for _, d in sorted(found, key=lambda f: f[0])]


def base_rejection(spec: OpSpec, product: str) -> tuple[dict[str, str], Validation] | None:
    """None when `product` has a valid dtype combination; else the base case that got furthest
    through the checks (the one whose rejecting check comes last in spec order: the check that
    blocks even the right dtypes) and its verdict: why no positive case exists."""
    if dtype_combos(spec, product):
        return None
    tensors = [p.name for p in spec.params if p.is_tensor]
    order = {c.id: i for i, c in enumerate(spec.checks)}
    best: tuple[int, dict[str, str], Validation] | None = None
    combos = itertools.product(*(_candidates(spec, product, n) for n in tensors))
    for combo in itertools.islice(combos, 500):
        dtypes = dict(zip(tensors, combo, strict=True))
        v = verdict(spec, product, base_args(spec, dtypes, (2, 3)))
        rank = order.get(v.check.id, len(order)) if v.check is not None else len(order)
        if best is None or rank > best[0]:
            best = (rank, dtypes, v)
    assert best is not None
    return best[1], best[2]


def _variants(spec: OpSpec) -> list[dict[str, Any]]:
    axes = []
    for p in spec.attributes:
        if p.kind == "bool":
            axes.append([(p.name, False), (p.name, True)])
        elif p.kind == "string" and p.values:
            axes.append([(p.name, v) for v in p.values])
        elif p.is_number and p.values:
            base = number_default(p)
            conv = float if p.kind == "float" else int
            axes.append([(p.name, v) for v in dict.fromkeys([base, *map(conv, p.values)])])
    return [dict(c) for c in itertools.product(*axes)] if axes else [{}]


def _rule_variants(spec: OpSpec, base: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """`base`, then `base` with each other documented value of every parameter a shape rule's
    `when` reads (the shape axis runs on every branch of a conditional rule)."""
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for p in spec.params:
        if p.shape is None:
            continue
        for tag, args in rule_variants(spec, p.shape, base):
            if tag not in seen:
                seen.add(tag)
                out.append((tag, args))
    return out or [("", base)]


def _laid_out(spec: OpSpec, base: dict[str, Any]) -> dict[str, Any]:
    """The base an output layout case starts from: `base`, or where a shape rule makes its
    outputs 0-d or 1-d there (a loss's mean), the first rule branch whose outputs have two
    dimensions or more (a strided 0-d tensor is no layout, a 1-d one not every layout)."""
    for _, args in _rule_variants(spec, base):
        ruled = derive_shapes(spec, args)
        if all(len(ruled[p.name].shape) > 1 for p in spec.outputs
               if isinstance(ruled.get(p.name), TensorPlan)):  # fmt: skip
            return args
    return base


def _ids(spec: OpSpec, axis: str, param: str | None = None) -> list[str]:
    """Ids of the checks that the positive cases of plan axis `axis` exercise."""
    return [c.id for c in spec.checks if kind_of(c).credits(c, axis, param)]


def _shape_cases(spec: OpSpec) -> list[tuple[str, dict[str, tuple[int, ...]], list[str]]]:
    """(tag, shape per tensor, clause ids) for the shape axis."""
    tensors = [p.name for p in spec.params if p.is_tensor]
    ins = [p.name for p in spec.tensor_inputs]
    outs = [p.name for p in spec.outputs]
    shape_ids = _ids(spec, "shape")
    rank_ids = _ids(spec, "rank")
    empty_ids = _ids(spec, "empty")
    zero_dim = [p.id for p in spec.properties if p.kind == "zero_dim"]
    cases = []
    for tag, shp in [
        ("0d", ()),
        ("1d-7", (7,)),
        ("2d-3x5", (3, 5)),
        ("4d-2x3x1x4", (2, 3, 1, 4)),
        ("8d", (1, 2, 1, 2, 1, 2, 1, 2)),
    ]:
        clauses = shape_ids + (rank_ids if len(shp) == 8 else []) + (zero_dim if not shp else [])
        cases.append((f"shape={tag}", dict.fromkeys(tensors, shp), clauses))
    empties = [(0,), (2, 0, 3), (4, 0)]
    deep = max((c.min or 0 for c in spec.checks if c.kind == "min_rank"), default=0)
    if deep > 3:  # a rank the library demands (a 4-D self): an empty tensor of that rank too
        empties.append((2,) * (deep - 2) + (0, 3))
    for c in spec.checks:  # a dim that must not be empty (the classes): empty elsewhere instead
        if c.kind == "dim_nonempty":
            other = DimNonempty.empty_elsewhere(c, (4, 3))
            if other is not None and other not in empties:
                empties.append(other)
    for shp in empties:
        tag = "x".join(map(str, shp))
        cases.append((f"shape=empty-{tag}", dict.fromkeys(tensors, shp), empty_ids + shape_ids))
    bprop = next((p for p in spec.properties if p.kind == "broadcast"), None)
    if bprop and len(ins) >= 2:
        a, b = bprop.params[:2]
        pairs = [
            ((3, 1), (1, 5)),
            ((1, 5), (3, 1)),
            ((2, 3, 4), (4,)),
            ((4,), (2, 3, 4)),
            ((1,), (5, 5)),
            ((0, 3), (1, 3)),
        ]
        free = [n for n in ins if n not in bprop.params and spec.param(n).shape is None]
        inout = spec.param(a).is_inout  # an in-place tensor keeps the broadcast shape
        seen: set[str] = set()
        for sa, sb in pairs:
            out = tuple(int(n) for n in np.broadcast_shapes(sa, sb))
            if inout and sb == out:  # only the second input broadcasts into selfRef's shape
                continue
            # the property's other tensors, and inputs no rule shapes (a target): out's shape
            rest = dict.fromkeys([*bprop.params[2:], *free], out)
            shp = {**rest, a: sa, b: sb, **dict.fromkeys(outs, out)}
            tag = f"shape=bcast-{'x'.join(map(str, shp[a]))}.{'x'.join(map(str, sb))}"
            if tag in seen:
                continue
            seen.add(tag)
            extra = empty_ids if 0 in out else []
            cases.append((tag, shp, [bprop.id, *shape_ids, *extra]))
    return cases


def plan_op(spec: OpSpec, products: list[str] | None = None) -> list[CasePlan]:
    """Every case plan of one op (on `products`, default all of its own), in a stable order."""
    plans: list[CasePlan] = []
    noncontig = [p.id for p in spec.properties if p.kind == "noncontiguous"]
    variant_ids = _ids(spec, "variant")
    large_done = False
    for product in products or list(spec.products):
        if product not in spec.products:
            continue
        combos = dtype_combos(spec, product)
        dtype_ids = _ids(spec, "dtype")
        for combo in combos:
            plans.append(
                make_plan(spec, product, "positive", base_args(spec, combo), "dtypes", dtype_ids)
            )
        # one dtype for every tensor (an index tensor aside: it keeps its integer dtype)
        diag = [
            c for c in combos
            if len({d for n, d in c.items() if spec.param(n).index_of is None}) == 1
        ] or combos[:1]  # fmt: skip
        for combo in diag:
            base = base_args(spec, combo)
            for variant in _variants(spec):
                vargs = {**base, **variant}
                for kind in vals.VALUE_KINDS:
                    args = {
                        k: replace(v, values=kind) if isinstance(v, TensorPlan) else v
                        for k, v in vargs.items()
                    }
                    plans.append(
                        make_plan(spec, product, "positive", args, f"values={kind}", variant_ids)
                    )
            for point in spec.special_points:
                args = dict(base)
                for k, v in point.with_.items():
                    p = spec.param(k)
                    args[k] = point_arg(p, v)
                plans.append(
                    make_plan(
                        spec,
                        product,
                        "positive",
                        args,
                        f"point={point.id}",
                        [point.id],
                        point=point.id,
                    )
                )
            for tag, shapes, clauses in _shape_cases(spec):
                for _, args in _rule_variants(spec, base):  # each branch of a conditional rule
                    plans.append(
                        make_plan(  # a tensor a split rule halves: made divisible
                            spec,
                            product,
                            "positive",
                            fit_split_rules(spec, with_shapes(args, shapes)),
                            tag,
                            clauses,
                        )
                    )
            for lay in ("transposed", "gaps", "offset", "zero-stride"):
                args = {
                    k: replace(v, layout=lay)
                    if isinstance(v, TensorPlan) and not spec.param(k).is_output
                    else v
                    for k, v in base.items()
                }
                plans.append(
                    make_plan(spec, product, "positive", args, f"layout=in-{lay}", noncontig)
                )
                if lay != "zero-stride":
                    out_base = _laid_out(spec, base)
                    args = {
                        k: replace(v, layout=lay)
                        if isinstance(v, TensorPlan) and spec.param(k).is_output
                        else v
                        for k, v in out_base.items()
                    }
                    plans.append(
                        make_plan(spec, product, "positive", args, f"layout=out-{lay}", noncontig)
                    )
            if combo is diag[0]:
                plans += _dim_plans(spec, product, base)
            plans += _scalar_plans(spec, product, base)
            plans += _null_plans(spec, product, base)
            plans += _list_plans(spec, product, base)
            plans += _laid_plans(spec, product, base)
            if (
                not large_done
                and product == spec.products[0]
                and all(d == "FLOAT" for n, d in combo.items() if spec.param(n).index_of is None)
            ):  # (an index tensor keeps its integer dtype)
                # leading 1s up to the rank a min_rank check wants (an (N, C, H, W) input)
                lo = max((c.min for c in spec.checks if c.kind == "min_rank"), default=0)
                two = _large_shape(spec)
                large = (1,) * max(0, lo - len(two)) + two
                shapes = dict.fromkeys([p.name for p in spec.params if p.is_tensor], large)
                tag = f"shape=large-{two[0]}x{two[1]}"
                plans.append(
                    make_plan(spec, product, "positive", with_shapes(base, shapes), tag, [])
                )
                large_done = True
        if diag:
            plans += negative_plans(spec, product, base_args(spec, diag[0]))
    return _valid_positive(spec, plans)


def _large_shape(spec: OpSpec, shape: tuple[int, ...] = LARGE_SHAPE) -> tuple[int, ...]:
    """`shape` (LARGE_SHAPE), or for a formula with a paired reduction about the same element
    count with the dim it pairs along (its literal dim; the last by default) PAIRED_SIZE long,
    the first other dim the longer: such a case costs its element count times that dim's size
    (1024 x 1024 becomes 16384 x 64)."""
    paired = [r for f in spec.formulas for e in Formula.of(f).expressions()
              for r in ir.reductions(e.ir) if not isinstance(r, ir.Along) and ir.paired(r)]  # fmt: skip
    if not paired or len(shape) < 2:
        return shape
    dims = {d for r in paired for d in (r.dims or (-1,))}
    d = dims.pop() % len(shape) if len(dims) == 1 else len(shape) - 1
    other = 0 if d else 1
    out = list(shape)
    out[other] = max(1, shape[other] * shape[d] // PAIRED_SIZE)
    out[d] = PAIRED_SIZE
    return tuple(out)


DIM_SHAPES = ((7,), (3, 5), (2, 3, 4), (2, 3, 1, 4))  # each dim of each: a positive case
LONG_ROW = 1 << 20  # the large profile's reduction length


def dim_params(spec: OpSpec) -> list[str]:
    """The int and int_array parameters that name dims: a dim_in_range check's `dim`, a
    reduction's dim parameter in the formula."""
    names = [c.dim for c in spec.checks if c.kind == "dim_in_range" and c.dim]
    for e in Formula.of(spec.formula).expressions():
        names += [r.param for r in ir.reductions(e.ir) if r.param]
    for p in spec.params:  # a shape rule's reduce / split dims
        for t in p.shape.terms() if p.shape is not None else ():
            if t.form in ("reduce", "split") and isinstance(t.dims, str) and t.dims != "all":
                names.append(t.dims)
    return [n for n in dict.fromkeys(names) if spec.param(n).kind in ("int", "int_array")]


def _keepdims(spec: OpSpec) -> list[str]:
    """The bool parameters a shape rule's reduce reads as keepdim (dim cases run both ways)."""
    names = [
        t.keepdim
        for p in spec.params
        if p.shape is not None
        for t in p.shape.terms()
        if t.form == "reduce" and isinstance(t.keepdim, str)
    ]
    return list(dict.fromkeys(names))


def _dim_arg(spec: OpSpec, name: str, dims: tuple[int, ...]) -> Any:
    return ArrayArg("int_array", dims) if spec.param(name).kind == "int_array" else dims[0]


def _dim_plans(spec: OpSpec, product: str, base: dict[str, Any]) -> list[CasePlan]:
    """Every dim of every rank of DIM_SHAPES (negative ones too) for each dim parameter, a
    size-1 reduced axis among them, and an empty reduced axis; an int_array also gets two dims
    at once. Credited: the dim_in_range checks."""
    out = []
    tensors = [p.name for p in spec.params if p.is_tensor]
    credited = _ids(spec, "dim")
    for name in dim_params(spec):
        cases = [(shp, (d,)) for shp in DIM_SHAPES for d in range(-len(shp), len(shp))]
        cases.append(((2, 0, 3), (1,)))
        if spec.param(name).kind == "int_array":
            cases += [((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 0))]
        keeps = _keepdims(spec)
        for shp, dims in cases:
            for keep in [{}] if not keeps else [dict.fromkeys(keeps, v) for v in (False, True)]:
                args = {
                    **with_shapes(base, dict.fromkeys(tensors, shp)),
                    name: _dim_arg(spec, name, dims),
                    **keep,
                }
                tag = f"dim={name}:{','.join(map(str, dims))}@{'x'.join(map(str, shp))}"
                out += _odd_split(spec, product, args, tag)
                for check in spec.checks:  # a split dim: the size along it made even (fit)
                    args = kind_of(check).fit(spec, check, args)
                args = fit_split_rules(spec, args)
                clauses = credited + (_ids(spec, "empty") if 0 in shp else [])
                out.append(make_plan(spec, product, "positive", args, tag, clauses))
    return out


def _odd_split(spec: OpSpec, product: str, args: dict[str, Any], tag: str) -> list[CasePlan]:
    """The dim case before it is fitted (a size along a split dim that is not a multiple of the
    divisor): the negative of the check that rejects it (dim_divisible, or shape_is on a tensor
    whose rule splits), where that is the first rule the call breaks."""
    fitted = fit_split_rules(spec, args)
    for check in spec.checks:
        fitted = kind_of(check).fit(spec, check, fitted)
    if fitted == args:  # nothing to split along this dim
        return []
    v = verdict(spec, product, derive_shapes(spec, args))
    if v.check is None or not v.status or v.check.kind not in ("dim_divisible", "shape_is"):
        return []
    tail = f"{v.check.id}/{tag}"
    return [make_plan(spec, product, "negative", args, tail, [v.check.id], v.check.status)]


def _scalar_plans(spec: OpSpec, product: str, base: dict[str, Any]) -> list[CasePlan]:
    out = []
    for p in spec.attributes:
        if p.kind != "scalar":
            continue
        named = _ids(spec, "scalar-value", p.name)
        ddt = p.default_dtype or "FLOAT"
        for label, v in [("0", 0.0), ("neg", -1.5), ("large", 1.0e4), ("small", 1.0e-3)]:
            args = {**base, p.name: ScalarPlan(ddt, v)}
            out.append(
                make_plan(spec, product, "positive", args, f"scalar={p.name}:{label}", named)
            )
        for d in ["FLOAT16", "BF16", "DOUBLE", "INT32", "INT64", "INT8", "UINT8", "INT16", "BOOL"]:
            if d == ddt:
                continue
            value = True if d == "BOOL" else 2
            args = {**base, p.name: ScalarPlan(d, value)}
            out.append(
                make_plan(
                    spec, product, "positive", args, f"scalar={p.name}:{d}", _ids(spec, "dtype")
                )
            )
    return out


def _null_plans(spec: OpSpec, product: str, base: dict[str, Any]) -> list[CasePlan]:
    """One positive case per parameter whose null the spec accepts (`null: default` or
    `absent`): that argument a null pointer, every other one as in the base case."""
    return [
        make_plan(
            spec,
            product,
            "positive",
            {**base, p.name: None},
            f"null={p.name}",
            _ids(spec, "null", p.name),
        )
        for p in spec.params
        if p.nullable
    ]


#: tensor lists of 0, 1 and many tensors of mixed shapes (one of them empty)
LIST_SHAPES = {
    "0": (),
    "1": ((3, 5),),
    "4-mixed": ((2, 3), (7,), (), (1, 0, 2)),
}
SCALAR_LISTS = {"0": (), "1": (2.0,), "3": (-1.5, 0.0, 1.0e4)}


def _list_plans(spec: OpSpec, product: str, base: dict[str, Any]) -> list[CasePlan]:
    """Positive cases per tensor or scalar list: 0, 1 and several items (tensors of mixed
    shapes, one empty), every other argument as in the base case."""
    out = []
    for p in spec.params:
        if p.kind == "tensor_list":
            dtype = base[p.name].items[0].dtype
            for tag, shapes in LIST_SHAPES.items():
                items = tuple(TensorPlan(dtype, s) for s in shapes)
                args = {**base, p.name: ListPlan(p.kind, items)}
                out.append(make_plan(spec, product, "positive", args, f"list={p.name}:{tag}", []))
        elif p.kind == "scalar_list":
            ddt = p.default_dtype or "FLOAT"
            for tag, values in SCALAR_LISTS.items():
                items = tuple(ScalarPlan(ddt, v) for v in values)
                args = {**base, p.name: ListPlan(p.kind, items)}
                out.append(make_plan(spec, product, "positive", args, f"list={p.name}:{tag}", []))
    return out


def _laid_plans(spec: OpSpec, product: str, base: dict[str, Any]) -> list[CasePlan]:
    """Positive cases per tensor laid `along:` a dim (a channel weight of C elements in the base
    case): one element (1-D, and 0-d), which broadcasts over every channel, and the C elements
    in a 2-D (C, 1) shape, which the library reads by their count."""
    out = []
    for p in spec.tensor_inputs:
        if p.along is None or not isinstance(base.get(p.along.of), TensorPlan):
            continue
        size = p.along.size(tuple(base[p.along.of].shape))
        shapes = {"1": (1,), "0d": ()} | ({f"{size}x1": (size, 1)} if size > 1 else {})
        for tag, shape in shapes.items():
            args = with_shapes(base, {p.name: shape})
            out.append(make_plan(spec, product, "positive", args, f"along={p.name}:{tag}", []))
    return out


def _valid_positive(spec: OpSpec, plans: list[CasePlan]) -> list[CasePlan]:
    """Drop positive plans the spec itself rejects (a scalar dtype not allowed, say)."""
    out, seen = [], set()
    for plan in plans:
        if plan.id in seen:
            continue
        if plan.kind == "positive":
            v = verdict(spec, plan.product, plan.arg)
            if v.status != 0:
                continue
        seen.add(plan.id)
        out.append(plan)
    return out


# -- the suite -----------------------------------------------------------------------------


def plan_suite(
    registry: Registry,
    ops: list[str] | None = None,
    products: list[str] | None = None,
    profile: str = "default",
) -> list[tuple[OpSpec, CasePlan]]:
    """(spec, plan) for every case of the selected ops, in a stable order; profile "large"
    adds, per op, its same-dtype combinations at each of MODEL_SHAPES."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    specs_ = [registry.get(o) for o in ops] if ops else list(registry)
    out = []
    for spec in sorted(specs_, key=lambda s: s.name):
        out += [(spec, p) for p in plan_op(spec, products)]
        if profile == "large":
            out += [(spec, p) for p in model_plans(spec, products)]
    return out


def _merged(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """`shape`, then with its leading dims merged into one, rank by rank down to 1-D."""
    return [(math.prod(shape[: len(shape) - r + 1]), *shape[len(shape) - r + 1 :])
            for r in range(len(shape), 0, -1)]  # fmt: skip


def model_plans(spec: OpSpec, products: list[str] | None = None) -> list[CasePlan]:
    """The large profile's cases of one op: on its first selected product, each dtype
    combination whose tensors share one dtype, at each shape of MODEL_SHAPES."""
    chosen = [p for p in spec.products if not products or p in products][:1]
    plans = []
    for product in chosen:
        combos = [c for c in dtype_combos(spec, product) if len(set(c.values())) == 1]
        for combo in combos:
            for model in MODEL_SHAPES:
                # validity does not depend on the extents: check a small tensor of the same rank;
                # a rank the checks refuse (a 2-D-only op) takes the shape with its leading dims
                # merged, as a model reshapes it, down to the highest rank accepted
                shape = next((m for m in _merged(model) if verdict(spec, product, base_args(
                    spec, combo, tuple(min(s, 2) for s in m))).status == 0), None)  # fmt: skip
                if shape is None:
                    continue
                shape = _large_shape(spec, shape)  # a paired formula's: its paired dim short
                tag = "shape=model-" + "x".join(str(s) for s in shape)
                plans.append(
                    make_plan(spec, product, "positive", base_args(spec, combo, shape), tag, [])
                )
            for name in dim_params(spec):  # a long reduction: 2^20 along the last dim
                shape = (2, LONG_ROW)
                args = {**base_args(spec, combo, shape), name: _dim_arg(spec, name, (-1,))}
                tag = f"dim={name}:-1@long-2x{LONG_ROW}"
                plans.append(make_plan(spec, product, "positive", args, tag, []))
    return plans


def select(
    pairs: list[tuple[OpSpec, CasePlan]], budget: int | None
) -> list[tuple[OpSpec, CasePlan]]:
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
