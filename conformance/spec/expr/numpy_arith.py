"""The numpy arithmetic of the expression walker (conformance/spec/expr/walk.py): float64 over
arrays (or long double, the formula's result dtype), IEEE semantics from numpy itself (a
division by zero gives inf or NaN, NaN compares false, minimum/maximum propagate NaN)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

from ...compiled.rowsum import row_sum
from .ir import Reduce, names_read, pair_nodes
from .walk import GATHER, OUTER, ROW, Arithmetic, Env, Pairs, require


def _erfinv(x: Any) -> Any:
    """scipy's erfinv, NaN outside [-1, 1] without its per-element domain-error path (which
    costs 2 us an element: a tensor of normal values spent 99 % of its time there), and odd at
    zero as erf is (scipy's gives +0 for -0; torch, JAX and the compiled kernel give -0)."""
    x = np.asarray(x)
    inside = np.abs(x) <= 1
    if inside.all():
        out = special.erfinv(x)
    else:
        out = np.full(x.shape, np.nan, dtype=np.result_type(x, np.float64))
        out[inside] = special.erfinv(x[inside])
    out = np.copysign(out, x, out=out if isinstance(out, np.ndarray) else None)
    return out[()] if np.ndim(out) == 0 else out


class NumpyArithmetic(Arithmetic):
    """numpy's ufuncs; a formula's branch values are returned as `dtype` arrays of n elements."""

    name = "numpy"

    def __init__(self, dtype: Any = np.float64):
        self.dtype = dtype

    def number(self, value: bool | int | float) -> Any:
        return value if isinstance(value, bool) else float(value)

    add = staticmethod(np.add)
    sub = staticmethod(np.subtract)
    mul = staticmethod(np.multiply)
    div = staticmethod(np.true_divide)
    pow = staticmethod(np.power)
    neg = staticmethod(np.negative)
    not_ = staticmethod(np.logical_not)
    and_ = staticmethod(np.logical_and)
    or_ = staticmethod(np.logical_or)
    lt = staticmethod(np.less)
    le = staticmethod(np.less_equal)
    gt = staticmethod(np.greater)
    ge = staticmethod(np.greater_equal)
    eq = staticmethod(np.equal)
    ne = staticmethod(np.not_equal)
    where = staticmethod(np.where)

    @staticmethod
    def choose(cond: Any) -> bool | None:
        """One side for every element where the condition is one value (it reads attributes
        only: a kernel's switch); the other side is not evaluated."""
        return bool(cond) if np.ndim(cond) == 0 else None

    f_exp = staticmethod(np.exp)
    f_expm1 = staticmethod(np.expm1)
    f_log1p = staticmethod(np.log1p)
    f_log = staticmethod(np.log)
    f_erf = staticmethod(special.erf)
    f_erfc = staticmethod(special.erfc)
    f_erfinv = staticmethod(_erfinv)
    f_tanh = staticmethod(np.tanh)
    f_sqrt = staticmethod(np.sqrt)
    f_abs = staticmethod(np.abs)
    f_sign = staticmethod(np.sign)
    f_minimum = staticmethod(np.minimum)
    f_maximum = staticmethod(np.maximum)
    f_conj = staticmethod(np.conj)  # the complex conjugate; the identity on real values

    # reductions: over the last axis of rows (walk.py: Arithmetic.reduce), kept for broadcasting
    def rows_of(self, value: Any, rows: Any) -> Any:
        return np.broadcast_to(value, rows)

    def segments(self, f: Callable[[Any], Any], value: Any, stride: int, size: int) -> Any:
        return uncut(f(cut(value, stride, size)), np.shape(value), stride, size)

    def r_sum(self, x: Any) -> Any:
        if x.dtype == np.float64:
            return row_sum(x)[..., None]  # within an ulp of the exact sum (compiled/rowsum.py)
        if x.dtype == np.longdouble and np.longdouble != np.float64:
            # float64 parts and their remainders, each summed within an ulp, and the float64
            # sum's own rounding error: the long double sum within a few long double ulps
            hi = x.astype(np.float64)
            s = row_sum(hi)[..., None]
            err = row_sum(np.concatenate([hi, -s], axis=-1))[..., None]
            rest = row_sum((x - hi.astype(np.longdouble)).astype(np.float64))[..., None]
            return s.astype(np.longdouble) + (err.astype(np.longdouble) + rest)
        return np.sum(x, axis=-1, keepdims=True, dtype=np.result_type(x, self.dtype))

    def r_mean(self, x: Any) -> Any:
        return self.r_sum(x) / x.shape[-1]

    @staticmethod
    def r_amax(x: Any) -> Any:
        return np.max(x, axis=-1, keepdims=True, initial=-np.inf)

    @staticmethod
    def r_amin(x: Any) -> Any:
        return np.min(x, axis=-1, keepdims=True, initial=np.inf)

    def r_prod(self, x: Any) -> Any:
        return np.prod(x, axis=-1, keepdims=True, dtype=np.result_type(x, self.dtype))

    def r_logsumexp(self, x: Any) -> Any:
        m = self.r_amax(x)
        shift = np.where(np.isfinite(m), m, 0.0)
        return shift + np.log(self.r_sum(np.exp(x - shift)))

    @staticmethod
    def r_any(x: Any) -> Any:
        return np.any(x, axis=-1, keepdims=True)

    @staticmethod
    def r_all(x: Any) -> Any:
        return np.all(x, axis=-1, keepdims=True)

    def r_gather(self, x: Any, index: Any, stride: int = 1, size: int | None = None) -> Any:
        """x's value at position `index` along the gather's dim in each row (walk.py:
        Arithmetic.gather; the dim has `stride` and `size` inside a row, by default the row
        itself); NaN where the index is not an integer in [0, size). An index constant over
        its rows (broadcast along them) gives one value per row, kept for broadcasting."""
        x, index = np.asarray(x), np.asarray(index)
        if np.iscomplexobj(index):
            index = index.real
        length = x.shape[-1] if x.ndim else 1
        whole = size is None or (stride == 1 and size == length)
        if whole and index.ndim and index.shape[-1] > 1 and index.strides[-1] == 0:
            index = index[..., :1]
        size = length if size is None else size
        if length == 0:  # a row of nothing (an empty reduced dim): nothing to pick
            return np.full(
                np.broadcast_shapes(index.shape[:-1] + (1,), x.shape[:-1] + (1,)), np.nan
            )
        valid = (index >= 0) & (index < size) & (np.floor(index) == index)
        at = np.where(valid, index, 0).astype(np.intp)
        if not whole:  # the element of each one's row along dim, at position `index`
            p = np.arange(length, dtype=np.intp)
            at = p + (at - (p // stride) % size) * stride
        picked = np.take_along_axis(np.broadcast_to(x, at.shape[:-1] + x.shape[-1:]), at, axis=-1)
        return np.where(valid, picked, np.array(np.nan, dtype=picked.dtype))

    def r_position(self, rows: tuple[int, ...], stride: int = 1, size: int | None = None) -> Any:
        """Each element's index along the position's dim (walk.py: Arithmetic.position): the
        dim has `stride` and `size` inside a row of `rows[-1]` elements (by default the row
        itself), one row (1, length) that broadcasts over the rows."""
        length = rows[-1]
        p = np.arange(length) // stride % max(length if size is None else size, 1)
        return p.astype(self.dtype).reshape(1, length)

    def r_cumsum(self, x: Any, stride: int = 1, size: int | None = None) -> Any:
        """Each element's prefix sum along the cumsum's dim (walk.py: Arithmetic.cumsum),
        summed in order (np.cumsum): the dim has `stride` and `size` inside a row, by default
        the row itself."""
        x = np.asarray(x, dtype=np.result_type(x, self.dtype))
        if size is None or (stride == 1 and size == x.shape[-1]):
            return np.cumsum(x, axis=-1)
        return uncut_rows(np.cumsum(cut(x, stride, size), axis=-1), x.shape, stride, size)

    def paired(self, node: Reduce, x: Callable[[Env], Any], f: Callable[[Any], Any], env: Env,
               part: Any) -> Any:  # fmt: skip
        return paired_rows(self, node, x, f, env, part)

    @staticmethod
    def each(value: Any, fn: Callable[[Any], Any]) -> Any:
        """`fn` of a value's arrays (the value itself here; a bound's pair: both parts)."""
        return fn(value)

    def pair_reduced(self, f: Callable[[Any], Any], x: Callable[[Env], Any], env: Env,
                     shape: tuple[int, ...]) -> Any:  # fmt: skip
        """One chunk of pair rows (`shape`): `f` of the argument over them, the pair rows'
        axis kept (..., 1)."""
        return f(self.rows_of(x(env), shape))

    @staticmethod
    def r_outer(value: Any, pairs: Pairs) -> Any:
        """outer(x): x's value at each pair row's element (walk.Pairs.take: a column)."""
        return pairs.take(value)

    @staticmethod
    def joined(parts: list[Any], layout: PairLayout) -> Any:
        """The chunks' reductions as one value per element of the rows: (R, L)."""
        return layout.assemble(parts)

    def function(self, fn: str) -> Callable[..., Any]:
        """The ufunc of the language function `fn` (the error-bound tier reuses it)."""
        return getattr(self, "f_" + fn)

    def decide(self, cond: Any) -> bool | None:
        if np.ndim(cond) == 0 or np.all(cond):
            return bool(np.all(cond))
        return None if np.any(cond) else False

    def select(self, cond: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        return np.where(cond, then(), other())

    def nothing(self) -> Any:
        return np.asarray(np.nan, dtype=self.dtype)

    def finish(self, value: Any, n: Any) -> Any:
        """n: the number of elements, or the rows' shape (a formula with reductions)."""
        return np.asarray(np.broadcast_to(value, n if isinstance(n, tuple) else (n,)), self.dtype)

    def result(self, value: Any) -> Any:
        return np.asarray(value, dtype=self.dtype)

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return np.errstate(all="ignore")


PAIR_CHUNK = 1 << 20  # elements of pair rows evaluated at once (a paired reduction)


def paired_rows(
    ar: Any, node: Reduce, x: Callable[[Env], Any], f: Callable[[Any], Any], env: Env, part: Any
) -> Any:
    """An array arithmetic's paired reduction (walk.Arithmetic.paired) over the rows env[ROW]
    ((R, L)): for each element k, the argument over the elements of k's row (of k's segment
    along one dim where `part`, (stride, size), is given), `outer(y)` being y at k, reduced by
    `f` (PairLayout: R L S pair elements in all, PAIR_CHUNK at a time). `ar` lays each value
    out (`each`), reduces a chunk (`pair_reduced`) and joins the chunks (`joined`)."""
    lay = PairLayout(tuple(env[ROW]), part, flat=bool(pair_nodes(node)))
    geometry = env.get(GATHER, {})
    if lay.flat and part is not None:  # the argument's row operations: along the segment
        geometry = dict(geometry)
        for n in pair_nodes(node):
            if n in geometry and tuple(geometry[n]) != tuple(part):
                raise ValueError(
                    f"{node.fn}() pairs the elements of one dim of a row spanning more: "
                    f"{n.fn}() inside it runs along another dim"
                )
            geometry.pop(n, None)  # along the segment: the pair row itself
    segs = {n: ar.each(env[n], lay.segments) for n in names_read(node.x) if n in env}
    pairs = Pairs(env, lambda v: ar.each(v, lay.segments), lambda v: ar.each(v, lay.outer))
    parts = []
    for chunk in lay.chunks():
        penv = dict(env)
        penv[ROW], penv[GATHER], penv[OUTER] = lay.shape, geometry, pairs
        for name, v in segs.items():
            penv[name] = ar.each(v, lay.inner)
        parts.append((chunk, ar.pair_reduced(f, x, penv, lay.shape)))
    return ar.joined(parts, lay)


class PairLayout:
    """Where the pair rows of a paired reduction over rows (R, L) lie, for one chunk at a time
    (`chunks` sets it). The elements are cut into G segments of S (each row whole, G = R and
    S = L, or its segments along one dim of (stride, size)). Blocks (the argument holds no row
    operation or reduction of its own): a chunk is (segments g0:g1, elements k0:k1), the pair
    rows (g1 - g0, k1 - k0, S): a name over the reduced elements is a view (gb, 1, S), an outer
    value (gb, kb, 1), broadcast by the operations, nothing copied. Flat (it does hold one: a
    gather, a cumsum, a nested reduction, whose rows are 2-D): a chunk is a range of pair rows
    p, each (P, S) picked from its row r = p // L at the positions of element k = p % L's
    segment."""

    def __init__(self, rows: tuple[int, ...], part: Any, flat: bool):
        self.rows, self.part, self.flat = rows, part, flat
        n_rows, length = rows
        self.stride, self.size = part if part is not None else (1, length)
        self.count = n_rows * length // self.size if self.size else 0
        self.shape: tuple[int, ...] = ()
        self.at: Any = None
        if flat:
            k = np.arange(length)
            first = k - (k // self.stride) % max(self.size, 1) * self.stride
            self.cols = first[:, None] + np.arange(self.size)[None, :] * self.stride  # (L, S)

    def chunks(self) -> Any:
        """Each chunk's bounds, PAIR_CHUNK pair elements or so (self.at and self.shape set)."""
        size = max(self.size, 1)
        if self.flat:
            total, per = self.rows[0] * self.rows[1], max(1, PAIR_CHUNK // size)
            for p0 in range(0, total, per):
                p = np.arange(p0, min(total, p0 + per))
                self.at, self.shape = (p // self.rows[1], p % self.rows[1]), (p.size, self.size)
                yield p0, p0 + p.size
            return
        kb = min(self.size, max(1, PAIR_CHUNK // size))
        gb = max(1, PAIR_CHUNK // (kb * size))
        for g0 in range(0, self.count, gb):
            g1 = min(self.count, g0 + gb)
            for k0 in range(0, self.size, kb):
                k1 = min(self.size, k0 + kb)
                self.at, self.shape = (g0, g1, k0, k1), (g1 - g0, k1 - k0, self.size)
                yield self.at

    def segments(self, a: Any) -> Any:
        """An array over the rows (broadcasting) as the chunks read it: the rows themselves,
        or (blocks along one dim) cut into segments (G, S); a constant as it is."""
        if np.ndim(a) < 2 or np.shape(a) == (1, 1) or self.flat or self.part is None:
            return a
        return cut(np.broadcast_to(a, self.rows), self.stride, self.size)

    def inner(self, a: Any) -> Any:
        """`segments(a)` over the reduced elements of the chunk's pair rows."""
        if np.ndim(a) < 2 or np.shape(a) == (1, 1):
            return a
        if self.flat:
            r, k = self.at
            return _picked(a, self.rows, r, self.cols[k])
        g0, g1, _, _ = self.at
        return (a if a.shape[0] == 1 else a[g0:g1])[:, None, :]

    def outer(self, a: Any) -> Any:
        """`segments(a)` at the elements the chunk's pair rows are for: a column."""
        if np.ndim(a) < 2 or np.shape(a) == (1, 1):
            return a
        if self.flat:
            r, k = self.at
            return _picked(a, self.rows, r, k[:, None])
        g0, g1, k0, k1 = self.at
        rows = a if a.shape[0] == 1 else a[g0:g1]
        return (rows if rows.shape[1] == 1 else rows[:, k0:k1])[:, :, None]

    def assemble(self, parts: list[tuple[Any, Any]]) -> np.ndarray:
        """The chunks' values ((chunk, array ending in the kept axis of one)) as one value per
        element of the rows, (R, L)."""
        if not parts:
            return np.zeros(self.rows)
        dtype = np.result_type(*(np.asarray(v) for _, v in parts))
        if self.flat:
            flat = np.concatenate([np.asarray(v, dtype).reshape(-1) for _, v in parts])
            return flat.reshape(self.rows)
        out = np.empty((self.count, self.size), dtype)
        for (g0, g1, k0, k1), v in parts:
            out[g0:g1, k0:k1] = np.broadcast_to(v, (g1 - g0, k1 - k0, 1))[..., 0]
        if self.part is None:
            return out
        return uncut_rows(out, self.rows, self.stride, self.size)


def _picked(a: np.ndarray, rows: tuple[int, ...], r: np.ndarray, cols: np.ndarray) -> Any:
    """a over the rows (broadcasting) at row r[p] and positions cols[p, :] for each p."""
    a = np.asarray(a)
    if a.shape[1] == 1:  # one value per row: a column
        return a[r] if a.shape[0] > 1 else a
    return np.broadcast_to(a, rows)[r[:, None], cols]


def cut(rows: np.ndarray, stride: int, size: int) -> np.ndarray:
    """Rows (R, L) as the segments along one dim (`stride`, `size` inside a row): (S, size), the
    segments of each row in the row's order of their first elements (Arithmetic.segments)."""
    r, length = rows.shape
    outer = length // (size * stride) if size * stride else 0
    cuts = rows.reshape(r, outer, size, stride).transpose(0, 1, 3, 2)
    return cuts.reshape(r * outer * stride, size)


def uncut_rows(values: np.ndarray, shape: tuple[int, ...], stride: int, size: int) -> np.ndarray:
    """cut's inverse for one value per element of each segment ((S, size)): rows of `shape`."""
    r, length = shape
    outer = length // (size * stride) if size * stride else 0
    v = np.asarray(values).reshape(r, outer, stride, size).transpose(0, 1, 3, 2)
    return v.reshape(r, length)


def uncut(values: np.ndarray, shape: tuple[int, ...], stride: int, size: int) -> np.ndarray:
    """cut's inverse for one value per segment ((S, 1)): each broadcast back over its segment,
    rows of `shape` (R, L)."""
    r, length = shape
    outer = length // (size * stride) if size * stride else 0
    v = np.asarray(values).reshape(r, outer, stride, 1)
    full = np.broadcast_to(v, (r, outer, stride, size)).transpose(0, 1, 3, 2)
    return full.reshape(r, length)


NUMPY = require(NumpyArithmetic())  # float64
_BY_DTYPE: dict[Any, NumpyArithmetic] = {np.dtype(np.float64): NUMPY}


def numpy_arithmetic(dtype: Any) -> NumpyArithmetic:
    """The numpy arithmetic whose formula results are `dtype` (long double, complex128): one
    per dtype, so that each keeps its staged expressions."""
    key = np.dtype(dtype)
    if key not in _BY_DTYPE:
        _BY_DTYPE[key] = NumpyArithmetic(dtype)
    return _BY_DTYPE[key]
