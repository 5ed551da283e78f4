"""The shape check kinds: max_rank, min_rank, dim_nonempty, same_format, broadcastable,
same_shape, shape_is_broadcast, dim_in_range (see conformance.spec.checks.kinds)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...acl.call import ArrayArg, Call
from ...acl.planned import TensorPlan, with_shapes
from ..model import Check, OpSpec, Param
from ..shapes import ShapeError, rule_order, shape_of
from .base import NAME, Args, CheckKind, Mutations, Violation, arg, attribute_env, broadcast

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
            # every tensor at once: a shape rule between them (same_shape, a size) stays met
            yield (
                f"{check.params[0]}:rank{over}-all",
                with_shapes(base, dict.fromkeys(tensors, shape)),
            )


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
    def fit(cls, spec: OpSpec, check: Check, base: Args) -> Args:
        """The base call made to pass: a tensor named with fewer than `min` dims gets trailing
        dims of 2 (a 4-D input: the 3x5 base becomes 3x5x2x2)."""
        shapes = {}
        for name in check.params:
            shape = tuple(getattr(base.get(name), "shape", ()) or ())
            if base.get(name) is not None and len(shape) < check.min:  # type: ignore[operator]
                shapes[name] = shape + (2,) * (check.min - len(shape))  # type: ignore[operator]
        return with_shapes(base, shapes) if shapes else base

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        low = (1,) * (check.min - 1)  # type: ignore[operator]
        tensors = [p.name for p in spec.params if p.is_tensor]
        for n in check.params:
            yield f"{n}:rank{len(low)}", with_shapes(base, {n: low})
            yield f"{n}:rank{len(low)}-all", with_shapes(base, dict.fromkeys(tensors, low))


class DimNonempty(CheckKind):
    """No tensor named is empty along dim `axis` (an int literal, negative wrapping by the
    tensor's rank): a size of 0 there is rejected, whatever the other sizes (a class dim that
    must hold a class, the batch dim before it may be 0). A 0-d tensor has no dim: it passes;
    so does a tensor of too few dims for `axis` (a rank check says what those are)."""

    name = "dim_nonempty"
    param_kind = "tensor"
    fields = {**CheckKind.fields, "axis": {"type": "integer", "minimum": -8, "maximum": 7}}
    required = ("params", "axis")
    credit = frozenset({"shape"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        for name in check.params:
            shape = tuple(arg(call, check, name).shape)
            k = cls.at(shape, check.axis)  # type: ignore[arg-type]
            if k is not None and shape[k] == 0:
                raise Violation(check, f"{name} {list(shape)} is empty along dim {check.axis}")
        return False

    @staticmethod
    def at(shape: tuple[int, ...], axis: int) -> int | None:
        """The dim `axis` of a tensor of `shape` (wrapped), None where it has no such dim."""
        rank = len(shape)
        return axis % rank if rank and -rank <= axis < rank else None

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        for n in check.params:
            shape = tuple(getattr(base.get(n), "shape", ()) or ())
            k = cls.at(shape, check.axis)  # type: ignore[arg-type]
            if k is not None:
                empty = shape[:k] + (0,) + shape[k + 1 :]
                yield f"{n}:{'x'.join(map(str, empty))}", with_shapes(base, {n: empty})
            if shape != (0,) and cls.at((0,), check.axis) is not None:  # a 1-D one of nothing
                yield f"{n}:0", with_shapes(base, {n: (0,)})

    @staticmethod
    def empty_elsewhere(check: Check, shape: tuple[int, ...]) -> tuple[int, ...] | None:
        """`shape` with a 0 at the first dim that is not `axis` (the positive empty case of a
        spec that rejects an empty `axis`: the batch empty, the classes not); None for a
        shape of fewer than two dims."""
        k = DimNonempty.at(shape, check.axis)  # type: ignore[arg-type]
        free = [d for d in range(len(shape)) if d != k]
        if k is None or not free:
            return None
        return tuple(0 if d == free[0] else s for d, s in enumerate(shape))


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


def _numel(shape: tuple[int, ...]) -> int:
    return math.prod(int(n) for n in shape)


class NumelAtLeast(CheckKind):
    """The tensors named hold at least as many elements as tensor `numel_of` (whatever their
    shapes: a buffer the op fills from the front)."""

    name = "numel_at_least"
    param_kind = "tensor"
    fields = {**CheckKind.fields, "numel_of": NAME}
    required = ("params", "numel_of")
    credit = frozenset({"shape"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        want = _numel(arg(call, check, check.numel_of).shape)  # type: ignore[arg-type]
        for name in check.params:
            got = _numel(arg(call, check, name).shape)
            if got < want:
                raise Violation(
                    check, f"{name} has {got} elements, fewer than {check.numel_of}'s {want}"
                )
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        want = _numel(getattr(base.get(check.numel_of), "shape", ()))
        if want < 1:
            return
        for n in check.params:
            yield f"{n}:{want - 1}", with_shapes(base, {n: (want - 1,)})
            if want > 1:
                yield f"{n}:1", with_shapes(base, {n: (1,)})


class NumelAlong(CheckKind):
    """Each tensor named (a tensor input laid `along:` a dim of another) holds 1 element or as
    many as its `along.of` has along `along.dim` (1 where that tensor has no such dim): a
    channel weight, whatever its shape."""

    name = "numel_along"
    param_kind = "tensor"
    credit = frozenset({"shape"})

    @classmethod
    def param_problem(cls, name: str, p: Param) -> str | None:
        problem = super().param_problem(name, p)
        if problem is None and p.along is None:
            return f"{cls.name}: {name} is laid along no dim (give it `along: {{of, dim}}`)"
        return problem

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        problem = next(filter(None, (cls._count(spec, check, call, n) for n in check.params)), "")
        if problem:
            raise Violation(check, problem)
        return False

    @staticmethod
    def _count(spec: OpSpec, check: Check, call: Call, name: str) -> str:
        """Why tensor `name` holds the wrong element count, or ""."""
        along = spec.param(name).along
        want = along.size(arg(call, check, along.of).shape)  # type: ignore[union-attr]
        got = _numel(arg(call, check, name).shape)
        if got in (1, want):
            return ""
        return f"{name} has {got} elements, not 1 or {along.of}'s {want} along dim {along.dim}"  # type: ignore[union-attr]

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        for n in check.params:
            along = spec.param(n).along
            want = along.size(tuple(getattr(base.get(along.of), "shape", ())))
            bad = want + 1 if want else 2  # neither 1 nor want
            yield f"{n}:{bad}", with_shapes(base, {n: (bad,)})


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
        # an `of` tensor grown by a leading dim: the named tensors (and whatever an earlier
        # check ties to them, e.g. out's same_shape) keep their shapes
        n0 = base.get(check.params[0])
        for o in check.of:
            if o not in check.params and isinstance(n0, TensorPlan):
                yield f"{o}:3x-grown", with_shapes(base, {o: (3, *n0.shape)})


def call_shapes(call: Call) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor argument of a call (a null one has none)."""
    return {n: tuple(v.shape) for n, v in call.args.items() if hasattr(v, "shape")}


