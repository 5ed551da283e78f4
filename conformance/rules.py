"""The spec's validation rules, interpreted: what phase 1 of an aclnn call checks, in order.

Shared by the reference engine (which returns the status) and the case generator (which uses it
to prove that a negative case violates exactly the clause it targets, first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance import dtypes as dt
from conformance.call import Call, CallError, ScalarArg
from conformance.loader import status_name
from conformance.spec import Check, DtypeTerm, OpSpec


class Violation(Exception):
    def __init__(self, check: Check, message: str):
        super().__init__(message)
        self.check, self.message = check, message


@dataclass(frozen=True)
class Verdict:
    """What validation decided: a status, the deciding clause (if any), and whether it was empty."""

    status: int
    check: Check | None = None
    message: str = ""
    empty: bool = False

    @property
    def ok_to_compute(self) -> bool:
        return self.status == 0 and not self.empty


def validate(spec: OpSpec, call: Call) -> Verdict:
    """Run the spec's checks in order; the first violation wins, an empty_success rule ends early."""
    for check in spec.checks:
        try:
            done = _run_check(spec, check, call)
        except Violation as v:
            msg = f"{v.message} [{spec.clause(check.id)}, {status_name(check.status)}]"
            return Verdict(check.status, check, msg)
        if done:
            return Verdict(
                0, check, f"empty tensor: nothing computed [{spec.clause(check.id)}]", True
            )
    return Verdict(0)


def attribute_env(spec: OpSpec, call: Call) -> dict[str, Any]:
    """Scalars (as float64 of their declared dtype), bools and strings of the call."""
    env: dict[str, Any] = {}
    for p in spec.attributes:
        v = call.args.get(p.name)
        env[p.name] = v.as_float64() if isinstance(v, ScalarArg) else v
    return env


# -- the check kinds ------------------------------------------------------------------------------------


def _arg(call: Call, check: Check, name: str) -> Any:
    v = call.args[name]
    if v is None:
        raise CallError(f"{name} is null but the spec checks it in {check.id} before any null rule")
    return v


def _dtype_of(call: Call, check: Check, term: DtypeTerm) -> str | None:
    if term.dtype:
        return term.dtype
    if term.param:
        return _arg(call, check, term.param).dtype
    a, b = (_arg(call, check, n).dtype for n in term.promote)  # type: ignore[union-attr]
    return dt.tables().promote(a, b)


