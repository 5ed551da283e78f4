"""Case plans: what a generated case is before any data is drawn.

A CasePlan names its case, its product and, per parameter, a TensorPlan (dtype, shape, layout,
value kind), a ScalarPlan or a plain bool or string. Plans hold no data, so the whole suite can
be listed, filtered and budgeted cheaply; conformance.cases.build turns one into a Case. This is the
vocabulary of case planning (conformance.cases.generate) and negative cases
(conformance.cases.negatives); the planned arguments themselves, which the check kinds mutate,
are conformance.acl.planned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..acl import dtypes as dt
from ..acl.call import ArrayArg
from ..acl.planned import ListPlan, ScalarPlan, TensorPlan, with_shapes
from ..spec.checks.kinds import kind_of
from ..spec.checks.shape import derive_shapes, planned_shapes
from ..spec.model import OpSpec, Param

BASE_SHAPE = (3, 5)


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


def base_args(
    spec: OpSpec, dtypes: dict[str, str], shape: tuple[int, ...] = BASE_SHAPE
) -> dict[str, Any]:
    """The base configuration: tensors of `dtypes` and `shape`, every other parameter default."""
    args: dict[str, Any] = {}
    for p in spec.params:
        if p.is_tensor:
            args[p.name] = TensorPlan(dtypes[p.name], shape)
        elif p.kind == "scalar":
            args[p.name] = ScalarPlan(p.default_dtype or "FLOAT", p.default)
        elif p.kind == "bool":
            args[p.name] = bool(p.default)
        elif p.is_number:
            args[p.name] = number_default(p)
        elif p.is_array:
            args[p.name] = ArrayArg(p.kind, tuple(p.default or ()))
        elif p.kind == "tensor_list":  # one tensor of the base shape; generate adds 0 and many
            args[p.name] = ListPlan(p.kind, (TensorPlan(list_dtype(p, dtypes), shape),))
        elif p.kind == "scalar_list":
            args[p.name] = ListPlan(p.kind, (ScalarPlan(p.default_dtype or "FLOAT", 1.0),))
        else:
            args[p.name] = p.default if p.default is not None else (p.values[0] if p.values else "")
    for check in spec.checks:  # a check a 3x5 base breaks (a split dim) fits it
        args = kind_of(check).fit(spec, check, args)
    return derive_shapes(spec, fit_split_rules(spec, args))


def number_default(p: Param) -> int | float:
    """An int or float parameter's base value: its default, else its first documented value,
    else the low end of its range, else 0."""
    v = p.default
    if v is None:
        v = p.values[0] if p.values else (p.range[0] if p.range else 0)
    return float(v) if p.kind == "float" else int(v)


def list_dtype(p: Param, dtypes: dict[str, str]) -> str:
    """The dtype of a tensor list's items: its `default_dtype`, else the first tensor's."""
    return p.default_dtype or next(iter(dtypes.values()), "FLOAT")


def point_arg(p: Param, v: Any) -> Any:
    """The planned argument of parameter `p` set to the YAML value `v` (a special point's
    `with:`): a scalar of its default dtype, a float as a float, an array as an ArrayArg."""
    if p.kind == "scalar":
        return ScalarPlan(p.default_dtype or "FLOAT", v)
    if p.kind == "float":
        return float(v)
    if p.is_array:
        return ArrayArg(p.kind, tuple(v))
    return v


def make_plan(
    spec: OpSpec,
    product: str,
    kind: str,
    args: dict[str, Any],
    tail: str,
    clauses: list[str],
    status: int = 0,
    point: str | None = None,
) -> CasePlan:
    """A plan with its case id: op/product/dtypes/variant/tail, or op/product/neg/tail.

    Ids are part of the public interface (replay, expectations, results), so they are made here
    and nowhere else.
    """
    if kind == "positive":  # every ruled tensor (`shape:`) takes the shape its rule gives
        args = derive_shapes(spec, args)
    ident = f"{spec.name}/{product}/{_dtag(spec, args)}/{_variant_tag(spec, args)}/{tail}"
    if kind == "negative":
        ident = f"{spec.name}/{product}/neg/{tail}"
    return CasePlan(
        ident, spec.name, product, kind, tuple(args.items()), tuple(clauses), status, point
    )


def _dtag(spec: OpSpec, args: dict[str, Any]) -> str:
    return dt.tag(
        args[p.name].dtype
        for p in spec.params
        if p.is_tensor and isinstance(args.get(p.name), TensorPlan)
    )


def _variant_tag(spec: OpSpec, args: dict[str, Any]) -> str:
    parts = []
    for p in spec.attributes:
        if p.kind == "bool":
            parts.append(f"{p.name}={int(bool(args[p.name]))}")
        elif p.kind == "string" and p.values:
            parts.append(f"{p.name}={args[p.name]}")
        elif p.is_number and p.values:
            parts.append(f"{p.name}={args[p.name]!r}")
    return ",".join(parts) or "-"


def fit_split_rules(spec: OpSpec, args: dict[str, Any]) -> dict[str, Any]:
    """`args` with each tensor a shape rule splits (`split(x, dim, n)`) made a multiple of n
    along the dim (3x5 split along -1 by 2: 3x10), so the ruled tensor can take its shape."""
    shapes, attrs = planned_shapes(args)
    new: dict[str, tuple[int, ...]] = {}
    for p in spec.params:
        for term in p.shape.terms() if p.shape is not None else ():
            if term.form != "split" or not term.names or term.names[0] not in shapes:
                continue
            x = term.names[0]
            shape = list(new.get(x, shapes[x]))
            d = attrs.get(term.dims) if isinstance(term.dims, str) else term.dims
            if not shape or not isinstance(d, int) or not -len(shape) <= d < len(shape):
                continue
            if shape[d] % term.n:
                shape[d] *= term.n
                new[x] = tuple(shape)
    return with_shapes(args, new) if new else args
