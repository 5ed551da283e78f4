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
from conformance.registry import Registry, UnknownOp, default_registry
from conformance.rules import attribute_env, validate
from conformance.spec import OpSpec
from reference import precise

# Elements evaluated per step: bounds the float64 temporaries on very large tensors.
CHUNK = 1 << 16  # float64 temporaries of 512 KiB: they stay in cache


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
    verdict = validate(spec, call)
    if not verdict.ok_to_compute:
        clause = spec.clause(verdict.check.id) if verdict.check and verdict.status else None
        return Outcome(verdict.status, outputs, verdict.message, clause, verdict.empty)
    out_arg = call.tensor(spec.formula.output)
    if out_arg.is_empty:
        return Outcome(0, outputs, "empty output: nothing computed", nothing_written=True)
    result, golden = compute(spec, call, with_golden=True)
    target = TensorArg(out_arg.dtype, out_arg.shape, out_arg.strides, out_arg.offset,
                       outputs[spec.formula.output])  # fmt: skip
    target.write(result)
    if not out_arg.dtype_info.is_float:  # an integer or bool output is compared as written
        return Outcome(0, outputs, "")
    return Outcome(0, outputs, "", golden={spec.formula.output: golden})


def compute(spec: OpSpec, call: Call, with_golden: bool = False):
    """The formula's value for a valid call, rounded to the output dtype, in the output's shape;
    with_golden: (rounded, the float64 values before the final rounding)."""
    out = call.tensor(spec.formula.output)
    out_dtype = dt.get(out.dtype)
    shape = out.shape
    env: dict[str, Any] = attribute_env(spec, call)
    views = {p.name: np.broadcast_to(call.tensor(p.name).view(), shape) for p in spec.tensor_inputs}
    in_dtypes = {p.name: call.tensor(p.name).dtype for p in spec.tensor_inputs}
    scalar_dtypes = {p.name: call.args[p.name].dtype for p in spec.attributes
                     if isinstance(call.args.get(p.name), ScalarArg)}  # fmt: skip
    refine_all = precise.needs_all(in_dtypes, scalar_dtypes, out_dtype.name)
    refinable = precise.is_float_output(out_dtype.name)
    total = int(np.prod(shape, dtype=np.int64)) if shape else 1
    flat = {k: np.ravel(v) for k, v in views.items()}  # copies only non-contiguous/broadcast views
    result = np.empty(total, dtype=out_dtype.np)
    golden = (
        np.empty(total, dtype=np.float64) if with_golden and not np.iscomplexobj(result) else None
    )
    for start in range(0, total, CHUNK):
        stop = min(start + CHUNK, total)
        chunk_env = dict(env)
        for name, arr in flat.items():
            chunk_env[name] = arr[start:stop].astype(np.float64)
        y = evaluate_formula(spec, chunk_env, stop - start)
        if refinable:
            mask = np.isfinite(y) if refine_all else precise.near_midpoint(y, out_dtype.name)
            if mask.any():
                exact = {
                    n: precise.exact_values(a[start:stop], in_dtypes[n]) for n, a in flat.items()
                }
                y = precise.refine(spec, env, y, mask, exact, out_dtype.name)
        result[start:stop] = dt.round_to(y, out_dtype)
        if out_dtype.category == "int":
            exact = {n: precise.exact_values(a[start:stop], in_dtypes[n]) for n, a in flat.items()}
            wide = precise.beyond_float64(exact, stop - start)
            if wide.any():
                precise.refine_integers(spec, env, result[start:stop], wide, exact)
        if golden is not None:
            golden[start:stop] = y
    if not with_golden:
        return result.reshape(shape)
    return result.reshape(shape), (golden.reshape(shape) if golden is not None else None)


def evaluate_formula(spec: OpSpec, env: dict[str, Any], n: int) -> np.ndarray:
    """The float64 value of the formula over `n` elements bound in `env` (mutated with lets).

    Branches are taken in order, first true wins; a condition that is one value (a bool or a
    string parameter decides it) ends the walk or skips its branch without evaluating it, and a
    let is evaluated only when an expression that is evaluated names it."""
    lets = {x.name: x for x in spec.formula.lets}

    def bind(names: frozenset[str]) -> None:
        for name in names:
            if name in lets and name not in env:
                bind(lets[name].value.names)
                env[name] = lets[name].value.evaluate(env)

    def value(br) -> np.ndarray:
        bind(br.value.names)
        return np.asarray(br.value.evaluate(env), dtype=np.float64)

    pending = []
    base = None
    for br in spec.formula.branches:
        if br.when is None:
            base = value(br)
            break
        bind(br.when.names)
        cond = br.when.evaluate(env)
        if np.ndim(cond) == 0 or np.all(cond):
            if bool(np.all(cond)):
                base = value(br)
                break
            continue
        if np.any(cond):
            pending.append((cond, br))
    result = np.broadcast_to(base, (n,))
    for cond, br in reversed(pending):
        result = np.where(cond, value(br), result)
    return np.asarray(result, dtype=np.float64)


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
