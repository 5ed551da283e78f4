"""Tensor contents for generated cases: a value kind names a distribution (normal, wide, tiny,
large, special, ...) drawn for a dtype, and special points are placed among the drawn values.
Where the values sit in memory is conformance/cases/layouts.py.
"""

from __future__ import annotations

import numpy as np

from ..acl import dtypes as dt

VALUE_KINDS = ("normal", "wide", "tiny", "large", "special")


CHUNKED = 1 << 22  # larger "normal" tensors are drawn this many elements at a time


def draw(kind: str, d: dt.DType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Logical values of `kind` for dtype `d`, already exactly representable in it."""
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if d.opaque:
        return np.zeros(shape, dtype=d.np)
    if d.category == "bool":
        return (rng.random(n) < 0.5).reshape(shape)
    if d.category == "int":
        info = np.iinfo(d.np)
        if kind in ("wide", "large", "special"):
            lo, hi = int(info.min), int(info.max)
            v = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if lo < 0 else np.uint64)
        else:
            lo = max(int(info.min), -6)
            v = rng.integers(lo, 7, size=n)
        return v.astype(d.np).reshape(shape)
    if d.category == "complex":  # each part a value of the part dtype (COMPLEX64: FLOAT)
        part = dt.get("FLOAT" if d.np.itemsize == 8 else "DOUBLE")
        re = draw(kind, part, shape, rng).astype(np.float64)
        im = draw(kind, part, shape, rng).astype(np.float64)
        out = np.empty(shape, dtype=d.np)
        out.real, out.imag = re, im  # no complex product: inf * 1j would put NaN in a part
        return out
    if kind == "normal" and n > CHUNKED:  # large: one chunk of float64 at a time
        out = np.empty(n, dtype=d.np)
        for start in range(0, n, CHUNKED):
            stop = min(start + CHUNKED, n)
            out[start:stop] = dt.round_to(rng.normal(0.0, 2.0, stop - start), d)
        return out.reshape(shape)
    fi = dt.float_format(d.name)
    big, sub = fi.max, fi.smallest_subnormal
    if kind == "normal":
        v = rng.normal(0.0, 2.0, n)
    elif kind == "wide":
        r = min(1.0e4, big / 8)
        v = rng.uniform(-r, r, n)
    elif kind == "tiny":
        v = rng.uniform(-1e-3, 1e-3, n)
        k = rng.integers(1, 9, n) * rng.choice([-1.0, 1.0], n) * sub
        v = np.where(rng.random(n) < 0.5, v, k)
    elif kind == "large":
        v = rng.choice([-1.0, 1.0], n) * rng.uniform(0.25, 1.0, n) * big
    elif kind == "special":
        pool = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, big, -big, sub, -sub, 1.0, -1.0, 0.5])
        v = np.resize(pool, n)
        v = v[rng.permutation(n)]
    else:
        raise ValueError(f"unknown value kind {kind!r}")
    return dt.round_to(v, d).reshape(shape)


def place_point(
    base: np.ndarray, point: float, d: dt.DType, rng: np.random.Generator
) -> np.ndarray:
    """Put `point` (rounded to d) and its two neighbours in d at about half of the positions."""
    flat = base.reshape(-1).copy()
    if flat.size == 0 or d.category not in ("float", "int"):
        return base
    if d.category == "int":
        p = np.array([np.clip(round(point), np.iinfo(d.np).min, np.iinfo(d.np).max)])
        cands = np.array([p[0] - 1, p[0], p[0] + 1]).astype(d.np)
    else:
        p = dt.round_to(np.array([point], dtype=np.float64), d)
        if d.np == np.float64:
            cands = np.array([np.nextafter(p[0], -np.inf), p[0], np.nextafter(p[0], np.inf)])
        else:
            cands = _neighbours(p, d)
    mask = rng.random(flat.size) < 0.5
    mask[0] = True  # the exact point is always present
    choice = np.where(np.arange(flat.size) == 0, 1, rng.integers(0, 3, flat.size))
    flat[mask] = cands[choice[mask]].astype(flat.dtype)
    return flat.reshape(base.shape)


def _neighbours(p: np.ndarray, d: dt.DType) -> np.ndarray:
    """[next below, p, next above] in dtype d (narrow floats: via their bit patterns)."""
    bits_t = {1: np.uint8, 2: np.uint16, 4: np.uint32}[d.np.itemsize]
    x = p.astype(d.np)
    b = x.view(bits_t).astype(np.int64)[0]
    sign = 1 << (8 * d.np.itemsize - 1)
    if b & (sign - 1) == 0:  # +-0: neighbours are the smallest subnormals
        lo, hi = sign | 1, 1
    elif b & sign:
        lo, hi = b + 1, b - 1
    else:
        lo, hi = b - 1, b + 1
    arr = np.array([lo, b, hi], dtype=np.int64).astype(bits_t).view(d.np)
    return arr


IGNORED_SHARE = 0.125  # about this share of an index tensor's positions hold the ignore index


def indices(
    shape: tuple[int, ...],
    size: int,
    ignore: int | None,
    d: dt.DType,
    rng: np.random.Generator,
) -> np.ndarray:
    """Index values (`values: {index_of:}`): uniform in [0, size), and, where the spec has an
    ignore index the dtype can hold, that value at about IGNORED_SHARE of the positions (at
    least one, when there are two or more). With size 0 every position holds the ignore index
    (or 0 without one: out of range, which the ops reject or leave undefined)."""
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if ignore is not None and d.category == "int":  # -100 is no UINT8 value: never drawn there
        info = np.iinfo(d.np)
        ignore = ignore if info.min <= ignore <= info.max else None
    if size <= 0:
        v = np.full(n, 0 if ignore is None else ignore, dtype=np.int64)
    else:
        v = rng.integers(0, size, size=n, dtype=np.int64)
        if ignore is not None and n:
            mask = rng.random(n) < IGNORED_SHARE
            if n >= 2:
                mask[int(rng.integers(0, n))] = True
            v[mask] = ignore
    info = np.iinfo(d.np) if d.category == "int" else None
    if info is not None:
        v = np.clip(v, info.min, info.max)
    return v.astype(d.np).reshape(shape)


def padded(
    shape: tuple[int, ...],
    size: int,
    pad: int,
    dim: int,
    d: dt.DType,
    rng: np.random.Generator,
) -> np.ndarray:
    """Index lists ended by a pad value (`values: {index_of: {..., pad: P}}`), one per row
    along `dim` of `shape` (negative wraps; a 0-d tensor is one row of one): each row holds a
    count, uniform in [0, L], of indices uniform in [0, size) (repeats included), then P, then
    what the lists' readers skip: indices or P, each half the time. With two rows or more one
    row holds no P; with three or more another holds P alone. With size 0 every position holds
    P."""
    rank = len(shape)
    axis = dim % rank if rank else 0
    moved = np.moveaxis(np.empty(shape or (1,)), axis, -1).shape
    n, length = int(np.prod(moved[:-1], dtype=np.int64)), moved[-1]
    v = np.full((n, length), pad, dtype=np.int64)
    if size > 0 and n and length:
        counts = rng.integers(0, length + 1, size=n)
        if n >= 2:
            full, empty = rng.choice(n, size=2, replace=False)
            counts[full] = length
            if n >= 3:
                counts[empty] = -1  # P alone: no index after it either
        drawn = rng.integers(0, size, size=(n, length), dtype=np.int64)
        col = np.arange(length)[None, :]
        after = rng.random((n, length)) < 0.5
        v = np.where(col < counts[:, None], drawn, v)
        v = np.where((col > counts[:, None]) & (counts[:, None] >= 0) & after, drawn, v)
    if d.category == "int":
        info = np.iinfo(d.np)
        v = np.clip(v, info.min, info.max)
    out = np.moveaxis(v.reshape(moved), -1, axis) if rank else v.reshape(())
    return np.ascontiguousarray(out).astype(d.np).reshape(shape)
