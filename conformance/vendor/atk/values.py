"""Values of ATK cases: the `range_values` forms of the vendor's ATK test files, drawn with numpy.

An ATK input says what its values look like with `range_values`, in one of these forms:

- `[lo, hi]` (two finite numbers): uniform in the closed range (integers for integer dtypes);
- an interval string `"[ lo, hi )"`, `"( lo, hi ]"`, ...: uniform in the range, an end written `(`
  or `)` excluded: after the rounding to the dtype no value equals an open end (a draw that
  rounds onto it is moved to the nearest value of the dtype inside; a closed end, as `[lo, hi]`,
  only rounds); a dtype with no value inside the open ends skips the case;
- a number, `true`/`false`, or `"nan"` / `"inf"` / `"-inf"`: every element is that value;
- `{"name": "nd", "mean": M, "std": S}`: normal; M and S are numbers or `[lo, hi]` ranges, from
  which the tensor's mean and standard deviation are drawn once (uniformly);
- a list of other forms (anything but two finite numbers): a mix, each element takes one of the
  forms at random; every form is present when there are at least as many elements as forms (the
  first elements take them in order); a scalar takes one of them;
- a string other than nan/inf: a string attribute's value;
- `"null"` (alone or in a list): refused. What ATK draws for a null range is defined by its data
  generator, which is not public (no executor of hicann/ops-nn and no code of hicann/ops-test-kit
  says it); the importer skips such a case with that reason (`NULL_RANGE`) rather than guess.

Values are drawn in float64 and rounded once (round to nearest even) to the dtype; integer dtypes
take uniform integers from a range and truncate other draws toward zero, clipped to the dtype's
limits; BOOL is "not zero". A value a dtype cannot hold (NaN or inf for an integer) raises
Unrepresentable: the importer skips that case and says why.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ...acl import dtypes as dt
from ...files import safeio
from ...spec.atk_forms import Form, FormError, leaves, show

CHUNK = 1 << 20  # elements generated and written at a time
INT_FILL = 77  # an integer output's storage starts as this (floats: NaN; BOOL: true)


class Unrepresentable(ValueError):
    """A drawn value the dtype cannot hold (NaN or inf for an integer dtype, ...)."""


def unrepresentable(form: Form, d: dt.DType) -> str:
    """Why a tensor of dtype d cannot take values of `form` ('' when it can)."""
    if d.opaque or d.category not in ("float", "int", "bool", "complex"):
        return f"cannot generate values of dtype {d.name}"
    if d.category != "int":
        return ""
    for f in leaves(form):
        if (
            f.kind == "range"
            and d.category == "float"
            and not d.opaque
            and (f.lo_open or f.hi_open)
        ):
            try:
                range_bounds(f, d)
            except Unrepresentable as exc:
                return str(exc)
        if f.kind == "const" and not isinstance(f.value, bool) and not math.isfinite(f.value):
            return f"{show(f.value)} cannot be stored as {d.name}"
        if f.kind == "range":
            try:
                _int_range(f, d)
            except Unrepresentable as exc:
                return str(exc)
    return ""


# -- numbers in a dtype ------------------------------------------------------------------------
def _number(f: Form) -> float:
    if isinstance(f.value, str):
        raise FormError(f"{f.value!r} is not a number")
    return float(f.value)


def _int_limits(d: dt.DType) -> tuple[int, int]:
    info = np.iinfo(d.np)
    return int(info.min), int(info.max)


def _draw_float64(f: Form, n: int, rng: np.random.Generator, nd: tuple[float, float]) -> np.ndarray:
    if f.kind == "range":
        return rng.uniform(f.lo, f.hi, n) if f.hi > f.lo else np.full(n, f.lo)
    if f.kind == "nd":
        return rng.normal(nd[0], nd[1], n)
    return np.full(n, _number(f))


def _to_dtype(v: np.ndarray, d: dt.DType) -> np.ndarray:
    """float64 draws (not ranges of an integer dtype) into dtype d."""
    if d.category == "bool":
        return v != 0
    if d.category == "int":
        if not np.all(np.isfinite(v)):
            raise Unrepresentable(
                f"{show(float(v[~np.isfinite(v)][0]))} cannot be stored as {d.name}"
            )
        lo, hi = _int_limits(d)
        return np.clip(np.trunc(v), lo, hi).astype(d.np)
    if d.category == "complex":
        return v.astype(d.np)
    if d.opaque or d.category != "float":
        raise Unrepresentable(f"cannot generate values of dtype {d.name}")
    return dt.round_to(v, d)


def _int_range(f: Form, d: dt.DType) -> tuple[int, int]:
    lo = math.floor(f.lo) + 1 if f.lo_open else math.ceil(f.lo)
    hi = math.ceil(f.hi) - 1 if f.hi_open else math.floor(f.hi)
    if d.category == "bool":
        lo, hi = max(lo, 0), min(hi, 1)
    else:
        lim = _int_limits(d)
        lo, hi = max(lo, lim[0]), min(hi, lim[1])
    if lo > hi:
        raise Unrepresentable(f"no {d.name} value in {f.describe()}")
    return lo, hi


def _step(x: np.ndarray, d: dt.DType, up: bool) -> np.ndarray:
    """The neighbour of each finite value x of float dtype d (up: the next larger one), by its
    bits: the same for every IEEE-like format (BF16 and the 8-bit floats included)."""
    bits_t = np.dtype(f"u{d.np.itemsize}")
    b = np.ascontiguousarray(x.astype(d.np)).view(bits_t)
    sign = bits_t.type(1 << (8 * d.np.itemsize - 1))
    one = bits_t.type(1)
    neg = (b & sign) != 0
    zero = (b & ~sign) == 0
    # moving up: a positive value grows, a negative one shrinks toward -0; -0 and +0 go to the
    # smallest positive subnormal (down: mirrored)
    grow = ~neg if up else neg
    with np.errstate(over="ignore"):
        out = np.where(grow, b + one, b - one)
    out = np.where(zero, one if up else sign | one, out).astype(bits_t)
    return out.view(d.np)


def range_bounds(f: Form, d: dt.DType) -> tuple[Any, Any]:
    """The least and the greatest value of float dtype d a draw from range f may take: past an
    open end, the dtype's nearest value inside; a closed end bounds nothing (a draw is rounded to
    the nearest value of the dtype, as a constant is). None for an unbounded side;
    Unrepresentable when the open ends leave no value of the dtype."""
    lo = hi = None
    if f.lo_open:
        r = dt.round_to(np.array([f.lo]), d)
        lo = (_step(r, d, up=True) if r.astype(np.float64)[0] <= f.lo else r)[0]
    if f.hi_open:
        r = dt.round_to(np.array([f.hi]), d)
        hi = (_step(r, d, up=False) if r.astype(np.float64)[0] >= f.hi else r)[0]
    low = float(lo) if lo is not None else float(dt.round_to(np.array([f.lo]), d)[0])
    high = float(hi) if hi is not None else float(dt.round_to(np.array([f.hi]), d)[0])
    if (f.lo_open or f.hi_open) and low > high:
        raise Unrepresentable(f"no {d.name} value in {f.describe()}")
    return lo, hi


def _draw(
    f: Form, d: dt.DType, n: int, rng: np.random.Generator, nd: tuple[float, float]
) -> np.ndarray:
    """n values of the non-mix form f in dtype d."""
    if f.kind == "range" and d.category in ("int", "bool"):
        lo, hi = _int_range(f, d)
        return rng.integers(lo, hi, size=n, endpoint=True).astype(d.np)
    if f.kind == "const" and isinstance(f.value, bool):
        return _to_dtype(np.full(n, float(f.value)), d)
    if f.kind == "range" and d.category == "float" and not d.opaque and (f.lo_open or f.hi_open):
        lo, hi = range_bounds(f, d)
        v = _to_dtype(_draw_float64(f, n, rng, nd), d)
        # rounding to the dtype can land on an open end: the nearest value inside instead
        return _clip_bits(v, lo, hi)
    return _to_dtype(_draw_float64(f, n, rng, nd), d)


def _clip_bits(v: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    """v with every value below lo set to lo and above hi to hi (None: no bound), compared in
    float64 and stored as the bound's own bits (numpy's clip computes badly in BF16)."""
    w = v.astype(np.float64)
    out = v.copy()
    if lo is not None:
        out[w < float(lo)] = lo
    if hi is not None:
        out[w > float(hi)] = hi
    return out


def _nd_params(f: Form, rng: np.random.Generator) -> tuple[float, float]:
    """The mean and std of an nd form (drawn from their ranges once per tensor)."""
    m = f.mean[0] if f.mean[0] == f.mean[1] else float(rng.uniform(*f.mean))
    s = f.std[0] if f.std[0] == f.std[1] else float(rng.uniform(*f.std))
    return m, s


class TensorValues:
    """The elements of one tensor of form `form` and dtype `d`, drawn chunk by chunk from `rng`
    (same seed, same chunks: same values). `drawn` says the nd parameters actually used."""

    def __init__(self, form: Form, d: dt.DType, n: int, rng: np.random.Generator):
        self.form, self.d, self.n, self.rng = form, d, n, rng
        subs = leaves(form)
        self.subs = subs
        self.nd = [_nd_params(s, rng) if s.kind == "nd" else (0.0, 1.0) for s in subs]
        self.drawn = [
            f"normal(mean {m:.6g}, std {s:.6g})"
            for sub, (m, s) in zip(subs, self.nd, strict=True)
            if sub.kind == "nd"
        ]

    def chunks(self, size: int = CHUNK) -> Iterator[np.ndarray]:
        for start in range(0, self.n, size):
            yield self._chunk(start, min(size, self.n - start))

    def _chunk(self, start: int, m: int) -> np.ndarray:
        if len(self.subs) == 1:
            return _draw(self.subs[0], self.d, m, self.rng, self.nd[0])
        k = len(self.subs)
        which = self.rng.integers(0, k, size=m)
        forced = np.arange(start, start + m) < k  # the first k elements take the forms in order
        which[forced] = np.arange(start, start + m)[forced]
        out = np.zeros(m, dtype=self.d.np)
        for j, sub in enumerate(self.subs):
            sel = which == j
            count = int(sel.sum())
            if count:
                out[sel] = _draw(sub, self.d, count, self.rng, self.nd[j])
        return out


def _pick(form: Form, rng: np.random.Generator) -> Form:
    """A scalar's form: one of a mix's forms, chosen at random."""
    subs = leaves(form)
    return subs[int(rng.integers(0, len(subs)))] if len(subs) > 1 else subs[0]


def scalar_value(form: Form, d: dt.DType, rng: np.random.Generator) -> Any:
    """One value of `form` as dtype d holds it (a Python number: float, int, bool or complex)."""
    form = _pick(form, rng)
    v = TensorValues(form, d, 1, rng)._chunk(0, 1)[0]
    if d.category == "bool":
        return bool(v)
    if d.category == "int":
        return int(v)
    if d.category == "complex":
        return complex(v)
    return float(v)


def bool_value(form: Form, rng: np.random.Generator) -> bool:
    """A bool attribute: true/false as given; a number (NaN, inf included) is true unless 0."""
    form = _pick(form, rng)
    if form.kind == "const" and isinstance(form.value, bool):
        return form.value
    if form.kind == "const" and isinstance(form.value, str):
        raise FormError(f"{form.value!r} is not a bool")
    return bool(_draw_float64(form, 1, rng, _nd_params(form, rng))[0] != 0)


def string_value(form: Form, rng: np.random.Generator) -> str:
    form = _pick(form, rng)
    if form.kind != "const" or not isinstance(form.value, str):
        raise FormError(f"a string attribute needs a string, not {form.describe()}")
    return form.value


# -- .npy storages written chunk by chunk ------------------------------------------------------
def storage_dtype(d: dt.DType) -> tuple[np.dtype, str]:
    """The dtype a storage is saved as and its encoding ("bits" where numpy lacks the dtype)."""
    if d.np.kind in "biufc":
        return d.np, "native"
    return np.dtype({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[d.np.itemsize]), "bits"


def write_npy(path: Path, d: dt.DType, n: int, chunks: Iterator[np.ndarray]) -> tuple[str, str]:
    """Write a 1-D storage of n elements of dtype d from `chunks` as .npy, without holding it in
    memory; returns (encoding, sha256 of the file)."""
    saved, encoding = storage_dtype(d)
    head = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(saved), "fortran_order": False, "shape": (n,)}
    np.lib.format.write_array_header_1_0(head, header)
    h = hashlib.sha256(head.getvalue())
    written = 0

    def write(f) -> None:
        nonlocal written
        f.write(head.getvalue())
        for c in chunks:
            raw = np.ascontiguousarray(c.astype(d.np, copy=False).view(saved)).tobytes()
            h.update(raw)
            f.write(raw)
            written += c.size

    safeio.write_file(path, write)  # a planted symlink is replaced, never followed
    if written != n:
        raise ValueError(f"{path}: wrote {written} elements, expected {n}")
    return encoding, h.hexdigest()


def fill_chunks(d: dt.DType, n: int, size: int = CHUNK) -> Iterator[np.ndarray]:
    """An output storage before the call: NaN for floats, INT_FILL for integers, true for BOOL."""
    value: Any = True if d.category == "bool" else INT_FILL
    for start in range(0, n, size):
        m = min(size, n - start)
        if d.category in ("float", "complex"):
            yield dt.round_to(np.full(m, np.nan), d)
        else:
            yield np.full(m, value).astype(d.np)


def read_npy(path: Path, d: dt.DType) -> np.ndarray:
    """A storage written by write_npy, memory-mapped (nothing read until used)."""
    a = np.load(path, mmap_mode="r", allow_pickle=False)
    return a.view(d.np) if a.dtype != d.np else a


class StorageReader:
    """Elements [a, b) of a storage written by write_npy, read from the file with plain reads
    (nothing mapped, so the memory used is the chunk's)."""

    def __init__(self, path: Path, d: dt.DType):
        self.path, self.d = path, d
        with open(path, "rb") as f:
            major, _ = np.lib.format.read_magic(f)
            read = (
                np.lib.format.read_array_header_1_0
                if major == 1
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read(f)
            self.offset, self.saved, self.size = f.tell(), np.dtype(dtype), int(shape[0])

    def get(self, a: int, b: int) -> np.ndarray:
        with open(self.path, "rb") as f:
            f.seek(self.offset + a * self.saved.itemsize)
            raw = np.fromfile(f, dtype=self.saved, count=b - a)
        return raw.view(self.d.np) if raw.dtype != self.d.np else raw
