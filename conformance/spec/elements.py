"""The elements a formula is walked over, for a formula that gathers by an integer target.

A formula is walked over the broadcast shape of its tensor inputs (its *elements*). An input
that a `gather(x, target, dim)` reads as its index (a bare tensor name) has x's shape without
dim: it is placed with a size-1 dim inserted at dim, so that it is constant along the rows the
gather picks in. The output either has the elements' shape (every elementwise formula, a normalisation over a dim)
or the elements' shape with the formula's reduced / gathered dims removed or kept as 1 (NLL's
`reduction: none`, one value per row): then each output element is its row's value. A 1-D
tensor a gather picks from (a per-class weight) lies along the gather's dim, and so does a tensor
laid along a dim by its element count (`along:`, a channel weight of any shape).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..acl.call import Call, CallError, TensorArg, contiguous_strides
from .expr import ir
from .expr.walk import Formula, tensors_read
from .model import OpSpec


def gathers(spec: OpSpec) -> list[ir.Gather]:
    """The gathers of spec's formula."""
    return [g for e in Formula.of(spec.formula).expressions() for g in ir.gathers(e.ir)]


def index_dims(spec: OpSpec, env: dict[str, Any]) -> dict[str, int | str]:
    """Tensor input name -> the dim (a literal, possibly negative, or the value of its int
    parameter in `env`) of each gather reading that input as its index."""
    tensors = {p.name for p in spec.tensor_inputs}
    out: dict[str, int | str] = {}
    for g in gathers(spec):
        if isinstance(g.index, ir.Var) and g.index.name in tensors:
            d = g.dims[0] if g.dims else env.get(g.param)  # type: ignore[index]
            out[g.index.name] = int(d)  # type: ignore[arg-type]
    return out


def vector_dims(spec: OpSpec, env: dict[str, Any]) -> dict[str, int]:
    """Tensor input name -> the gather's dim, for each input a gather reads as its `x` (a bare
    tensor name): a 1-D one lies along that dim (a per-class weight)."""
    tensors = {p.name for p in spec.tensor_inputs}
    out: dict[str, int] = {}
    for g in gathers(spec):
        if isinstance(g.x, ir.Var) and g.x.name in tensors:
            d = g.dims[0] if g.dims else env.get(g.param)  # type: ignore[index]
            out[g.x.name] = int(d)  # type: ignore[arg-type]
    return out


def placed(spec: OpSpec, call: Call, env: dict[str, Any]) -> dict[str, TensorArg]:
    """Each tensor input of the call the formula reads, as it reads it: a gather's index with
    a size-1 dim inserted at the gather's dim (wrapped against the rank of the other inputs),
    a 1-D tensor a gather picks from laid along the gather's dim (a per-class weight (C) of a
    (N, C, H, W) self: (1, C, 1, 1))."""
    read = tensors_read(spec)
    args = {n: call.tensor(n) for n in read if call.args.get(n) is not None}
    dims = index_dims(spec, env)
    for name in args:
        if name not in dims:
            args[name] = _kept(spec, call, env, name, args[name])
    out = call.args.get(spec.formula.output)
    laid = {p.name: p.along.dim for p in spec.tensor_inputs if p.along is not None}
    others = [len(t.shape) for n, t in args.items() if n not in dims and n not in laid]
    others += [len(out.shape)] if isinstance(out, TensorArg) else []
    for name, d in dims.items():
        t = args.get(name)
        if t is None:
            continue
        rank = max(others, default=len(t.shape) + 1)
        if len(t.shape) != rank - 1:
            continue  # already the rank of the elements (a keepdim index) or a user's error
        if not -rank <= d < rank:
            raise CallError(f"gather(): dim {d} is out of range for rank {rank}")
        k = d % rank
        args[name] = replace(
            t, shape=t.shape[:k] + (1,) + t.shape[k:], strides=t.strides[:k] + (0,) + t.strides[k:]
        )
    rank = max(others, default=0)
    for name, d in laid.items():
        if name in args:
            args[name] = _laid(name, args[name], d, rank)
    for name, d in vector_dims(spec, env).items():
        t = args.get(name)
        if t is None or len(t.shape) != 1 or rank <= 1 or name in dims or not -rank <= d < rank:
            continue
        k = d % rank
        args[name] = replace(
            t,
            shape=(1,) * k + tuple(t.shape) + (1,) * (rank - 1 - k),
            strides=(0,) * k + tuple(t.strides) + (0,) * (rank - 1 - k),
        )
    return args


