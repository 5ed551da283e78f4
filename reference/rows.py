"""A formula with reductions (`sum(x, dim)`, ...), evaluated by rows.

The reduced dims are moved last: the output's elements are grouped into rows, one per index of
the kept dims, each of L elements (the product of the reduced sizes). A chunk is a run of whole
blocks of the output in C order (a block: every element from the first reduced dim on, for one
index of the dims before it), so that what is yielded is a contiguous range of the output as
engine.chunks yields it; inside the chunk the block is transposed to (rows, L). Tier 1 is the
walk over those rows in float64 with a running error bound (errbound.py; each reduction of
float64 values within an ulp of the exact one, conformance/compiled/rowsum.py; the elementwise
part on top, its reductions broadcast back): an element is flagged near a rounding midpoint of
a FLOAT, FLOAT16 or BF16 output (precise.near_midpoint, as elementwise formulas), or where its
error bound reaches another output value (a log(sum) next to 1: float64's sum is 1, the exact
one 1 + 1e-33), or, for DOUBLE, where the bound shows too much amplification for long double
(AMPLIFICATION). A flagged element is evaluated again in mpmath over its whole row (the
reductions exact sums rounded at the working precision, each reduction once per row), at 128
bits, doubling until two evaluations round alike.

Compiled (`Compiled`, rowgen.py): for FLOAT, FLOAT16 and BF16 outputs where the one switch wants
the compiled path, tier 1 is one generated numba kernel per block of rows (float64, each value
with its error bound), and the rows of what it flags are evaluated again in double-double
before mpmath; after numpy's tier 1 (smaller outputs, DOUBLE) the double-double rows settle the
flagged elements where their mpmath rows would be costly (PAIRS_MIN).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np

from ..conformance.acl import dtypes as dt
from ..conformance.acl.call import Call, CallError
from ..conformance.acl.views import FlatView, numel
from ..conformance.compiled import mode as compiled_mode
from ..conformance.spec.expr import ir
from ..conformance.spec.expr.mpeval import mp_arithmetic
from ..conformance.spec.expr.numpy_arith import numpy_arithmetic
from ..conformance.spec.expr.walk import ROW, Formula, Row
from ..conformance.spec.interpret import attribute_env
from ..conformance.spec.model import OpSpec
from . import codegen, errbound, precise, settle
from .plan import Plan, plan

CHUNK = 1 << 16  # elements of a chunk at least (whole blocks; one block may be larger)
# a DOUBLE element's long double value is trusted where float64's error bound is below this many
# float64 ulps: long double's own error is then under 2^-64 times as much, within half an ulp
AMPLIFICATION = 2.0**10
LONG = numpy_arithmetic(np.longdouble)
COMPLEX = numpy_arithmetic(np.complex128)


def reductions(spec: OpSpec) -> list[ir.Reduce]:
    """The reductions of spec's formula (empty: an elementwise formula)."""
    return [r for e in Formula.of(spec.formula).expressions() for r in ir.reductions(e.ir)]


def reduced_dims(node: ir.Reduce, env: dict[str, Any], rank: int) -> tuple[int, ...]:
    """The dims `node` reduces for a call (its attribute env) on an output of `rank`: sorted,
    negative ones wrapped; a rank-0 tensor reduces its one element over dim 0 or -1. Raises
    CallError for a dim out of range or named twice."""
    if node.param is not None:
        v = env.get(node.param)
        dims = tuple(int(d) for d in (v if isinstance(v, list | tuple) else [v]))
    elif node.dims is not None:
        dims = node.dims
    else:
        return tuple(range(rank))
    top = max(rank, 1)
    out = []
    for d in dims:
        if not -top <= d < top:
            raise CallError(f"{node.fn}(): dim {d} is out of range for rank {rank}")
        out.append(d % top)
    if len(set(out)) != len(out):
        raise CallError(f"{node.fn}(): dim {out} names a dim twice")
    return tuple(sorted(d for d in out if d < rank))


