"""A formula's split of tensors in two halves along a dim (`half(x, dim, k)`, `concat(a, b, dim)`
in the expression language): the views of a call that evaluate it.

The walker reads `half(x, dim, k)` as a name (its key) and `concat(a, b, dim)` as
where(index == 0, a, b), the index (its key) being the half each element lies in. `split_call`
binds those names for a call, as tensor views of the call's own storages, so that every tier of
the reference (numpy, the compiled kernels, double-double, mpmath) evaluates the formula
elementwise, through the one walker, with no copy:

- the output's shape, dim D of size n*h (n = 2 where the formula concatenates halves, its output
  having the full size; else n = 1, the output being one half), is viewed as D split in two
  axes (n, h), the C order of the elements unchanged;
- `half(x, dim, k)`: x's view (1, h) along its dim D, offset by k*h elements along it;
- every tensor the formula reads whole: its size along D (n*h, h or 1) viewed as (n, h),
  (1, h) or (1, 1), broadcast over the axis n;
- the concatenation's index: a FLOAT tensor [0, 1] along the axis n, broadcast over the rest.

Dims wrap by the rank of the tensor they split (half: x's; concat: the output's) and count from
the right beyond it, as broadcasting aligns shapes. One formula splits along one dim.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..acl.call import Call, CallError, TensorArg
from .checks.dims import dims_of
from .expr import ir
from .expr.walk import Formula, tensors_read
from .model import OpSpec


def splits(spec: OpSpec) -> list[ir.Half | ir.Concat]:
    """The halves and concatenations of spec's formula (empty: it splits nothing)."""
    return [n for e in Formula.of(spec.formula).expressions() for n in ir.splits(e.ir)]


def _dim(node: ir.Half | ir.Concat, call: Call, rank: int, what: str) -> int:
    if node.param is not None:
        value = call.args.get(node.param)
        if value is None:
            raise CallError(f"{node.key}: the dim parameter {node.param} is not given")
        (d,) = dims_of(value)[:1] or (0,)
    else:
        d = int(node.dim)  # type: ignore[arg-type]
    if rank == 0 or not -rank <= d < rank:
        raise CallError(f"{node.key}: dim {d} is out of range for {what} of rank {rank}")
    return d % rank


def split_call(spec: OpSpec, call: Call) -> Call:
    """`call` with the output viewed along the split dim as (n, h), each tensor the formula reads
    viewed alike, and the halves' and concatenation's keys bound (see the module docstring);
    `call` itself where the formula splits nothing. CallError where the shapes do not split."""
    nodes = splits(spec)
    if not nodes:
        return call
    out_name = spec.formula.output
    out = call.tensor(out_name)
    rank = len(out.shape)
    axes = set()
    for n in nodes:
        if isinstance(n, ir.Half):
            x = call.tensor(n.x)
            axes.add(_dim(n, call, len(x.shape), n.x) + rank - len(x.shape))
        else:
            axes.add(_dim(n, call, rank, out_name))
    if len(axes) != 1:
        raise CallError(f"{spec.name}: the formula splits along different dims {sorted(axes)}")
    (axis,) = axes
    if not 0 <= axis < rank:
        raise CallError(f"{spec.name}: the split dim lies outside {out_name}'s shape {out.shape}")
    parts = 2 if any(isinstance(n, ir.Concat) for n in nodes) else 1
    if out.shape[axis] % parts:
        raise CallError(
            f"{out_name} has the odd size {out.shape[axis]} along dim {axis}: no halves"
        )
    h = out.shape[axis] // parts
    args: dict[str, Any] = dict(call.args)
    args[out_name] = _expand(out_name, out, axis, h, parts)
    for name in tensors_read(spec):
        t = call.args.get(name)
        if isinstance(t, TensorArg):
            at = axis - (rank - len(t.shape))
            args[name] = _expand(name, t, at, h, parts) if at >= 0 else t
    for n in {n.key: n for n in nodes}.values():
        if isinstance(n, ir.Half):
            x = call.tensor(n.x)
            at = axis - (rank - len(x.shape))
            if x.shape[at] != 2 * h:
                raise CallError(
                    f"{n.key}: {n.x} has size {x.shape[at]} along dim {at}, not twice the "
                    f"half {h} of {out_name}"
                )
            stride = x.strides[at]
            args[n.key] = TensorArg(
                x.dtype,
                (*x.shape[:at], 1, h, *x.shape[at + 1 :]),
                (*x.strides[:at], 0, stride, *x.strides[at + 1 :]),
                x.offset + n.k * h * stride,
                x.storage,
                x.format,
            )
        else:
            tail = rank - axis  # the axis h and the dims after it
            args[n.key] = TensorArg(
                "FLOAT", (2,) + (1,) * tail, (1,) + (0,) * tail, 0, np.array([0, 1], np.float32)
            )
    return replace(call, args=args)


def _expand(name: str, t: TensorArg, at: int, h: int, parts: int) -> TensorArg:
    """t with its dim `at` (of size parts*h, h or 1) as two axes (parts, h), (1, h) or (1, 1)."""
    size, stride = t.shape[at], t.strides[at]
    if size == parts * h:
        dims, strides = (parts, h), (h * stride, stride)
    elif size == h:
        dims, strides = (1, h), (0, stride)
    elif size == 1:
        dims, strides = (1, 1), (0, 0)
    else:
        raise CallError(
            f"{name} has size {size} along the split dim {at}: neither the whole ({parts * h}) "
            f"nor a half ({h})"
        )
    return TensorArg(
        t.dtype,
        (*t.shape[:at], *dims, *t.shape[at + 1 :]),
        (*t.strides[:at], *strides, *t.strides[at + 1 :]),
        t.offset,
        t.storage,
        t.format,
    )
