"""The shape check kinds: max_rank, min_rank, same_format, broadcastable, same_shape,
shape_is_broadcast, dim_in_range (see conformance.spec.checks.kinds)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ...acl.call import Call
from ...acl.planned import with_shapes
from ..model import Check, OpSpec
from .base import NAME, Args, CheckKind, Mutations, Violation, arg, broadcast

if TYPE_CHECKING:
    pass

RANK9 = (1, 1, 1, 1, 1, 1, 1, 2, 2)


def ranks_within(call: Call, check: Check, outside: Callable[[int], bool], bound: str) -> bool:
    """False (not violated) unless a tensor of `params` has a rank `outside` the bound (said by
    `bound` in the message)."""
    for name in check.params:
        t = arg(call, check, name)
        if outside(t.rank):
            raise Violation(check, f"{name} has {t.rank} dims, {bound}")
    return False


class MaxRank(CheckKind):
    """No tensor named has more than `max` dimensions."""

    name = "max_rank"
    param_kind = "tensor"
    fields = {**CheckKind.fields, "max": {"type": "integer", "minimum": 0, "maximum": 64}}
    required = ("params", "max")
    credit = frozenset({"rank"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        return ranks_within(call, check, lambda r: r > check.max, f"at most {check.max} allowed")  # type: ignore[operator]

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        tensors = [p.name for p in spec.params if p.is_tensor]
        for n in check.params:
            yield f"{n}:rank9", with_shapes(base, {n: RANK9})
            yield f"{n}:rank9-all", with_shapes(base, dict.fromkeys(tensors, RANK9))
        over = check.max + 1  # type: ignore[operator]
        if over != len(RANK9):  # one past a lower bound (rank 9 breaks an earlier max of 8)
            shape = (1,) * max(over - 2, 0) + (2, 3)[: min(over, 2)]
            for n in check.params:
                yield f"{n}:rank{over}", with_shapes(base, {n: shape})


class MinRank(CheckKind):
    """No tensor named has fewer than `min` dimensions (the pair of max_rank: a doc's 1-8)."""

    name = "min_rank"
    param_kind = "tensor"
    fields = {**CheckKind.fields, "min": {"type": "integer", "minimum": 1, "maximum": 64}}
    required = ("params", "min")
    credit = frozenset({"rank"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        return ranks_within(call, check, lambda r: r < check.min, f"at least {check.min} required")  # type: ignore[operator]

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        low = (1,) * (check.min - 1)  # type: ignore[operator]
        tensors = [p.name for p in spec.params if p.is_tensor]
        for n in check.params:
            yield f"{n}:rank{len(low)}", with_shapes(base, {n: low})
            yield f"{n}:rank{len(low)}-all", with_shapes(base, dict.fromkeys(tensors, low))


#: The format a same_format negative case gives one tensor (another where it already has it).
OTHER_FORMATS = ("NCHW", "NHWC")


class SameFormat(CheckKind):
    """The tensors named have one storage format (aclTensor's format: ND, NCHW, NHWC, ...)."""

    name = "same_format"
    param_kind = "tensor"

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        formats = [getattr(arg(call, check, n), "format", "ND") for n in check.params]
        if len(set(formats)) != 1:
            shown = ", ".join(f"{n}={f}" for n, f in zip(check.params, formats, strict=True))
            raise Violation(check, f"formats differ: {shown}")
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        for n in check.params:
            now = getattr(base[n], "format", "ND")
            other = next(f for f in OTHER_FORMATS if f != now)
            yield f"{n}:{other}", {**base, n: replace(base[n], format=other)}


class Broadcastable(CheckKind):
    """The shapes of the tensors named broadcast together."""

    name = "broadcastable"
    param_kind = "tensor"
    limit = 2
    credit = frozenset({"shape"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        shapes = [arg(call, check, n).shape for n in check.params]
        if broadcast(shapes) is None:
            raise Violation(check, "shapes do not broadcast: " + " vs ".join(map(str, shapes)))
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        a, b = check.params[:2]
        yield f"{a}:2x3.{b}:4x3", with_shapes(base, {a: (2, 3), b: (4, 3)})
        yield f"{a}:3.{b}:4", with_shapes(base, {a: (3,), b: (4,)})


class SameShape(CheckKind):
    """The tensors named have one shape."""

    name = "same_shape"
    param_kind = "tensor"
    credit = frozenset({"shape"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        shapes = [arg(call, check, n).shape for n in check.params]
        if len(set(shapes)) != 1:
            raise Violation(
                check,
                "shapes differ: "
                + ", ".join(f"{n}={list(s)}" for n, s in zip(check.params, shapes, strict=True)),
            )
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        for n in check.params:
            yield f"{n}:3x4", with_shapes(base, {n: (3, 4)})
            yield f"{n}:3x5x1", with_shapes(base, {n: (3, 5, 1)})


class ShapeIsBroadcast(CheckKind):
    """The tensors named have the broadcast shape of the tensors `of`."""

    name = "shape_is_broadcast"
    param_kind = "tensor"
    fields = {**CheckKind.fields, "of": {"type": "array", "minItems": 2, "items": NAME}}
    required = ("params", "of")
    limit = 2
    credit = frozenset({"shape"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        want = broadcast([arg(call, check, n).shape for n in check.of])
        for name in check.params:
            got = arg(call, check, name).shape
            if want is None or got != want:
                raise Violation(
                    check,
                    f"{name} shape {list(got)} != broadcast shape "
                    f"{list(want) if want is not None else 'none'}",
                )
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        a, b = check.of[:2]
        for n in check.params:
            yield f"{n}:3x4", with_shapes(base, {n: (3, 4)})
            yield f"{n}:3x1-of-3x1.1x5", with_shapes(base, {a: (3, 1), b: (1, 5), n: (3, 1)})
