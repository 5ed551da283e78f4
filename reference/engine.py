"""The CPU reference engine: executes an operator spec on a Call.

Validation runs the spec's checks in order (the first violation decides the status, as phase 1 of
the real two-phase API does). A valid call is computed the way the spec's formula says: every
input element widened exactly to float64, scalars at the value their declared dtype holds, the
formula evaluated in float64, and the result rounded once (round-to-nearest-even) to the output
dtype and written into the output view only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance import dtypes as dt
from conformance.call import Call, CallError, Outcome, ScalarArg, TensorArg
from conformance.loader import status_name
from conformance.registry import Registry, UnknownOp, default_registry
from conformance.spec import Check, DtypeTerm, OpSpec

# Elements evaluated per step: bounds the float64 temporaries on very large tensors.
CHUNK = 1 << 20


class Violation(Exception):
    def __init__(self, check: Check, message: str):
        super().__init__(message)
        self.check, self.message = check, message


def evaluate(call: Call, registry: Registry | None = None) -> Outcome:
    """Run `call` against its spec; raises CallError for a call that is malformed."""
    reg = registry or default_registry()
    try:
        spec = reg.get(call.op)
    except UnknownOp as exc:
        raise CallError(str(exc)) from None
    _check_call_shape(spec, call)
    outputs = {p.name: call.tensor(p.name).storage.copy() for p in spec.outputs
               if isinstance(call.args.get(p.name), TensorArg)}  # fmt: skip
    for check in spec.checks:
        try:
            done = _run_check(spec, check, call)
        except Violation as v:
            msg = f"{v.message} [{spec.clause(check.id)}, {status_name(check.status)}]"
            return Outcome(check.status, outputs, msg, spec.clause(check.id))
        if done:
            return Outcome(0, outputs, f"empty tensor: nothing computed [{spec.clause(check.id)}]")
    out_arg = call.tensor(spec.formula.output)
    if out_arg.is_empty:
        return Outcome(0, outputs, "empty output: nothing computed")
    result = compute(spec, call)
    target = TensorArg(out_arg.dtype, out_arg.shape, out_arg.strides, out_arg.offset,
                       outputs[spec.formula.output])  # fmt: skip
    target.write(result)
    return Outcome(0, outputs, "")


def compute(spec: OpSpec, call: Call) -> np.ndarray:
    """The formula's value for a valid call, rounded to the output dtype, in the output's shape."""
    out = call.tensor(spec.formula.output)
    out_dtype = dt.get(out.dtype)
    shape = out.shape
    env: dict[str, Any] = attribute_env(spec, call)
    inputs = {
        p.name: np.broadcast_to(call.tensor(p.name).view(), shape) for p in spec.tensor_inputs
    }
    total = int(np.prod(shape, dtype=np.int64)) if shape else 1
    flat_inputs = {k: v.reshape(-1) if v.flags.c_contiguous else None for k, v in inputs.items()}
    result = np.empty(total, dtype=out_dtype.np)
    for start in range(0, total, CHUNK):
        stop = min(start + CHUNK, total)
        chunk_env = dict(env)
        for name, arr in inputs.items():
            flat = flat_inputs[name]
            if flat is None:
                flat = np.ravel(arr)  # copies a non-contiguous or broadcast view once
                flat_inputs[name] = flat
            chunk_env[name] = flat[start:stop].astype(np.float64)
        result[start:stop] = dt.round_to(evaluate_formula(spec, chunk_env, stop - start), out_dtype)
    return result.reshape(shape)


def evaluate_formula(spec: OpSpec, env: dict[str, Any], n: int) -> np.ndarray:
    """The float64 value of the formula over `n` elements bound in `env` (mutated with lets)."""
    for let in spec.formula.lets:
        env[let.name] = let.value.evaluate(env)
    branches = spec.formula.branches
    result = np.broadcast_to(np.asarray(branches[-1].value.evaluate(env), dtype=np.float64), (n,))
    for br in reversed(branches[:-1]):
        cond = br.when.evaluate(env)  # type: ignore[union-attr]
        if np.ndim(cond) == 0:
            if bool(cond):
                result = np.broadcast_to(np.asarray(br.value.evaluate(env), dtype=np.float64), (n,))
            continue
        if not np.any(cond):
            continue
        result = np.where(cond, br.value.evaluate(env), result)
    return np.asarray(result, dtype=np.float64)


def attribute_env(spec: OpSpec, call: Call) -> dict[str, Any]:
    """Scalars (as float64 of their declared dtype), bools and strings of the call."""
    env: dict[str, Any] = {}
    for p in spec.attributes:
        v = call.args.get(p.name)
        if isinstance(v, ScalarArg):
            env[p.name] = v.as_float64()
        else:
            env[p.name] = v
    return env


def _check_call_shape(spec: OpSpec, call: Call) -> None:
    if call.product not in spec.products:
        raise CallError(
            f"{spec.op} is not documented for product {call.product!r} "
            f"(documented: {', '.join(spec.products)})"
        )
    for name in call.args:
        if name not in spec.param_names:
            raise CallError(f"{spec.op} has no parameter {name!r}")
    for p in spec.params:
        if p.name not in call.args:
            raise CallError(f"{spec.op}: argument {p.name!r} is missing (use null explicitly)")
        v = call.args[p.name]
        if v is None:
            if p.kind == "bool":
                raise CallError(f"{p.name} is a bool passed by value; it cannot be null")
            continue
        want = {"tensor": TensorArg, "scalar": ScalarArg, "bool": bool, "string": str}[p.kind]
        if not isinstance(v, want):
            raise CallError(f"{p.name} must be a {p.kind}, got {type(v).__name__}")
        if isinstance(v, TensorArg):
            v.validate(p.name)
        if isinstance(v, ScalarArg):
            dt.get(v.dtype)


# -- checks ------------------------------------------------------------------------------------


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