def _allowed(spec: OpSpec, check: Check, product: str) -> tuple[str, ...]:
    if check.dtype_set:
        return spec.dtypes_for(check.dtype_set, product)
    return check.dtypes


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    try:
        return tuple(int(n) for n in np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def _run_check(spec: OpSpec, check: Check, call: Call) -> bool:
    """Raise Violation if `check` fails; return True if it ends the call successfully (empty)."""
    kind = check.kind
    if kind == "not_null":
        for name in check.params:
            if call.args[name] is None:
                raise Violation(check, f"{name} is null")
    elif kind == "dtype_in":
        allowed = _allowed(spec, check, call.product)
        for term in check.terms:
            d = _dtype_of(call, check, term)
            if d not in allowed:
                raise Violation(check, f"{term} dtype {d or 'UNDEFINED'} is not one of "
                                       f"{{{', '.join(allowed)}}} on {call.product}")  # fmt: skip
    elif kind == "same_dtype":
        got = [(str(t), _dtype_of(call, check, t)) for t in check.terms]
        if len({d for _, d in got}) != 1 or got[0][1] is None:
            raise Violation(check, "dtypes differ: " + ", ".join(f"{n}={d}" for n, d in got))
    elif kind == "promotable":
        a, b = (_arg(call, check, n).dtype for n in check.params[:2])
        if dt.tables().promote(a, b) is None:
            raise Violation(check, f"no promotion between {a} and {b}")
    elif kind == "castable":
        dst = _dtype_of(call, check, check.to)  # type: ignore[arg-type]
        for term in check.terms:
            src = _dtype_of(call, check, term)
            if src is None or dst is None or not dt.tables().can_cast(src, dst):
                raise Violation(check, f"{term} ({src or 'no promotion'}) cannot be cast to "
                                       f"{check.to} ({dst or 'no promotion'})")  # fmt: skip
    elif kind == "max_rank":
        for name in check.params:
            t = _arg(call, check, name)
            if t.rank > check.max:  # type: ignore[operator]
                raise Violation(check, f"{name} has {t.rank} dims, at most {check.max} allowed")
    elif kind == "broadcastable":
        shapes = [_arg(call, check, n).shape for n in check.params]
        if _broadcast(shapes) is None:
            raise Violation(check, "shapes do not broadcast: " + " vs ".join(map(str, shapes)))
    elif kind == "same_shape":
        shapes = [_arg(call, check, n).shape for n in check.params]
        if len(set(shapes)) != 1:
            raise Violation(check, "shapes differ: " + ", ".join(
                f"{n}={list(s)}" for n, s in zip(check.params, shapes, strict=True)))  # fmt: skip
    elif kind == "shape_is_broadcast":
        want = _broadcast([_arg(call, check, n).shape for n in check.of])
        for name in check.params:
            got = _arg(call, check, name).shape
            if want is None or got != want:
                raise Violation(check, f"{name} shape {list(got)} != broadcast shape "
                                       f"{list(want) if want is not None else 'none'}")  # fmt: skip
    elif kind == "value":
        env = attribute_env(spec, call)
        if any(env.get(n) is None for n in check.violated_if.names):  # type: ignore[union-attr]
            raise CallError(f"{check.id}: a parameter it reads is null")
        if bool(np.all(check.violated_if.evaluate(env))):  # type: ignore[union-attr]
            shown = ", ".join(f"{n}={env[n]!r}" for n in sorted(check.violated_if.names))  # type: ignore[union-attr]
            raise Violation(check, f"{check.violated_if.source} holds ({shown})")  # type: ignore[union-attr]
    elif kind == "string_in":
        for name in check.params:
            v = call.args[name]
            if v not in check.values:
                raise Violation(check, f"{name} = {v!r} is not one of {list(check.values)}")
    elif kind == "empty_success":
        return any(_arg(call, check, n).is_empty for n in check.params)
    return False


def formula_env(spec: OpSpec, call: Call) -> dict[str, Any]:
    """Attributes plus every input tensor as float64, broadcast to the output view's shape."""
    env = attribute_env(spec, call)
    shape = call.tensor(spec.formula.output).shape
    for p in spec.tensor_inputs:
        view = call.tensor(p.name).view()
        with np.errstate(all="ignore"):
            env[p.name] = np.broadcast_to(view, shape).astype(np.float64).reshape(-1)
    for let in spec.formula.lets:
        env[let.name] = let.value.evaluate(env)
    return env


def branch_hits(spec: OpSpec, call: Call) -> list[str]:
    """Ids of the formula branches that at least one output element of a valid call takes."""
    env = formula_env(spec, call)
    n = int(np.prod(call.tensor(spec.formula.output).shape, dtype=np.int64))
    taken = np.zeros(n, dtype=bool)
    hits = []
    for br in spec.formula.branches:
        cond = np.ones(n, bool) if br.when is None else np.broadcast_to(br.when.evaluate(env), (n,))
        mine = cond & ~taken
        if mine.any():
            hits.append(br.id)
        taken |= cond
    return hits


def lets_used(spec: OpSpec, hits: list[str]) -> list[str]:
    """Ids of the `let`s the evaluation of the taken branches `hits` reads: the names of their
    conditions and values and of every condition tested before the last of them, closed over
    lets that use other lets. A let no taken branch needs is not credited as exercised."""
    names: set[str] = set()
    last = max((i for i, b in enumerate(spec.formula.branches) if b.id in hits), default=-1)
    for br in spec.formula.branches[: last + 1]:
        if br.when is not None:
            names |= br.when.names
        if br.id in hits:
            names |= br.value.names
    by_name = {x.name: x for x in spec.formula.lets}
    todo = [n for n in names if n in by_name]
    while todo:
        for n in by_name[todo.pop()].value.names:
            if n in by_name and n not in names:
                names.add(n)
                todo.append(n)
    return [x.id for x in spec.formula.lets if x.name in names]
