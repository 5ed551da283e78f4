"""The shape check kinds: max_rank, broadcastable, same_shape, shape_is_broadcast (see
conformance.spec.checks.kinds)."""

from __future__ import annotations

from ...acl.call import Call
from ...acl.planned import with_shapes
from ..model import Check, OpSpec
from .base import NAME, Args, CheckKind, Mutations, Violation, arg, broadcast

RANK9 = (1, 1, 1, 1, 1, 1, 1, 2, 2)


class MaxRank(CheckKind):
    """No tensor named has more than `max` dimensions."""

    name = "max_rank"
    param_kind = "tensor"
    fields = {**CheckKind.fields, "max": {"type": "integer", "minimum": 0, "maximum": 64}}
    required = ("params", "max")
    credit = frozenset({"rank"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        for name in check.params:
            t = arg(call, check, name)
            if t.rank > check.max:  # type: ignore[operator]
                raise Violation(check, f"{name} has {t.rank} dims, at most {check.max} allowed")
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        tensors = [p.name for p in spec.params if p.is_tensor]
        for n in check.params:
            yield f"{n}:rank9", with_shapes(base, {n: RANK9})
            yield f"{n}:rank9-all", with_shapes(base, dict.fromkeys(tensors, RANK9))


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