def _laid(name: str, t: TensorArg, dim: int, rank: int) -> TensorArg:
    """Tensor `t` (`along: {dim}`) as the formula reads it beside elements of `rank` dims: its
    n elements, in C order whatever its shape, along `dim` ((1, n, 1, 1) for dim 1 of a rank-4
    self); one element as a 0-d tensor, which broadcasts over every element. Raises CallError
    for n > 1 where the elements have no dim `dim` (the check numel_along rejects it first)."""
    n = t.numel
    if n == 1:
        shape: tuple[int, ...] = ()
    elif rank > dim:
        shape = (1,) * dim + (n,) + (1,) * (rank - 1 - dim)
    else:
        raise CallError(f"{name}: {n} elements laid along dim {dim} of {rank}-d elements")
    values = np.ascontiguousarray(t.view()).reshape(-1)
    return replace(t, shape=shape, strides=contiguous_strides(shape), offset=0, storage=values)


def _kept(spec: OpSpec, call: Call, env: dict[str, Any], name: str, t: TensorArg) -> TensorArg:
    """Input `name` as the formula reads it when its shape rule, for this call, is another
    tensor's reduced without keepdim (`reduce(self, -1, false)`: a gradient per row): with the
    reduced dims put back as size 1, so that it lines up with that tensor's elements (a (N)
    gradOutput beside a (N, C) self reads as (N, 1)); `t` unchanged otherwise."""
    param = next((p for p in spec.params if p.name == name), None)  # a half is no parameter
    rule = getattr(param, "shape", None)
    if rule is None:
        return t
    for cond, term in rule.cases:
        if cond is not None and not bool(np.all(cond.evaluate(dict(env)))):
            continue
        x = call.args.get(term.names[0]) if term.names else None
        if term.form != "reduce" or term.of is not None or term.keepdim is not False:
            return t
        if not isinstance(x, TensorArg):
            return t
        rank = len(x.shape)
        kept = [i for i in range(rank) if _reduced(term, env, i, rank)]
        if len(t.shape) != rank - len(kept):
            return t  # a user's error (the shape check reports it)
        shape, strides = list(t.shape), list(t.strides)
        for k in kept:
            shape.insert(k, 1)
            strides.insert(k, 0)
        return replace(t, shape=tuple(shape), strides=tuple(strides))
    return t


def _reduced(term: Any, env: dict[str, Any], i: int, rank: int) -> bool:
    """Whether a reduce term reduces dim i of a rank-`rank` tensor."""
    if term.dims == "all":
        return True
    v = env.get(term.dims) if isinstance(term.dims, str) else term.dims
    raw = [int(d) for d in (v if isinstance(v, list | tuple) else [v])]
    return any(d % max(rank, 1) == i for d in raw if -max(rank, 1) <= d < max(rank, 1))


def element_shape(
    spec: OpSpec, call: Call, env: dict[str, Any]
) -> tuple[tuple[int, ...], dict[str, TensorArg]]:
    """(the elements' shape, the inputs as placed): the broadcast of the output's shape with
    the placed inputs where the output holds it (every elementwise formula), else the broadcast
    of the placed inputs alone (an output with the reduced dims removed). Raises CallError for
    shapes that do not broadcast."""
    args = placed(spec, call, env)
    out = tuple(call.tensor(spec.formula.output).shape)
    shapes = [tuple(t.shape) for t in args.values()]
    try:
        if np.broadcast_shapes(out, *shapes) == out:
            return out, args
    except ValueError:
        pass
    try:
        return tuple(np.broadcast_shapes(*shapes)), args
    except ValueError:
        raise CallError(
            f"{spec.name}: the inputs' shapes {shapes} do not broadcast (gathered index placed)"
        ) from None
