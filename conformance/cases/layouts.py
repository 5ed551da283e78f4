"""Memory layouts for generated cases: a layout places a logical array in a storage array the way
a real caller might: transposed, with gaps between elements, behind a storage offset, or with a
zero stride. Gaps and padding are filled with NaN (or a sentinel for integers) so that reading
outside a view shows.
"""

from __future__ import annotations

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import TensorArg, contiguous_strides

OFFSET = 7
INT_FILL = 77


def layout(values: np.ndarray, dtype: str, kind: str, fill: float | None = None) -> TensorArg:
    """A TensorArg holding `values` (logical, already in dtype) with memory layout `kind`."""
    d = dt.get(dtype)
    shape = tuple(int(s) for s in values.shape)
    fill_v = _fill_value(d, fill)
    if kind == "transposed" and len(shape) >= 2:
        storage = np.ascontiguousarray(values.transpose()).reshape(-1)
        strides = tuple(reversed(contiguous_strides(tuple(reversed(shape)))))
        return TensorArg(d.name, shape, strides, 0, storage)
    if kind == "gaps" and len(shape) >= 1:
        padded = tuple(shape[:-1]) + (2 * shape[-1] + 1,)
        storage = np.full(int(np.prod(padded, dtype=np.int64)), fill_v, dtype=d.np)
        strides = list(contiguous_strides(padded))
        strides[-1] = 2
        t = TensorArg(d.name, shape, tuple(strides), 1, storage)
        t.write(values)
        return t
    if kind == "offset":
        n = values.size
        storage = np.full(OFFSET + n + 3, fill_v, dtype=d.np)
        t = TensorArg(d.name, shape, contiguous_strides(shape), OFFSET, storage)
        t.write(values)
        return t
    if kind == "zero-stride" and len(shape) >= 1 and shape[0] > 0:
        row = np.ascontiguousarray(values[0]).reshape(-1)
        strides = (0,) + contiguous_strides(shape[1:])
        storage = np.concatenate([row, np.full(2, fill_v, dtype=d.np)])
        return TensorArg(d.name, shape, strides, 0, storage)
    data = values if values.dtype == d.np else values.astype(d.np)
    return TensorArg(
        d.name, shape, contiguous_strides(shape), 0, np.ascontiguousarray(data).reshape(-1)
    )


def zero_stride_values(values: np.ndarray) -> np.ndarray:
    """The logical contents a zero-stride view of `values` shows: every row equals row 0."""
    if values.ndim == 0 or values.shape[0] == 0:
        return values
    return np.broadcast_to(values[:1], values.shape).copy()


def output_tensor(dtype: str, shape: tuple[int, ...], kind: str) -> TensorArg:
    """An output tensor whose every storage element starts as NaN (or a sentinel for integers)."""
    d = dt.get(dtype)
    blank = np.full(shape, _fill_value(d, None), dtype=d.np)
    return layout(blank, dtype, "contiguous" if kind == "zero-stride" else kind)


def _fill_value(d: dt.DType, fill: float | None):
    if fill is not None:
        return fill
    if d.category in ("float", "complex") and not d.opaque:
        return np.nan
    if d.category == "bool":
        return True
    return INT_FILL