def planned_shapes(args: Args) -> tuple[dict[str, tuple[int, ...]], dict[str, Any]]:
    """A planned call's tensor shapes and the values its other parameters hold (what a shape
    rule reads)."""
    shapes, attrs = {}, {}
    for n, v in args.items():
        if isinstance(v, TensorPlan):
            shapes[n] = tuple(v.shape)
        elif isinstance(v, ArrayArg):
            attrs[n] = v.values()
        else:
            attrs[n] = getattr(v, "value", v)
    return shapes, attrs


def derive_shapes(spec: OpSpec, args: Args) -> Args:
    """`args` with every tensor that has a `shape:` rule given the shape its rule computes, in
    dependency order (rule_order: after the tensors it reads); a rule the call cannot meet (an
    odd split) leaves the tensor as it is, for the check that rejects it. A tensor laid along a
    dim (`along:`) holding neither 1 element nor its `of`'s channels gets (channels,): before
    the rules (one may read its numel) and again after them (its `of` may be ruled)."""
    out = _laid_shapes(spec, dict(args))
    for p in rule_order(spec.params):  # each after the ruled tensors it reads
        if not isinstance(out.get(p.name), TensorPlan):
            continue
        shapes, attrs = planned_shapes(out)
        try:
            out[p.name] = replace(out[p.name], shape=shape_of(p.shape, shapes, attrs))
        except ShapeError:
            continue
    return _laid_shapes(spec, out)


def _laid_shapes(spec: OpSpec, out: Args) -> Args:
    for p in spec.tensor_inputs:  # (channels,) unless it holds 1 or them; no channels: (0,)
        t, of = out.get(p.name), out.get(p.along.of) if p.along else None
        if p.along is None or not isinstance(t, TensorPlan) or not isinstance(of, TensorPlan):
            continue
        size = p.along.size(tuple(of.shape))
        if _numel(tuple(t.shape)) not in {1, size} - {0}:
            out[p.name] = replace(t, shape=(size,))
    return out


def rule_variants(spec: OpSpec, rule: Any, base: Args) -> list[tuple[str, Args]]:
    """`base` as it is (tag ""), then once per other documented value of each int, string or
    bool parameter a rule's `when` reads (tag "@name=value"): every branch of a conditional
    rule gets its cases."""
    out: list[tuple[str, Args]] = [("", base)]
    if rule is None:
        return out
    for name in rule.params:
        p = spec.param(name)
        if p.kind == "bool":
            choices: tuple[Any, ...] = (False, True)
        elif p.kind in ("int", "string", "float") and p.values:
            choices = p.values
        else:
            continue
        for v in choices:
            if v != base.get(name):
                out.append((f"@{name}={v}", {**base, name: v}))
    return out


class ShapeIs(CheckKind):
    """The tensors named have the shape their `shape:` rule gives (conformance.spec.shapes)."""

    name = "shape_is"
    param_kind = "tensor"
    credit = frozenset({"shape", "dim"})

    @classmethod
    def parse(cls, lint, i, c, by_name, sets):  # type: ignore[no-untyped-def]
        check = super().parse(lint, i, c, by_name, sets)
        for j, n in enumerate(check.params):
            if n in by_name and by_name[n].shape is None:
                lint.err(
                    ("checks", i, "params", j),
                    f"shape_is: {n} has no `shape:` rule to check (add one to its parameter)",
                )
        return check

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        shapes, attrs = call_shapes(call), attribute_env(spec, call)
        for name in check.params:
            got = arg(call, check, name).shape
            rule = spec.param(name).shape
            try:
                want = shape_of(rule, shapes, attrs)
            except ShapeError as exc:
                raise Violation(check, f"{name}: {exc}") from None
            if tuple(got) != want:
                raise Violation(check, f"{name} shape {list(got)} != {list(want)} ({rule})")
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        for n in check.params:
            for tag, args in rule_variants(spec, spec.param(n).shape, base):
                shapes, attrs = planned_shapes(args)
                try:
                    want = shape_of(spec.param(n).shape, shapes, attrs)
                except ShapeError:
                    continue
                yield f"{n}:extra-dim{tag}", with_shapes(args, {n: (*want, 2)})
                if want:
                    yield f"{n}:dim0+1{tag}", with_shapes(args, {n: (want[0] + 1, *want[1:])})
