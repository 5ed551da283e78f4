"""The CPU reference engine: executes an operator spec on a Call.

Validation runs the spec's checks in order (the first violation decides the status, as phase 1 of
the real two-phase API does). A valid call is computed the way the spec's formula says: every
input element widened exactly to float64, scalars at the value their declared dtype holds, the
formula evaluated in float64, and the result rounded once (round-to-nearest-even) to the output
dtype and written into the output view only.

Complex tensors (COMPLEX64, COMPLEX128) take the numpy evaluator in complex128 and each part is
rounded once to the output's: complex arithmetic as numpy does it ((ac - bd) + (ad + bc)i), not
certified correctly rounded like the real dtypes (a part can lose accuracy to cancellation, and
an overflowing product puts NaN where inf - inf falls).

Evaluation streams: chunk by chunk in the output's C order (conformance/acl/views.py), through the
compiled kernel (kernel.py) or the numpy evaluator, so no full-size float64 temporary exists. As
an oracle (`expect`), nothing is computed up front: the golden is a GoldenStream that the judge
pulls chunk by chunk while it compares, so neither the golden nor the reference's output is ever
materialized.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from ..conformance.acl import dtypes as dt
from ..conformance.acl.call import (
    Call,
    CallError,
    Outcome,
    TensorArg,
    arg_problem,
    contiguous_strides,
)
from ..conformance.acl.views import BLOCK, FlatView, numel, ranges
from ..conformance.run.backend import OracleTimeout
from ..conformance.spec.elements import placed
from ..conformance.spec.expr import ir
from ..conformance.spec.expr.walk import Formula, tensors_read
from ..conformance.spec.interpret import attribute_env, validate, with_defaults
from ..conformance.spec.model import OpSpec
from ..conformance.spec.registry import Registry, UnknownOp, default_registry
from ..conformance.spec.shapes import ShapeError, shape_of
from ..conformance.spec.split import split_call
from . import kernel, precise, rows, settle
from .evaluate_compiled import CompiledEvaluator
from .evaluate_numpy import NumpyEvaluator
from .plan import plan

# Elements evaluated per step: bounds the float64 temporaries on very large tensors.
CHUNK = 1 << 16  # numpy path: float64 temporaries of 512 KiB stay in cache
# compiled path: one pass per chunk, threads split it; each chunk costs about 1 ms of calls
# (settling, the judge's bookkeeping), so chunks are long. A chunk's float64 values (8 MiB, read
# by the judge right after) still come from the last-level cache: at 2^22 they do not, and a
# 849 M element case compared 14 % slower than at 2^20 (at 2^18: 67 % slower)
KERNEL_CHUNK = 1 << 20
_settings = {"chunk": 0}  # 0: the defaults above (tests force a small chunk)


def set_chunk(elements: int) -> int:
    """Force the chunk size (a multiple of flat.BLOCK; 0 restores the defaults); returns the old."""
    old, _settings["chunk"] = _settings["chunk"], int(elements)
    return old


def kernel_name() -> str:
    return kernel.name()


def evaluate(
    call: Call,
    registry: Registry | None = None,
    *,
    exact: bool = False,
    deadline: float | None = None,
    lazy: bool = False,
    in_place: bool = False,
) -> Outcome:
    """Run `call` against its spec; raises CallError for a call that is malformed.

    exact: DOUBLE outputs correctly rounded (mpmath for every element), not faithful.
    deadline: a time.monotonic() value past which OracleTimeout is raised.
    lazy: the oracle's form: a real float output is not computed but returned as a golden
    stream (Outcome.golden), evaluated when the judge reads it.
    in_place: write the outputs into the call's own output storages (a backend's copy) and
    return those, instead of copies."""
    reg = registry or default_registry()
    try:
        spec = reg.get(call.op)
    except UnknownOp as exc:
        raise CallError(str(exc)) from None
    _check_call_shape(spec, call)
    verdict = validate(spec, call)
    names = [p.name for p in spec.outputs if isinstance(call.args.get(p.name), TensorArg)]
    if not verdict.ok_to_compute:
        clause = spec.clause(verdict.check.id) if verdict.check and verdict.status else None
        outputs = {} if lazy else {n: call.tensor(n).storage.copy() for n in names}
        return Outcome(verdict.status, outputs, verdict.message, clause, verdict.empty)
    _check_ruled_shapes(spec, call)
    computed = [s for s in spec.computed if isinstance(call.args.get(s.formula.output), TensorArg)]
    if all(call.tensor(s.formula.output).is_empty for s in computed):
        outputs = {} if lazy else {n: call.tensor(n).storage.copy() for n in names}
        return Outcome(0, outputs, "empty output: nothing computed", nothing_written=True)
    call = with_defaults(spec, call)  # a null that stands for a default: the default's call
    golden: dict[str, Any] = {}
    outputs = {}
    # each output by its own formula (one for most ops); a formula with halves: its views
    outs = [(sub, split_call(sub, call)) for sub in computed]  # (split.py)
    shared = None if lazy else _shared(outs)
    for sub, sub_call in outs:
        name = sub.formula.output
        out_arg = sub_call.tensor(name)
        info = out_arg.dtype_info
        if lazy and info.is_float and not info.opaque and info.category != "complex":
            golden[name] = GoldenStream(sub, sub_call, exact, deadline)
            continue
        outputs[name] = out_arg.storage if in_place else out_arg.storage.copy()
        if out_arg.is_empty:
            continue
        target = FlatView(
            TensorArg(out_arg.dtype, out_arg.shape, out_arg.strides, out_arg.offset, outputs[name]),
            out_arg.shape,
        )
        for start, stop, result, _ in chunks(
            sub, sub_call, exact=exact, deadline=deadline, into=target, values=False, shared=shared
        ):
            if not np.may_share_memory(result, target.storage):
                target.set(start, stop, result)
    if not lazy:  # every output's storage, the unused ones as they were
        for n in names:
            if n not in outputs:
                outputs[n] = call.tensor(n).storage if in_place else call.tensor(n).storage.copy()
    return Outcome(0, outputs, "", golden=golden)


def prepare(call: Call, registry: Registry | None = None, *, exact: bool = False) -> None:
    """Compile (or load from the cache) the kernels evaluating `call` takes, on each output's
    first block and without a deadline: the judge calls it before the case's clock starts when
    the reference is the backend (as it prepares an oracle's golden streams), so that a
    per-case timeout bounds the case's work, not a kernel's first compilation on this machine
    (seconds). A call the checks reject compiles nothing; a malformed one is left to evaluate."""
    try:
        outputs = _computed(call, registry)
        shared = _shared(outputs)  # (the outputs' kernels that read what an earlier one wrote)
        for sub, sub_call in outputs:
            GoldenStream(sub, sub_call, exact, None).prepare(shared)
    except (CallError, ShapeError):
        return  # evaluate says what is wrong with the call


def _computed(call: Call, registry: Registry | None) -> list[tuple[OpSpec, Call]]:
    """Each computed output's (spec, call) of a call the checks accept, defaults filled and
    halves split, its output a non-empty tensor; none for a call the checks reject or that is
    malformed (evaluate says why): what prepare and working_bytes walk."""
    reg = registry or default_registry()
    try:
        spec = reg.get(call.op)
        _check_call_shape(spec, call)
        if not validate(spec, call).ok_to_compute:
            return []
        _check_ruled_shapes(spec, call)
        call = with_defaults(spec, call)
        out = []
        for sub in spec.computed:
            arg = call.args.get(sub.formula.output)
            if isinstance(arg, TensorArg) and not arg.is_empty:
                out.append((sub, split_call(sub, call)))
        return out
    except (CallError, UnknownOp, ShapeError):
        return []


WORK_MIN = 1 << 16  # tensors of fewer elements: no working memory worth a budget's notice


def working_bytes(call: Call, registry: Registry | None = None) -> int:
    """Memory evaluating `call` needs beyond its tensors (rows.working_bytes: the outputs with
    reductions; an elementwise output streams in chunks of fixed size), for the runner's
    budget; 0 for a call the checks reject or that is malformed (evaluate says why)."""
    sizes = [numel(a.shape) for a in call.args.values() if isinstance(a, TensorArg)]
    if max(sizes, default=0) < WORK_MIN:
        return 0  # (a chunk of rows of so few elements needs a few MiB at most)
    try:  # (an elementwise spec streams: nothing to check before its checks run)
        spec = (registry or default_registry()).get(call.op)
    except UnknownOp:
        return 0
    if not any(rows.reductions(sub) for sub in spec.computed):
        return 0
    need = 0
    try:
        for sub, sub_call in _computed(call, registry):
            sub = _decided(sub, attribute_env(sub, sub_call))
            if rows.reductions(sub):
                need = max(need, rows.working_bytes(sub, sub_call))
    except (CallError, ShapeError):
        return 0
    return need


class GoldenStream:
    """The exact values of an output (float64, before the final rounding), chunk by chunk."""

    def __init__(self, spec: OpSpec, call: Call, exact: bool, deadline: float | None):
        self.spec, self.call, self.exact, self.deadline = spec, call, exact, deadline

    def prepare(self, shared: rows.Shared | None = None) -> None:
        """Compile (or load from the cache) the kernels the stream runs, on its first block and
        without a deadline: a judge calls it before its clock starts, which bounds the work of
        the case, not a kernel's first compilation on this machine (seconds). Outputs the
        numpy path evaluates have nothing to compile. shared: the call's outputs' shared row
        reductions (rows.Shared), as evaluate reads and writes them."""
        out = self.call.tensor(self.spec.formula.output)
        if not kernel.wanted(numel(out.shape)):
            return
        for _ in chunks(self.spec, self.call, exact=self.exact, chunk=BLOCK):
            break
        if out.dtype_info.np in (np.float32, np.float64):  # and the kernels writing the output
            blank = np.empty(numel(out.shape), out.dtype_info.np)  # (pages of one block touched)
            into = FlatView(TensorArg(out.dtype, out.shape, contiguous_strides(out.shape), 0, blank), out.shape)  # fmt: skip
            for _ in chunks(self.spec, self.call, exact=self.exact, chunk=BLOCK, into=into, values=False, shared=shared):  # fmt: skip
                break

    def chunks(
        self, chunk: int | None = None, deadline: float | None = None
    ) -> Iterator[tuple[int, int, np.ndarray]]:
        """(start, stop, float64 golden of flat elements [start, stop)) in C order; deadline
        (time.monotonic()) replaces the one the stream was made with."""
        for start, stop, _, y in chunks(
            self.spec, self.call, exact=self.exact, deadline=deadline or self.deadline, chunk=chunk
        ):
            yield start, stop, y


def compute(spec: OpSpec, call: Call, exact: bool = False) -> np.ndarray:
    """The formula's value for a valid call, rounded to the output dtype, in the output's shape."""
    out = call.tensor(spec.formula.output)
    result = np.empty(numel(out.shape), dtype=out.dtype_info.np)
    for start, stop, r, _ in chunks(spec, split_call(spec, call), exact=exact, values=False):
        result[start:stop] = r
    return result.reshape(out.shape)


def chunks(
    spec: OpSpec,
    call: Call,
    *,
    exact: bool = False,
    deadline: float | None = None,
    chunk: int | None = None,
    into: FlatView | None = None,
    values: bool = True,
    shared: rows.Shared | None = None,
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray | None]]:
    """(start, stop, rounded result, float64 value) for each chunk of the output's elements:
    tier 1 (the compiled evaluator where it applies, else numpy) gives the chunk's values and
    flags, the settling pipeline (settle.py) the flagged elements' right values.

    into: the output's view, which the compiled kernel writes directly where it is contiguous
    and FLOAT or DOUBLE (the yielded result is then that slice of its storage).
    values: False when the caller wants the rounded results only; the compiled kernel then
    keeps no float64 copy of the chunk (the float64 value yielded may be None). True: the
    caller wants the values only (the judge's golden stream): a FLOAT, FLOAT16 or BF16 output's
    rounded result yielded is None. shared: the row reductions the call's outputs share
    (rows.Shared: the later outputs read what the first one's kernel computed)."""
    if rows.reductions(spec):
        spec = _decided(spec, attribute_env(spec, call))
    if rows.reductions(spec):  # a formula with reductions: by rows
        check = _deadline_check(deadline)
        yield from rows.chunks(
            spec, call, exact=exact, check=check, chunk=chunk, values=values, into=into,
            shared=shared,
        )  # fmt: skip
        return
    shape = tuple(call.tensor(spec.formula.output).shape)
    total = numel(shape)
    env: dict[str, Any] = attribute_env(spec, call)
    # a channel weight laid along its dim (`along:`); nothing else is placed without rows
    laid = placed(spec, call, env) if any(p.along for p in spec.tensor_inputs) else {}
    flats = {n: FlatView(laid.get(n) or call.tensor(n), shape) for n in tensors_read(spec)}
    route = plan(spec, call, exact)
    out_dtype = route.out_dtype
    numpy = NumpyEvaluator(spec, env, route)
    compiled = CompiledEvaluator.make(spec, env, route, total)
    direct = compiled is not None and any(compiled.writes(into, flats))
    size = chunk or _settings["chunk"] or (KERNEL_CHUNK if compiled else CHUNK)
    check = _deadline_check(deadline)

    def rounded(y: np.ndarray) -> np.ndarray | None:
        # the golden stream reads a float output's values only: rounding them would be waste
        return None if values and route.fmt is not None else dt.round_to(y, out_dtype)

    for start, stop in ranges(total, size):
        n = stop - start
        raw = {name: f.get(start, stop) for name, f in flats.items()}
        c = None
        if compiled is not None:
            target = into.storage[into.offset + start : into.offset + stop] if direct else None  # type: ignore[union-attr]
            c = compiled.chunk(raw, n, target)
            if c is None:
                compiled = None
        if c is None:
            c = numpy.chunk(raw, n)
        if c.faithful:  # a double-double DOUBLE: what it cannot certify, the numpy way
            idx = settle.flagged(c.flags.view(np.uint8))  # type: ignore[union-attr]
            if idx.size:
                c.buf[idx] = settle.faithful_at(spec, env, raw, route.in_dtypes, idx, check)  # type: ignore[index]
            if check is not None:
                check()
            yield start, stop, c.buf, c.buf  # type: ignore[misc]
            continue
        exact_in = None
        if route.wide:  # a 64-bit integer past 2^53: to mpmath from its exact value
            exact_in = {nm: precise.exact_values(a, route.in_dtypes[nm]) for nm, a in raw.items()}
            beyond = precise.beyond_float64(exact_in, n)
            if c.flags is not None and beyond.any():
                c.flags |= beyond & np.isfinite(c.values)  # type: ignore[arg-type]
        if c.flags is not None:
            idx = c.listed if c.listed is not None else np.flatnonzero(c.flags)
            idx = settle.patch(
                spec, env, raw, route.in_dtypes, c.buf, c.flags, out_dtype, check, idx,  # type: ignore[arg-type]
                compiled=c.listed is not None,
            )  # fmt: skip
            if c.target is not None and c.values is not None and idx.size:  # float64's rounding
                c.target[idx] = dt.round_to(c.values[idx], out_dtype)  # type: ignore[index]
        result = c.target if c.target is not None else rounded(c.buf)  # type: ignore[arg-type]
        if out_dtype.category == "int" and route.wide:
            beyond = precise.beyond_float64(exact_in, n)  # type: ignore[arg-type]
            if beyond.any():
                precise.refine_integers(spec, env, result, beyond, exact_in)  # type: ignore[arg-type]
        if check is not None:
            check()
        yield start, stop, result, c.values


_DECIDED: dict[tuple[int, int], tuple[OpSpec, OpSpec]] = {}


def _shared(outputs: list[tuple[OpSpec, Call]]) -> rows.Shared | None:
    """The row reductions two or more of a call's outputs (spec, call) evaluate alike
    (rows.Shared), each output's formula cut to its attributes' branch as chunks() cuts it;
    None for one output."""
    if len(outputs) < 2:
        return None
    try:
        return rows.Shared.among([(_decided(s, attribute_env(s, c)), c) for s, c in outputs])
    except (CallError, ShapeError, ValueError):  # (evaluating the outputs says what is wrong)
        return None


def _decided(spec: OpSpec, env: dict[str, Any]) -> OpSpec:
    """`spec` with its formula cut to the one branch its attributes choose, where the
    conditions up to it read attributes only and that branch (with the lets it needs) has no
    reduction: a loss with reduction 0 is elementwise, not a walk by rows over one row of every
    element. Else `spec` itself. The cut spec is made once per (spec, branch) (kernel caches key
    on its identity)."""
    f = spec.formula
    attrs = {p.name for p in spec.attributes}
    for i, b in enumerate(f.branches):
        if b.when is not None:
            if not b.when.names <= attrs:
                return spec
            if not bool(np.all(b.when.evaluate(env))):
                continue
        names = Formula.of(f).needs([i])
        lets = tuple(x for x in f.lets if x.name in names)
        if any(ir.reductions(e.value.ir) for e in (b, *lets)):
            return spec
        key = (id(spec), i)
        hit = _DECIDED.get(key)
        if hit is None or hit[0] is not spec:
            one = replace(b, when=None)
            cut = replace(f, branches=(one,), lets=lets)
            hit = _DECIDED[key] = (spec, replace(spec, formula=cut, formulas=(cut,)))
        return hit[1]
    return spec


def _deadline_check(deadline: float | None) -> Callable[[], None] | None:
    if deadline is None:
        return None

    def check() -> None:
        if time.monotonic() > deadline:
            raise OracleTimeout("the reference did not finish within --timeout")

    return check


def _check_ruled_shapes(spec: OpSpec, call: Call) -> None:
    """A valid call's outputs have the shapes their rules (`shape:`) give: where no shape_is
    check said so, a call that disagrees (a hand-written case file) is malformed."""
    shapes = {n: tuple(v.shape) for n, v in call.args.items() if isinstance(v, TensorArg)}
    env = attribute_env(spec, call)
    for p in spec.outputs:
        if p.shape is None or p.name not in shapes:
            continue
        try:
            want = shape_of(p.shape, shapes, env)
        except ShapeError as exc:
            raise CallError(f"{p.name}: {exc}") from None
        if shapes[p.name] != want:
            raise CallError(
                f"{p.name} has shape {list(shapes[p.name])} but its shape rule ({p.shape}) "
                f"gives {list(want)}: fix the case's output shape"
            )


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
            if p.by_value:
                raise CallError(f"{p.name} is a {p.kind} passed by value; it cannot be null")
            continue
        if why := arg_problem(p.kind, p.name, v):
            raise CallError(why)
