"""The dim check kinds: dim_in_range, dims_unique and dim_divisible (see
conformance.spec.checks.kinds).

Both read a dim parameter (`dim`, an int or int_array) relative to the rank of the first tensor
in `params`, negative dims wrapping; a dim out of range is dim_in_range's to report, so these
say nothing about it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...acl.call import ArrayArg, Call
from ...acl.planned import with_shapes
from ..model import Check, OpSpec, Param
from .base import NAME, Args, CheckKind, Mutations, Violation, arg

if TYPE_CHECKING:
    from ..lint import Linter


def wrapped(dims: tuple[int, ...], rank: int) -> list[int | None]:
    """Each dim wrapped into [0, rank) (rank 0 counts as 1); None where it is out of range."""
    rank = max(rank, 1)
    return [d + rank if -rank <= d < 0 else d if 0 <= d < rank else None for d in dims]


def _dim_param(
    lint: Linter, i: int, c: dict[str, Any], by_name: dict[str, Param], kinds: tuple[str, ...]
) -> None:
    p = by_name.get(c.get("dim", ""))
    if p is None or p.kind not in kinds:
        lint.err(
            ("checks", i, "dim"),
            f"{c['kind']}: dim {c.get('dim')!r} must name an {' or '.join(kinds)} parameter",
        )


def dims_of(value: Any) -> tuple[int, ...]:
    """The dims an int or int_array argument names (an ArrayArg's items, or one int)."""
    if isinstance(value, ArrayArg):
        return tuple(int(v) for v in value.items)
    if isinstance(value, list | tuple):
        return tuple(int(v) for v in value)
    return (int(value),)


def named_dims(call: Call, check: Check) -> tuple[int, ...]:
    """The dims the call's `dim` argument of `check` names (none where it is not given)."""
    value = call.args.get(check.dim or "")
    return () if value is None else dims_of(value)


class DimCheck(CheckKind):
    """A check of the tensors `params` along the dims its parameter `dim` names (one of
    `dim_kinds`)."""

    param_kind = "tensor"
    fields = {**CheckKind.fields, "dim": NAME}
    required = ("params", "dim")
    credit = frozenset({"dim"})
    dim_kinds: tuple[str, ...] = ("int", "int_array")

    @classmethod
    def parse(
        cls, lint: Linter, i: int, c: dict[str, Any], by_name: dict[str, Param], sets: dict
    ) -> Check:
        check = super().parse(lint, i, c, by_name, sets)
        _dim_param(lint, i, c, by_name, cls.dim_kinds)
        return check


class DimInRange(DimCheck):
    """Each dim of the int or int_array parameter `dim` lies in [-rank, rank - 1] of every tensor
    named (negative dims wrap); a rank-0 tensor counts as rank 1, as the vendor's CheckDim does
    (dim 0 and -1 are valid)."""

    name = "dim_in_range"
    dim_kinds = ("int", "int_array")

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        dims = named_dims(call, check)
        for name in check.params if dims else ():
            rank = max(arg(call, check, name).rank, 1)
            for d in dims:
                if not -rank <= d < rank:
                    raise Violation(
                        check, f"{check.dim}={d} is out of range [{-rank}, {rank - 1}] of {name}"
                    )
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        name, dim = check.params[0], check.dim or ""
        rank = max(len(base[name].shape), 1)
        array = isinstance(base.get(dim), ArrayArg)
        for label, d in ((f"{dim}:rank", rank), (f"{dim}:-rank-1", -rank - 1)):
            yield label, {**base, dim: ArrayArg("int_array", (d,)) if array else d}


class DimsUnique(DimCheck):
    """The dims of the int_array parameter `dim` are distinct once negatives are wrapped by the
    rank of `params`' first tensor (aclnn's CheckDimsUnique: dims [0, -2] of a rank-2 tensor
    name dim 0 twice)."""

    name = "dims_unique"
    dim_kinds = ("int_array",)

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        dims = named_dims(call, check)
        rank = arg(call, check, check.params[0]).rank
        seen: dict[int, int] = {}
        for d, w in zip(dims, wrapped(dims, rank), strict=True):
            if w is None:
                continue
            if w in seen:
                raise Violation(
                    check,
                    f"{check.dim} names dim {w} twice ({seen[w]} and {d}, rank {max(rank, 1)})",
                )
            seen[w] = d
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        rank = max(len(base[check.params[0]].shape), 1)
        dim = check.dim or ""
        yield f"{dim}:0,0", {**base, dim: ArrayArg("int_array", (0, 0))}
        yield f"{dim}:0,-{rank}", {**base, dim: ArrayArg("int_array", (0, -rank))}


class DimDivisible(DimCheck):
    """The size of each tensor named along the dim of the int (or one-item int_array) parameter
    `dim` is a multiple of `by` (GLU splits self in two halves along dim: by 2)."""

    name = "dim_divisible"
    fields = {**DimCheck.fields, "by": {"type": "integer", "minimum": 2}}
    required = ("params", "dim", "by")

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        dims = named_dims(call, check)
        for name in check.params if dims else ():
            t = arg(call, check, name)
            shape = t.shape or (1,)
            for d in wrapped(dims, t.rank):
                if d is not None and shape[d] % check.by:  # type: ignore[operator]
                    raise Violation(
                        check,
                        f"{name} has size {shape[d]} along dim {d}, not a multiple of {check.by}",
                    )
        return False

    @classmethod
    def fit(cls, spec: OpSpec, check: Check, base: Args) -> Args:
        """The base call made to pass: each tensor named gets `by` times its size along dim
        (a 3x5 GLU self split along -1 becomes 3x10, its 3x5 output the half)."""
        value = base.get(check.dim or "")
        if value is None:
            return base
        shapes = {}
        for name in check.params:
            shape = list(base[name].shape)
            for d in wrapped(dims_of(value), len(shape)):
                if d is not None and shape and shape[d] % check.by:  # type: ignore[operator]
                    shape[d] *= check.by  # type: ignore[operator]
            shapes[name] = tuple(shape)
        return with_shapes(base, shapes)

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        value = base.get(check.dim or "")
        if value is None:
            return
        for name in check.params:
            shape = list(base[name].shape)
            for d in wrapped(dims_of(value), len(shape)):
                if d is not None and shape:
                    shape[d] = shape[d] + 1  # a multiple of by, plus one
            yield f"{name}:{'x'.join(map(str, shape))}", with_shapes(base, {name: tuple(shape)})
