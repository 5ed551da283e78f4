"""A Call is one invocation of an operator as the C API sees it; an Outcome is what came back.

Tensors are (dtype, view shape, strides and offset in elements, storage): exactly the arguments of
aclCreateTensor, with a 1-D host array standing in for device memory. Output tensors are part of
the call, and an Outcome returns each output's whole storage so that writes outside the view show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dtypes as dt

EXACT_OVERLAP_LIMIT = 1 << 22  # elements: an irregular view above it is not enumerated


class CallError(ValueError):
    """A call that cannot be made at all (malformed tensor, wrong argument kind, unknown op)."""


@dataclass
class TensorArg:
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    storage: np.ndarray
    format: str = "ND"

    @classmethod
    def from_array(cls, array: Any, dtype: str) -> TensorArg:
        """A contiguous tensor holding `array` converted (exactly, via round_to) to `dtype`."""
        d = dt.get(dtype)
        a = np.asarray(array)
        data = (
            dt.round_to(a.astype(np.float64), d)
            if d.is_float and a.dtype != d.np
            else a.astype(d.np)
        )
        shape = tuple(int(s) for s in a.shape)
        return cls(
            d.name, shape, contiguous_strides(shape), 0, np.ascontiguousarray(data).reshape(-1)
        )

    @classmethod
    def empty_like_shape(cls, shape: tuple[int, ...], dtype: str, fill: float = 0.0) -> TensorArg:
        d = dt.get(dtype)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        storage = (
            np.full(n, fill, dtype=np.float64).astype(d.np) if not d.opaque else np.zeros(n, d.np)
        )
        return cls(d.name, tuple(shape), contiguous_strides(tuple(shape)), 0, storage)

    @property
    def dtype_info(self) -> dt.DType:
        return dt.get(self.dtype)

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def is_empty(self) -> bool:
        return any(s == 0 for s in self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def is_contiguous(self) -> bool:
        return self.offset == 0 and tuple(self.strides) == contiguous_strides(self.shape)

    def validate(self, name: str) -> None:
        d = dt.get(self.dtype)
        if not isinstance(self.storage, np.ndarray) or self.storage.ndim != 1:
            raise CallError(f"{name}: storage must be a 1-D array")
        if self.storage.dtype != d.np:
            raise CallError(
                f"{name}: storage holds {self.storage.dtype}, dtype {d.name} needs {d.np}"
            )
        if len(self.strides) != len(self.shape):
            raise CallError(f"{name}: {len(self.shape)} dims but {len(self.strides)} strides")
        if any(s < 0 for s in self.shape) or any(s < 0 for s in self.strides) or self.offset < 0:
            raise CallError(f"{name}: shape, strides and offset must be non-negative")
        if self.is_empty:
            return
        last = self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True))
        if last >= self.storage.size:
            raise CallError(
                f"{name}: view reaches element {last} but the storage has {self.storage.size}"
            )

    def overlaps_itself(self) -> bool:
        """Whether two elements of the view share a storage element (a zero stride on a dim of
        more than one element, or strides that interleave). Exact: the strides are checked to
        nest (each dim's stride beyond the span of the smaller ones), and views where they do
        not are checked element by element up to EXACT_OVERLAP_LIMIT elements; above it such
        a view counts as overlapping."""
        dims = sorted((s, n) for n, s in zip(self.shape, self.strides, strict=True) if n > 1)
        if not dims or any(n == 0 for n in self.shape):
            return False
        span = 0
        nested = True
        for s, n in dims:
            if s <= span:
                nested = False
                break
            span += s * (n - 1)
        if nested:
            return False
        if any(s == 0 for s, _ in dims) or self.numel > EXACT_OVERLAP_LIMIT:
            return True
        offsets = np.zeros(1, dtype=np.int64)
        for s, n in dims:
            offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * s).reshape(-1)
        return bool(np.unique(offsets).size != offsets.size)

    def view(self) -> np.ndarray:
        """A read-only numpy view of the tensor's elements (no copy)."""
        return _strided(self.storage, self.shape, self.strides, self.offset, writeable=False)

    def write(self, values: np.ndarray) -> None:
        """Store `values` (already in this dtype) into the view, leaving the rest of storage alone."""
        if self.is_empty:
            return
        target = _strided(self.storage, self.shape, self.strides, self.offset, writeable=True)
        target[...] = values


@dataclass
class ScalarArg:
    dtype: str
    value: Any

    def typed(self) -> Any:
        """The value as the declared dtype holds it: FLOAT 0.01 is float32(0.01)."""
        d = dt.get(self.dtype)
        if d.opaque:  # no numpy type: keep the number as given
            return complex(self.value) if isinstance(self.value, complex) else float(self.value)
        v = np.asarray(self.value)
        if d.is_float:
            return dt.round_to(v.astype(np.float64), d)[()]
        with np.errstate(all="ignore"):
            return v.astype(d.np)[()]

    def as_float64(self) -> Any:
        """The typed value widened for float64 evaluation (complex stays complex)."""
        v = self.typed()
        if np.iscomplexobj(v):
            return complex(v)
        return float(np.float64(v))


MAX_ARRAY_LEN = 1 << 16  # elements of an int/float/bool array or a list: far above any op's need

_ITEM = {"int_array": "int", "float_array": "float", "bool_array": "bool"}


@dataclass(frozen=True)
class ArrayArg:
    """An aclIntArray*, aclFloatArray* or aclBoolArray* (items: Python ints, floats or bools),
    or an aclTensorList* / aclScalarList* (items: TensorArgs / ScalarArgs). The kind travels
    with the values, so an empty list still says what it is."""

    kind: str  # int_array | float_array | bool_array | tensor_list | scalar_list
    items: tuple[Any, ...] = ()

    def validate(self, name: str) -> None:
        """Raise CallError unless every item is of the kind's type (no bool for an int)."""
        if len(self.items) > MAX_ARRAY_LEN:
            raise CallError(f"{name}: {len(self.items)} items; at most {MAX_ARRAY_LEN}")
        for i, v in enumerate(self.items):
            if why := item_problem(self.kind, v):
                raise CallError(f"{name}[{i}]: {why}")
            if isinstance(v, TensorArg):
                v.validate(f"{name}[{i}]")

    def values(self) -> tuple[Any, ...]:
        """What checks and shape rules read: the numbers of an array, the items of a list."""
        return self.items


def item_problem(kind: str, v: Any) -> str | None:
    """Why `v` cannot be an item of an ArrayArg of `kind` (None: it can)."""
    want = _ITEM.get(kind)
    if want == "bool":
        ok = isinstance(v, bool)
    elif want == "int":
        ok = isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63)
    elif want == "float":
        ok = isinstance(v, float | int) and not isinstance(v, bool)
    elif kind == "tensor_list":
        ok = isinstance(v, TensorArg)
    elif kind == "scalar_list":
        ok = isinstance(v, ScalarArg)
    else:
        return f"unknown array kind {kind!r}"
    if ok:
        return None
    what = {"int": "an int64", "float": "a number", "bool": "true or false"}.get(want or "", "")
    return f"must be {what or ('a tensor' if kind == 'tensor_list' else 'a scalar')}, not {v!r}"


