"""A call's arguments before any data is drawn: a tensor as dtype, shape, layout and value kind,
a scalar as dtype and value; and the two mutations that the spec's check kinds (to violate a
check) and case planning apply to a set of them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from . import dtypes as dt


@dataclass(frozen=True)
class TensorPlan:
    dtype: str
    shape: tuple[int, ...]
    layout: str = "contiguous"
    values: str = "normal"
    format: str = "ND"  # the aclTensor's storage format (same_format's negative cases change it)


@dataclass(frozen=True)
class ScalarPlan:
    dtype: str
    value: Any


@dataclass(frozen=True)
class ListPlan:
    """A tensor list (items: TensorPlans, drawn like tensors) or a scalar list (ScalarPlans)."""

    kind: str  # tensor_list | scalar_list
    items: tuple[Any, ...] = ()


def with_shapes(args: dict[str, Any], shapes: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """`args` with the tensors named in `shapes` reshaped."""
    return {k: replace(v, shape=shapes[k]) if k in shapes else v for k, v in args.items()}


def set_dtype(args: dict[str, Any], names: list[str], dtype: str) -> dict[str, Any]:
    """`args` with the tensors and scalars in `names` given `dtype` (a scalar keeps a value that
    the new dtype can hold)."""
    out = dict(args)
    for n in names:
        a = out[n]
        if hasattr(a, "dtype"):
            value = getattr(a, "value", None)
            out[n] = (
                replace(a, dtype=dtype, value=_scalar_value(dtype, value))
                if value is not None
                else replace(a, dtype=dtype)
            )
    return out


def _scalar_value(dtype: str, value: Any) -> Any:
    cat = dt.get(dtype).category
    if cat == "bool":
        return True
    if cat == "int":
        return 1
    if cat == "complex":
        return complex(0.5, 0.25)
    return 0.5 if value is None else value
