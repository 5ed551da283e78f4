"""Negative cases: one minimal violation per error clause of a spec.

Each mutation of a valid base call is checked with conformance.rules: it is kept only when the
first rule it breaks is the clause it targets, so its expected status is that clause's status.
A clause no mutation can reach first (shadowed by an earlier rule) gets no negative case, and
`unreachable` says which.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from conformance import dtypes as dt
from conformance.spec import Check, OpSpec

RANK9 = (1, 1, 1, 1, 1, 1, 1, 2, 2)
LIMIT = {"same_dtype": 3, "promotable": 2, "castable": 3, "broadcastable": 2,
         "shape_is_broadcast": 2}  # fmt: skip


def _set_dtype(args: dict[str, Any], names: list[str], dtype: str) -> dict[str, Any]:
    out = dict(args)
    for n in names:
        a = out[n]
        if hasattr(a, "dtype"):
            value = getattr(a, "value", None)
            out[n] = replace(a, dtype=dtype, value=_scalar_value(dtype, value)) if value is not None \
                else replace(a, dtype=dtype)  # fmt: skip
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


def _shape(args: dict[str, Any], shapes: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    return {k: replace(v, shape=shapes[k]) if k in shapes else v for k, v in args.items()}


def _partners(spec: OpSpec, name: str) -> list[str]:
    """Tensors tied to `name` by a same_dtype rule (changing one alone would trip that rule)."""
    out = [name]
    for c in spec.checks:
        if c.kind == "same_dtype" and name in c.params:
            out += [p for p in c.params if p not in out and spec.param(p).is_tensor]
    return out


def _mutations(
    spec: OpSpec, check: Check, base: dict[str, Any], product: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    tensors = [p.name for p in spec.params if p.is_tensor]
    inputs = [p.name for p in spec.tensor_inputs]
    names = dt.tables().names()
    kind = check.kind
    if kind == "not_null":
        for n in check.params:
            yield n, {**base, n: None}
    elif kind == "dtype_in":
        allowed = spec.dtypes_for(check.dtype_set, product) if check.dtype_set else check.dtypes
        for term in check.terms:
            if not term.param:
                continue
            for d in names:
                if d in allowed:
                    continue
                for group in ([term.param], _partners(spec, term.param), inputs + [term.param]):
                    yield f"{term.param}:{d}", _set_dtype(base, group, d)
    elif kind in ("same_dtype", "castable", "promotable"):
        params = [t.param for t in check.terms if t.param]
        if kind == "castable" and check.to is not None and check.to.param:
            params = [check.to.param] + params
        if kind == "promotable" or any(t.promote for t in check.terms):
            params = params + [p for t in check.terms if t.promote for p in t.promote]
            params += list(check.params)
        for n in dict.fromkeys(params):
            for d in names:
                yield f"{n}:{d}", _set_dtype(base, [n], d)
    elif kind == "max_rank":
        for n in check.params:
            yield f"{n}:rank9", _shape(base, {n: RANK9})
            yield f"{n}:rank9-all", _shape(base, dict.fromkeys(tensors, RANK9))
    elif kind == "broadcastable":
        a, b = check.params[:2]
        yield f"{a}:2x3.{b}:4x3", _shape(base, {a: (2, 3), b: (4, 3)})
        yield f"{a}:3.{b}:4", _shape(base, {a: (3,), b: (4,)})
    elif kind == "same_shape":
        for n in check.params:
            yield f"{n}:3x4", _shape(base, {n: (3, 4)})
            yield f"{n}:3x5x1", _shape(base, {n: (3, 5, 1)})
    elif kind == "shape_is_broadcast":
        a, b = check.of[:2]
        for n in check.params:
            yield f"{n}:3x4", _shape(base, {n: (3, 4)})
            yield f"{n}:3x1-of-3x1.1x5", _shape(base, {a: (3, 1), b: (1, 5), n: (3, 1)})
    elif kind == "value":
        for i, ex in enumerate(check.examples):
            args = dict(base)
            for k, v in ex.items():
                p = spec.param(k)
                if p.kind == "scalar" and isinstance(v, dict):  # {dtype: DOUBLE, value: x}
                    args[k] = replace(base[k], dtype=dt.get(v["dtype"]).name, value=v["value"])
                else:
                    args[k] = replace(base[k], value=v) if p.kind == "scalar" else v
            yield f"example{i + 1}", args
    elif kind == "string_in":
        for n in check.params:
            for label, s in [
                ("test", "test"),
                ("upper", "NONE"),
                ("empty", ""),
                ("space", "tanh "),
            ]:
                yield f"{n}:{label}", {**base, n: s}


def negative_plans(spec: OpSpec, product: str, base: dict[str, Any]) -> list:
    from conformance.generate import _mk, _verdict

    plans = []
    for check in spec.checks:
        if check.status == 0:
            continue
        kept: dict[str, Any] = {}
        for detail, args in _mutations(spec, check, base, product):
            if detail in kept:
                continue
            if check.kind in LIMIT and len(kept) >= LIMIT[check.kind]:
                break
            verdict = _verdict(spec, product, args)
            if verdict.check is not None and verdict.check.id == check.id and verdict.status:
                kept[detail] = args
        for detail, args in kept.items():
            tail = f"{check.id}/{detail}"
            plans.append(_mk(spec, product, "negative", args, tail, [check.id], check.status))
    return plans


def unreachable(spec: OpSpec, plans: list) -> list[str]:
    """Error clauses of `spec` that no negative plan reaches first."""
    reached = {c for p in plans if p.kind == "negative" for c in p.clauses}
    return [c.id for c in spec.checks if c.status and c.id not in reached]