def number_problem(kind: str, v: Any) -> str | None:
    """Why `v` cannot be the value of an int (int64_t) or float (double) parameter."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return f"must be {'an integer' if kind == 'int' else 'a number'}, not {v!r}"
    if kind == "int" and not isinstance(v, int):
        return f"must be an integer, not {v!r}"
    if kind == "int" and not -(1 << 63) <= v < (1 << 63):
        return f"{v} is outside int64"
    return None


Arg = TensorArg | ScalarArg | ArrayArg | bool | int | float | str | None


def arg_problem(kind: str, name: str, v: Any) -> str | None:
    """Why `v` cannot be the (non-null) argument of a parameter of `kind` named `name`; None
    when it can. Tensors, scalars and list items are validated as well."""
    if kind in ("int", "float"):
        why = number_problem(kind, v)
        return f"{name} {why}" if why else None
    if kind in _ITEM or kind in ("tensor_list", "scalar_list"):
        if not isinstance(v, ArrayArg) or v.kind != kind:
            return f"{name} must be a {kind}, got {type(v).__name__}"
        try:
            v.validate(name)
        except CallError as exc:
            return str(exc)
        return None
    want = {"tensor": TensorArg, "scalar": ScalarArg, "bool": bool, "string": str}.get(kind)
    if want is None:
        return f"{name}: unknown parameter kind {kind!r}"
    if not isinstance(v, want):
        return f"{name} must be a {kind}, got {type(v).__name__}"
    if isinstance(v, TensorArg):
        try:
            v.validate(name)
        except CallError as exc:
            return str(exc)
    if isinstance(v, ScalarArg):
        try:
            dt.get(v.dtype)
        except dt.DtypeError as exc:
            return f"{name}: {exc}"
    return None


@dataclass
class Call:
    op: str
    product: str
    args: dict[str, Arg]

    def tensor(self, name: str) -> TensorArg:
        a = self.args.get(name)
        if not isinstance(a, TensorArg):
            raise CallError(f"{name} is not a tensor in this call")
        return a


@dataclass
class Outcome:
    status: int
    outputs: dict[str, np.ndarray] = field(default_factory=dict)  # name -> whole storage after
    message: str = ""
    clause: str | None = None  # the rule that decided a non-zero status, when known
    # True when a successful call must leave every output untouched (an empty-tensor rule fired)
    nothing_written: bool = False
    # An oracle may add each output's exact values (float64, in the view's shape) before the
    # final rounding: comparisons then measure errors against them, not the rounded outputs.
    golden: dict[str, np.ndarray] = field(default_factory=dict)
    # True when the backend has no status codes and rejected the call by raising (PyTorch, JAX):
    # `status` is then only "not 0" and `message` is the exception's own text.
    raised: bool = False
    # A backend that times the call on its device adds the Result fields of its timing here
    # (phase1_us, phase2_us, phase2_clock, ...; docs/timings.md): the judge copies them over.
    timings: dict[str, Any] = field(default_factory=dict)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(strides))


def _strided(storage: np.ndarray, shape, strides, offset: int, writeable: bool) -> np.ndarray:
    item = storage.itemsize
    if any(n == 0 for n in shape):
        return np.empty(shape, dtype=storage.dtype)
    base = storage[offset:]
    if base.dtype.kind == "V" or base.dtype.char not in np.typecodes["All"]:
        # ml_dtypes' 8-bit floats do not survive as_strided: stride over same-width integers
        ints = base.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[item])
        view = np.lib.stride_tricks.as_strided(
            ints, shape=tuple(shape), strides=tuple(s * item for s in strides), writeable=writeable
        )
        return view.view(storage.dtype)
    return np.lib.stride_tricks.as_strided(
        base, shape=tuple(shape), strides=tuple(s * item for s in strides), writeable=writeable
    )