@dataclass(frozen=True)
class Layout:
    """Where the rows are in the output: `outer` blocks of shape `block` (C order), each
    transposed by `perm` into rows of `length` elements."""

    shape: tuple[int, ...]
    outer: int
    block: tuple[int, ...]
    perm: tuple[int, ...]  # of (block index,) + block axes: kept axes first, reduced last
    length: int

    @property
    def block_size(self) -> int:
        return numel(self.block)

    def to_rows(self, flat: np.ndarray, blocks: int) -> np.ndarray:
        """A chunk of `blocks` whole blocks, flat in C order, as (rows, length)."""
        return flat.reshape((blocks,) + self.block).transpose(self.perm).reshape(-1, self.length)

    def from_rows(self, rows: np.ndarray, blocks: int) -> np.ndarray:
        """The inverse of to_rows: (rows, length) back to a flat C-order chunk."""
        moved = tuple(((blocks,) + self.block)[p] for p in self.perm)
        back = np.argsort(self.perm)
        return np.ascontiguousarray(rows.reshape(moved).transpose(back)).reshape(-1)


def layout(spec: OpSpec, env: dict[str, Any], shape: tuple[int, ...]) -> Layout:
    """The rows of a call's output; CallError where its reductions reduce different dims."""
    rank = len(shape)
    found = {reduced_dims(r, env, rank) for r in reductions(spec)}
    if len(found) != 1:
        raise CallError(
            f"{spec.name}: the formula's reductions reduce different dims {sorted(found)} "
            "(one set of dims per formula)"
        )
    (dims,) = found
    if not dims:  # a rank-0 output: one row of its one element
        return Layout(shape, numel(shape), (), (0,), 1)
    k = dims[0]
    block = shape[k:]
    kept = [1 + i for i in range(len(block)) if k + i not in dims]
    red = [1 + d - k for d in dims]
    return Layout(shape, numel(shape[:k]), block, (0, *kept, *red), numel([shape[d] for d in dims]))


def chunks(
    spec: OpSpec,
    call: Call,
    *,
    exact: bool = False,
    check: Callable[[], None] | None = None,
    chunk: int | None = None,
    values: bool = True,
) -> Iterator[tuple[int, int, np.ndarray | None, np.ndarray]]:
    """engine.chunks for a formula with reductions: (start, stop, rounded result, float64
    values) per run of whole blocks of the output (see the module docstring)."""
    shape = tuple(call.tensor(spec.formula.output).shape)
    env: dict[str, Any] = attribute_env(spec, call)
    lay = layout(spec, env, shape)
    route = plan(spec, call, exact)
    out_dtype = route.out_dtype
    flats = {p.name: FlatView(call.tensor(p.name), shape) for p in spec.tensor_inputs}
    size = max(1, lay.block_size)
    fast = Compiled.make(spec, env, route, numel(shape), lay.length)
    per = max(1, (chunk or (COMPILED_CHUNK if fast else CHUNK)) // size)
    pairs = None  # the double-double rows after numpy's tier 1, made when first wanted
    for o0 in range(0, lay.outer, per):
        o1 = min(lay.outer, o0 + per)
        start, stop = o0 * size, o1 * size
        raw = {nm: lay.to_rows(f.get(start, stop), o1 - o0) for nm, f in flats.items()}
        rows_shape = (numel(((o1 - o0),) + lay.block) // max(lay.length, 1), lay.length)
        got = fast.tier1(raw, rows_shape) if fast is not None else None
        if got is None:
            fast = None
            y, mask = tier1(spec, env, raw, rows_shape, route)
            flagged = np.flatnonzero(mask.reshape(-1))
            if flagged.size and pairs_wanted(route, flagged, lay.length):
                pairs = pairs or Compiled.make_pairs(spec, env, route)
                if pairs is not None:
                    flagged = pairs.settle(raw, y, flagged)
        else:
            y, flags, bad = got
            if bad.size:  # rows with an infinity or NaN in a reduction: numpy's IEEE values
                y[bad], again = tier1(
                    spec, env, {nm: a[bad] for nm, a in raw.items()}, (bad.size, lay.length), route
                )
                flags[bad] = again
            flagged = fast.settle(raw, y, settle.flagged(flags.reshape(-1)))
        if flagged.size:
            refine(spec, env, y, flagged, raw, route.in_dtypes, out_dtype.name, check)
        flat = lay.from_rows(y, o1 - o0)
        result = None if values and route.fmt is not None else dt.round_to(flat, out_dtype)
        if check is not None:
            check()
        yield start, stop, result, flat  # type: ignore[misc]


COMPILED_CHUNK = 1 << 20  # elements of a chunk at least, on the compiled path
# mpmath element evaluations (flagged rows times their length) from which the double-double
# rows are worth compiling after numpy's tier 1 (mpmath: about 30 us an element, twice)
PAIRS_MIN = 1 << 14


def pairs_wanted(route: Plan, flagged: np.ndarray, length: int) -> bool:
    """Whether numpy's flagged elements go through the double-double rows before mpmath: where
    the one switch allows numba and their rows would cost mpmath PAIRS_MIN evaluations (every
    time where the switch says numba)."""
    if route.refine_all or route.complex_out or route.wide or not (route.fmt or route.faithful):
        return False
    m = compiled_mode.mode()
    if m == "numpy" or compiled_mode.numba_version() is None:
        return False
    return m == "numba" or np.unique(flagged // length).size * length >= PAIRS_MIN


@dataclass
class Compiled:
    """The compiled row tiers of one call (rowgen.py): tier 1 in float64 with its bound, and
    the double-double rows that settle what tier 1 flags; what the pair cannot decide stays
    flagged for mpmath. FLOAT, FLOAT16 and BF16 outputs, where the one switch of
    conformance/compiled/mode.py wants the compiled path."""

    spec: OpSpec
    env: dict[str, Any]
    route: Plan
    f64: Any
    dd: Any

    @classmethod
    def make(
        cls, spec: OpSpec, env: dict[str, Any], route: Plan, total: int, length: int
    ) -> Compiled | None:
        if route.fmt is None or route.refine_all or route.complex_out or route.wide:
            return None
        if length == 0 or not compiled_mode.wanted(total):
            return None
        from . import kernel, rowgen  # numba is imported only where the compiled path runs

        half = frozenset(n for n, d in route.in_dtypes.items() if d == "FLOAT16")
        try:
            f64 = kernel._compiled(rowgen.generate(spec, env, False, half))
        except codegen.Unsupported:
            return None
        if f64 is None:
            return None
        try:
            dd = kernel._compiled(rowgen.generate(spec, env, True))
        except codegen.Unsupported:
            dd = None
        return cls(spec, env, route, f64, dd)

    @classmethod
    def make_pairs(cls, spec: OpSpec, env: dict[str, Any], route: Plan) -> Compiled | None:
        """The double-double rows alone (after numpy's tier 1), or None where the formula has
        no double-double form."""
        from . import kernel, rowgen

        try:
            dd = kernel._compiled(rowgen.generate(spec, env, True))
        except codegen.Unsupported:
            return None
        return None if dd is None else cls(spec, env, route, None, dd)

    def _format(self) -> tuple[int, int, int]:
        """(bits dropped, guard, biased emin) of the output; (0, 0, 0) for DOUBLE (faithful)."""
        fmt = self.route.fmt
        if fmt is None:
            return 0, 0, 0
        drop = 53 - fmt.p  # type: ignore[union-attr]
        return drop, int(precise.GUARD * 2**drop), fmt.emin + 1023  # type: ignore[union-attr]

    def tier1(
        self, raw: dict[str, np.ndarray], shape: tuple[int, int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(values, flags (uint8, nonzero: not decided), rows for numpy) of a chunk of rows, or
        None where numba cannot type the arguments (numpy from then on)."""
        y = np.empty(shape)
        flags = np.empty(shape, np.uint8)
        bad = np.empty(shape[0], np.bool_)
        drop, guard, emin = self._format()
        try:
            self.f64.fn(*self.f64._args(raw, self.env), y, flags, bad, drop, guard, emin)
        except Exception as exc:  # numba cannot type these arguments
            self.f64.fail(exc)
            return None
        return y, flags, np.flatnonzero(bad)

    def settle(self, raw: dict[str, np.ndarray], y: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """The rows of the flagged elements `idx` (flat) again in double-double: where the
        pair decides, y takes it (rounded to odd). Returns the elements still undecided."""
        if self.dd is None or idx.size == 0:
            return idx
        length = y.shape[1]
        rows, first = np.unique(idx // length, return_inverse=True)
        drop, guard, emin = self._format()
        left = []
        for i in range(0, rows.size, DD_ROWS):
            at = rows[i : i + DD_ROWS]
            mine = idx[(first >= i) & (first < i + DD_ROWS)]
            r, c = first[(first >= i) & (first < i + DD_ROWS)] - i, mine % length
            sub = {nm: np.ascontiguousarray(a[at]).astype(np.float64) for nm, a in raw.items()}
            yd = np.empty((at.size, length))
            undecided = np.zeros((at.size, length), np.uint8)
            undecided[r, c] = 1  # in: the elements asked for
            bad = np.empty(at.size, np.bool_)
            try:
                self.dd.fn(*self.dd._args(sub, self.env), yd, undecided, bad, drop, guard, emin)
            except Exception as exc:  # numba cannot type these arguments: mpmath settles
                self.dd.fail(exc)
                self.dd = None
                return idx
            ok = (undecided[r, c] == 0) & ~bad[r]
            y.reshape(-1)[mine[ok]] = yd[r[ok], c[ok]]
            left.append(mine[~ok])
        return np.sort(np.concatenate(left))


DD_ROWS = 64  # rows of one double-double call (its buffers: this many rows of float64)


def tier1(
    spec: OpSpec,
    env: dict[str, Any],
    raw: dict[str, np.ndarray],
    shape: tuple[int, int],
    route: Plan,
) -> tuple[np.ndarray, np.ndarray]:
    """(values, flags) of a chunk of rows: the formula walked in float64 with a running error
    bound (errbound.py), each reduction's value within an ulp of the exact one and its bound
    carried. Flagged: a FLOAT, FLOAT16 or BF16 element near a rounding midpoint or whose bound
    (SAFETY times) reaches another output value; a DOUBLE element the bound does not keep
    within 1 ulp (every finite one with --exact); any element a comparison left undecided."""
    chunk_env = dict(env)
    chunk_env[ROW] = shape
    with np.errstate(all="ignore"):
        if route.complex_out:  # complex128, numpy's arithmetic, nothing settled (as elementwise)
            for nm, arr in raw.items():
                chunk_env[nm] = arr.astype(np.complex128)
            y = Formula.of(spec.formula).evaluate(chunk_env, COMPLEX, shape)
            return np.array(np.broadcast_to(y, shape)), np.zeros(shape, bool)
        for nm, arr in raw.items():
            chunk_env[nm] = arr.astype(np.float64)
        y, err, undecided = errbound.bounded(spec, chunk_env, shape)
        y = np.array(np.broadcast_to(y, shape), dtype=np.float64)
        err = np.broadcast_to(err, shape)
        finite = np.isfinite(y)
        name = route.out_dtype.name
        if route.refine_all:
            mask = finite.copy()
        elif route.fmt is not None:
            reach = errbound.SAFETY * err
            lo = dt.round_to(y - reach, route.out_dtype).astype(np.float64)
            hi = dt.round_to(y + reach, route.out_dtype).astype(np.float64)
            differ = (lo != hi) | (np.signbit(lo) != np.signbit(hi))  # -0 and +0 too
            mask = finite & (differ | precise.near_midpoint(y, name))
        elif name == "DOUBLE":
            # long double (11 more bits), trusted where float64's bound shows at most
            # AMPLIFICATION-fold amplification of rounding errors (else mpmath)
            ld = {k: v.astype(np.longdouble) if isinstance(v, np.ndarray) else v
                  for k, v in chunk_env.items()}  # fmt: skip
            ld.update({k: np.longdouble(v) for k, v in env.items() if isinstance(v, float)})
            ld[ROW] = shape
            y = np.array(
                np.broadcast_to(Formula.of(spec.formula).evaluate(ld, LONG, shape), shape),
                dtype=np.float64,
            )
            finite = np.isfinite(y)
            mask = finite & ~(err * errbound.SAFETY < AMPLIFICATION * errbound.U * np.abs(y))
        else:
            mask = np.zeros(shape, bool)
        mask |= np.broadcast_to(undecided, shape) & finite
    return y, mask


def refine(
    spec: OpSpec,
    env: dict[str, Any],
    y: np.ndarray,
    flagged: np.ndarray,
    raw: dict[str, np.ndarray],
    in_dtypes: dict[str, str],
    out_dtype: str,
    check: Callable[[], None] | None = None,
) -> None:
    """y (rows, length; float64 values) with the `flagged` elements (flat indices) evaluated
    again in mpmath over their rows: nearest float64 for DOUBLE, else rounded to odd for the
    final rounding. A row with a non-finite input keeps float64's IEEE values."""
    length = y.shape[1]
    attrs = {p.name: env[p.name] for p in spec.attributes}
    walk = Formula.of(spec.formula)
    convert = float if out_dtype == "DOUBLE" else precise.round_to_odd
    m = mpmath.mp
    ar = mp_arithmetic(m)
    by_row: dict[int, list[int]] = {}
    for i in flagged.tolist():
        by_row.setdefault(i // length, []).append(i % length)
    for n, (r, cols) in enumerate(by_row.items()):
        if check is not None and n % 8 == 7:
            check()
        inputs = {nm: precise.exact_values(a[r], in_dtypes[nm]) for nm, a in raw.items()}
        if not all(np.isfinite(v).all() for v in inputs.values() if v.dtype.kind == "f"):
            continue
        values = {nm: arr.tolist() for nm, arr in inputs.items()}
        last: dict[int, float] = {}
        todo, bits = list(cols), precise.PRECISION
        while todo:
            with mpmath.workprec(bits):
                base = {k: (m.mpf(v) if isinstance(v, float) else v) for k, v in attrs.items()}
                envs = [_Element(base, values, j, m.mpf) for j in range(length)]
                row = Row(envs, lambda e, names: walk.bind(e, names, ar))
                for e in envs:
                    e[ROW] = row
                now: dict[int, float | None] = {}
                for j in todo:
                    v = walk.evaluate(envs[j], ar)
                    now[j] = None if v is None or not m.isfinite(v) else _convert(m.mpf(v), convert)
            done = [j for j in todo if now[j] is None or now[j] == last.get(j, math.nan)]
            for j in todo:
                if now[j] is not None and (j in done or bits >= precise.MAX_PRECISION):
                    old = y[r, j]
                    y[r, j] = old if (now[j] == 0 and old == 0) else now[j]
            last.update({j: v for j, v in now.items() if v is not None})
            todo = [j for j in todo if j not in done] if bits < precise.MAX_PRECISION else []
            bits *= 2


class _Element(dict):
    """One element's mpmath environment in a row: the attributes, and each input converted to
    mpf when an expression first reads it (a row of 2^20 elements whose reductions read one
    input converts only that one)."""

    def __init__(self, base: dict[str, Any], values: dict[str, list], j: int, mpf: Any):
        super().__init__(base)
        self._values, self._j, self._mpf = values, j, mpf

    def __missing__(self, name: str) -> Any:
        v = self[name] = self._mpf(self._values[name][self._j])
        return v


def _convert(v: Any, convert: Callable[[Any], float]) -> float:
    return 0.0 if v == 0 else convert(v)
