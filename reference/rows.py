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
flagged elements where their mpmath rows would be costly (PAIRS_MIN). The compiled tiers take
gathers (an index input broadcast along its rows is read as a strided view, never copied) and
outputs of one value per row; rows of rowgen.LONG elements and more (a reduction over `all`)
take its long-row kernel, which holds no whole-row buffer. A formula rowgen.py cannot write
(codegen.Unsupported: an IR node kind it does not know, a gather from an expression) keeps the
numpy tiers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np

from ..conformance.acl import dtypes as dt
from ..conformance.acl.call import Call, CallError, TensorArg
from ..conformance.acl.views import FlatView, numel
from ..conformance.compiled import mode as compiled_mode
from ..conformance.spec.elements import element_shape, index_dims
from ..conformance.spec.expr import ir
from ..conformance.spec.expr.language import SPANS
from ..conformance.spec.expr.mpeval import mp_arithmetic
from ..conformance.spec.expr.numpy_arith import NUMPY, numpy_arithmetic
from ..conformance.spec.expr.walk import GATHER, POS, ROW, Formula, Row, stage
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


def compilable(spec: OpSpec) -> bool:
    """Whether the compiled row generator has a form for every node of spec's formula (its
    node kinds, rowgen.KINDS, by exact type: a position, or a kind added later, is not)."""
    from . import rowgen

    return rowgen.expressible(spec)


def reduced_dims(node: ir.Reduce, env: dict[str, Any], rank: int) -> tuple[int, ...]:
    """The dims `node` reduces for a call (its attribute env) on an output of `rank`: sorted,
    negative ones wrapped; a rank-0 tensor reduces its one element over dim 0 or -1. Raises
    CallError for a dim out of range or named twice."""
    if node.param is not None:  # an int / int_array parameter, or a tensor laid along a dim
        v = env.get(node.param, env.get(SPANS.format(node.param)))
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


def live(spec: OpSpec, env: dict[str, Any]) -> list[ir.Reduce]:
    """The reductions and gathers a call can evaluate: those of the branches its attributes
    (`env`) do not rule out -- a branch whose condition reads attributes only is taken by every
    element or by none (NLL's `reduction == 0` per row, `otherwise` a mean over the batch) --
    with the conditions tested before them and the lets they read; inside them, a `where`
    whose condition reads attributes only takes one arm for the whole call (a kernel's
    switch: a smoothing term's sum is not computed where the smoothing is 0)."""
    walk = Formula.of(spec.formula)
    hits: list[int] = []
    for i, (when, _) in enumerate(walk.branches):
        if when is None:
            hits.append(i)
            break
        if when.names <= set(env) and not ir.reductions(when.ir):  # attributes only
            with np.errstate(all="ignore"):
                held = bool(np.all(when.run(dict(env), NUMPY)))
            if held:
                hits.append(i)
                break
            continue
        hits.append(i)
    exprs = [walk.lets[n] for n in walk.needs(hits)]
    for i, (when, value) in enumerate(walk.branches[: max(hits, default=-1) + 1]):
        exprs += [when] if when is not None else []
        exprs += [value] if i in hits else []
    return [r for e in exprs for r in _reached(e.ir, env)]


def _reached(node: ir.Node, env: dict[str, Any]) -> list[ir.Reduce]:
    """The reductions and row operations under `node` a call evaluates: both arms of a `where`,
    but only the taken one where its condition reads attributes only (`env`, no reduction)."""
    out: list[ir.Reduce] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ir.Reduce):
            out.append(n)
        if isinstance(n, ir.Where) and decided(n.cond, env):
            with np.errstate(all="ignore"):
                held = bool(np.all(stage(n.cond, NUMPY)(dict(env))))
            stack.append(n.a if held else n.b)
            continue
        stack.extend(ir.children(n))
    return out


def decided(cond: ir.Node, env: dict[str, Any]) -> bool:
    """Whether a condition reads attributes only (names bound in `env`, no reduction, no row
    operation): one truth value for the whole call."""
    return ir.names_read(cond) <= set(env) and not any(
        isinstance(n, ir.Reduce) for n in ir.walk(cond)
    )


def row_dims(spec: OpSpec, env: dict[str, Any], rank: int, whole: bool = False) -> tuple[int, ...]:
    """The dims a call's rows span: those its reductions reduce (the widest set: a reduction
    over one of its dims is nested, computed over that dim's segments of each row), or,
    without reductions, those its gathers pick along. CallError where a reduction's dims are
    not within the widest set's, a nested one reduces more than one dim, or a gather's dim is
    not among the rows'."""
    found = {reduced_dims(r, env, rank) for r in live(spec, env) if not isinstance(r, ir.Along)}
    picks = {reduced_dims(g, env, rank) for g in live(spec, env) if isinstance(g, ir.Along)}
    if not found and not picks and whole:  # an output of fewer elements, no live reduction
        found = {tuple(range(rank))}  # (a constant branch of a mean's formula): one row
    if not found:
        found = {tuple(sorted({d for p in picks for d in p}))}
    dims = max(found, key=lambda d: (len(d), d))
    for d in found:
        if not set(d) <= set(dims) or (d != dims and len(d) != 1):
            raise CallError(
                f"{spec.name}: the formula's reductions reduce dims {sorted(found)}: one set of "
                "dims per formula, and reductions nested in it over one of its dims"
            )
    for p in picks:
        if not set(p) <= set(dims) and rank:
            raise CallError(
                f"{spec.name}: a gather or position along dim {list(p)} in a formula reducing "
                f"dims {list(dims)} (it runs along a dim inside the reduced rows)"
            )
    return dims


def geometry(
    spec: OpSpec, env: dict[str, Any], shape: tuple[int, ...], dims: tuple[int, ...]
) -> dict[ir.Node, tuple[int, int]]:
    """Each gather's or position's dim, and each nested reduction's (over one dim of the
    rows'), as (stride, size) inside a row spanning `dims` of `shape` (walk.GATHER)."""
    out: dict[ir.Node, tuple[int, int]] = {}
    for g in live(spec, env):
        picked = reduced_dims(g, env, len(shape))
        if not isinstance(g, ir.Along) and (not picked or picked == tuple(dims)):
            continue  # a reduction over the whole row
        if not picked:  # a rank-0 x: its one element
            out[g] = (1, 1)
            continue
        d = picked[0]
        out[g] = (numel([shape[k] for k in dims if k > d]), shape[d])
    return out


def layout(
    spec: OpSpec, env: dict[str, Any], shape: tuple[int, ...], whole: bool = False
) -> Layout:
    """The rows of a call's output; CallError where its reductions reduce different dims.
    whole: the output has fewer elements than `shape` (a formula without a live reduction then
    makes one row of every element)."""
    rank = len(shape)
    dims = row_dims(spec, env, rank, whole)
    if not dims:  # a rank-0 output: one row of its one element
        return Layout(shape, numel(shape), (), (0,), 1)
    k = dims[0]
    block = shape[k:]
    kept = [1 + i for i in range(len(block)) if k + i not in dims]
    red = [1 + d - k for d in dims]
    return Layout(shape, numel(shape[:k]), block, (0, *kept, *red), numel([shape[d] for d in dims]))


def _rows_of(
    spec: OpSpec, call: Call
) -> tuple[dict[str, Any], tuple[int, ...], dict[str, TensorArg], bool, Layout]:
    """(env with the geometry bound, the elements' shape, the tensors read, per_row: one output
    element per row (the reduced dims dropped), the rows' layout) of a call."""
    env: dict[str, Any] = attribute_env(spec, call)
    shape, args = element_shape(spec, call, env)
    per_row = tuple(call.tensor(spec.formula.output).shape) != shape
    lay = layout(spec, env, shape, per_row)
    env[GATHER] = geometry(spec, env, shape, row_dims(spec, env, len(shape), per_row))
    return env, shape, args, per_row, lay


# bytes an element of a chunk's rows costs while a tier evaluates it: the numpy tiers' float64
# temporaries and (value, bound) pairs (about 220 measured: a nested cross entropy's mean), the
# compiled rows' values, flags and buffers
NUMPY_BYTES, COMPILED_BYTES = 256, 24


def working_bytes(spec: OpSpec, call: Call) -> int:
    """Memory the row tiers need to evaluate `call`'s output beyond its tensors: a chunk holds
    whole blocks of rows, so one block of every element (a mean over all holding a reduction
    per row: nested, left to numpy) is evaluated at once; the runner refuses a case whose
    working memory and tensors pass its budget instead of letting the machine kill it."""
    env, shape, _, per_row, lay = _rows_of(spec, call)
    size, total = max(1, lay.block_size), numel(shape)
    nested = any(not isinstance(g, ir.Along) for g in env[GATHER])
    compiled = not nested and compiled_mode.wanted(total)
    per = max(1, (COMPILED_CHUNK if compiled else CHUNK) // size)
    elements = min(total, per * size)
    return elements * (COMPILED_BYTES if compiled else NUMPY_BYTES)


def chunks(
    spec: OpSpec,
    call: Call,
    *,
    exact: bool = False,
    check: Callable[[], None] | None = None,
    chunk: int | None = None,
    values: bool = True,
    into: FlatView | None = None,
    shared: Shared | None = None,
) -> Iterator[tuple[int, int, np.ndarray | None, np.ndarray]]:
    """engine.chunks for a formula with reductions: (start, stop, rounded result, float64
    values) per run of whole blocks of the output (see the module docstring); into: the
    output's view, into whose storage the rounded result goes where it is contiguous and
    shares no memory with an input (the result yielded is then that slice of it); shared: the
    reductions this call's outputs share (Shared), read where an earlier output's kernel wrote
    them, else written for the later ones."""
    env, shape, args, per_row, lay = _rows_of(spec, call)
    out_shape = tuple(call.tensor(spec.formula.output).shape)
    if per_row and numel(out_shape) * lay.length != numel(shape):
        raise CallError(
            f"{spec.name}: output shape {list(out_shape)} is neither the elements' shape "
            f"{list(shape)} nor that shape with the reduced dims removed"
        )
    route = plan(spec, call, exact)
    out_dtype = route.out_dtype
    flats = {nm: FlatView(t, shape) for nm, t in args.items()}
    direct = (
        into is not None
        and into.contiguous
        and not any(np.may_share_memory(into.storage, f.storage) for f in flats.values())
    )
    size = max(1, lay.block_size)
    # the rows in the output's own order (no transposition), FLOAT or DOUBLE elements
    in_order = (
        not per_row
        and lay.perm == tuple(range(len(lay.perm)))
        and into is not None
        and into.storage.dtype in (np.float32, np.float64)
    )
    # the compiled row tiers where rowgen.py can write the formula (codegen.Unsupported: the
    # numpy tiers), its output the elements' shape or one value per row
    # (a 64-bit integer input, a gather's index, is read as float64: exact within 2^53)
    exact_ints = all(_within_double(t.storage) for t in args.values())
    share = shared if shared is not None and shared.layout in (None, lay) and lay.length else None
    fast = Compiled.make(spec, env, route, numel(shape), lay.length, share) if exact_ints else None
    per_block = size // max(lay.length, 1)  # rows of a block (the shared reductions' rows)
    writes = frozenset(share.nodes) & frozenset(live(spec, env)) if share else frozenset()
    per = max(1, (chunk or (COMPILED_CHUNK if fast else CHUNK)) // size)
    pairs = None  # the double-double rows after numpy's tier 1, made when first wanted
    # a per-row output's elements per block: it holds outer x kept elements, one per row
    rows_per_block = numel(out_shape) // max(lay.outer, 1)
    for o0 in range(0, lay.outer, per):
        o1 = min(lay.outer, o0 + per)
        start, stop = o0 * size, o1 * size
        if per_row and lay.length == 0:  # reductions over nothing: one value per row
            start, stop = o0 * rows_per_block, o1 * rows_per_block
            known = {  # a gather's index holds one value per row: the row's own
                nm: FlatView(call.tensor(nm), tuple(call.tensor(nm).shape)).get(start, stop)
                for nm in index_dims(spec, env)
                if nm in flats and numel(call.tensor(nm).shape) == numel(out_shape)
            }
            flat = _empty_rows(spec, env, list(flats), stop - start, known)
            result = None if values and route.fmt is not None else dt.round_to(flat, out_dtype)
            yield start, stop, result, flat  # type: ignore[misc]
            continue
        raw = {nm: _row_view(f, lay, o0, o1) for nm, f in flats.items()}
        raw = {nm: lay.to_rows(flats[nm].get(start, stop), o1 - o0) if a is None else a
               for nm, a in raw.items()}  # fmt: skip
        rows_shape = (numel(((o1 - o0),) + lay.block) // max(lay.length, 1), lay.length)
        out_rows = (rows_shape[0], 1) if per_row else rows_shape
        dest = _slice(into, start, stop) if direct else None
        # the rows are the output's own elements in order: the kernel writes them there, every
        # later tier writes its elements there too, and no float64 copy is kept
        mine = None
        if fast is not None and not values and in_order and dest is not None:
            mine = dest.reshape(out_rows)
        at = slice(o0 * per_block, o1 * per_block)
        got = (
            fast.tier1(raw, out_rows, mine, at, lay.outer * per_block) if fast is not None else None
        )
        if got is None:
            fast = None
            y, mask = tier1(spec, env, raw, rows_shape, route, per_row)
            flagged = np.flatnonzero(mask.reshape(-1))
            # (once compiled for this call, the pairs take every chunk's flagged rows)
            wanted = pairs is not None or pairs_wanted(route, flagged, out_rows[1], lay.length)
            if flagged.size and wanted:
                pairs = pairs or Compiled.make_pairs(spec, env, route, lay.length)
                if pairs is not None:
                    flagged = pairs.settle(raw, y, flagged)
        else:
            y, flags, bad = got
            if share is not None and fast.shared is not None:  # these rows' values are there
                share.done, share.layout = share.done | writes, lay
            if bad.size:  # rows with an infinity or NaN in a reduction: numpy's IEEE values,
                # and where one of those is finite, numpy's tier 1 (an ATK case of NaN
                # gradients is 14 M elements of NaN: no bounds walked for them)
                sub = {nm: a[bad] for nm, a in raw.items()}
                y[bad] = ieee(spec, env, sub, (bad.size, lay.length), per_row)
                flags[bad] = 0
                some = np.isfinite(y[bad]).any(axis=1)
                if some.any():
                    at = bad[some]
                    y[at], flags[at] = tier1(
                        spec,
                        env,
                        {nm: a[some] for nm, a in sub.items()},
                        (at.size, lay.length),
                        route,
                        per_row,
                    )
            flagged = fast.settle(raw, y, settle.flagged(flags.reshape(-1)))
            if fast.every and flagged.size:  # DOUBLE: what the pairs leave, long double's rows
                flagged = _long_double(spec, env, raw, y, flagged, route, per_row)
        if flagged.size:
            refine(spec, env, y, flagged, raw, route.in_dtypes, out_dtype.name, check, per_row)
        if per_row:
            flat = y.reshape(-1)
            start, stop = o0 * rows_per_block, o1 * rows_per_block
        else:
            flat = lay.from_rows(y, o1 - o0)
        dest = _slice(into, start, stop) if direct else None
        if values and route.fmt is not None:
            result = None
        elif (mine is not None and got is not None) or (
            dest is not None and fast is not None and fast.store(flat, dest)
        ):  # (written by the kernel and the tiers after it, or stored now)
            result = dest
        else:
            result = dt.round_to(flat, out_dtype, dest)
        if check is not None:
            check()
        yield start, stop, result, flat  # type: ignore[misc]


def _slice(into: Any, start: int, stop: int) -> np.ndarray:
    """Elements [start, stop) of a contiguous output view's storage."""
    return into.storage[into.offset + start : into.offset + stop]


def _row_view(f: FlatView, lay: Layout, o0: int, o1: int) -> np.ndarray | None:
    """Blocks [o0, o1) of a broadcast input (a zero stride: a gather's index, constant along
    its rows) as rows, a strided view of its storage (read-only, nothing copied); None where
    the input is not broadcast or the rows need a copy (FlatView.get then)."""
    if f.contiguous or not f.shape or 0 not in f.strides or f.size == 0 or min(f.strides) < 0:
        return None
    item = f.storage.itemsize
    nd = np.lib.stride_tricks.as_strided(
        f.storage[f.offset :], f.shape, [s * item for s in f.strides], writeable=False
    )
    try:
        blocks = nd.reshape((lay.outer,) + lay.block, copy=False)
        return blocks[o0:o1].transpose(lay.perm).reshape(-1, lay.length, copy=False)
    except ValueError:  # the rows are no strided view of the storage
        return None


def _within_double(a: np.ndarray) -> bool:
    """Whether float64 holds every value of `a` exactly (a 64-bit integer array within 2^53)."""
    if a.dtype.kind not in "iu" or a.dtype.itemsize < 8 or a.size == 0:
        return True
    return bool(int(a.min()) >= -(2**53) and int(a.max()) <= 2**53)


def _empty_rows(
    spec: OpSpec,
    env: dict[str, Any],
    names: list[str],
    rows: int,
    known: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """The value of each of `rows` rows whose reductions reduce no element (a sum 0, a mean
    NaN): the formula walked once in float64 on rows of one element standing for nothing;
    `known` inputs (a gather's index: one value per row) hold their rows' values."""
    chunk_env = dict(env)
    chunk_env[ROW] = (rows, 0)
    with np.errstate(all="ignore"):
        for nm in names:
            chunk_env[nm] = np.zeros((rows, 0))
        for nm, v in (known or {}).items():
            chunk_env[nm] = np.asarray(v, np.float64).reshape(rows, 1)
        y = np.asarray(Formula.of(spec.formula).evaluate(chunk_env, NUMPY, (rows, 1)), np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        return np.ascontiguousarray(y[:, 0])
    if y.ndim == 0:
        return np.full(rows, float(y))
    raise CallError(
        f"{spec.name}: the output reduces over nothing but its formula reads an input outside "
        "a reduction"
    )


COMPILED_CHUNK = 1 << 22  # elements of a chunk at least, on the compiled path
# mpmath element evaluations (flagged rows times their length) from which the double-double
# rows are worth compiling after numpy's tier 1 (mpmath: about 30 us an element, twice; a tie
# goes on to TIE_PRECISION: 1.5 ms. A log-normalising ATK case, 3,454 elements of BF16 ties in
# rows of 9, took 5 s in mpmath; the kernel is compiled once and cached on disk)
PAIRS_MIN = 1 << 10


def pairs_wanted(route: Plan, flagged: np.ndarray, length: int, walked: int | None = None) -> bool:
    """Whether numpy's flagged elements go through the double-double rows before mpmath: where
    the one switch allows numba and their rows (of `length` outputs, `walked` elements each:
    length by default) would cost mpmath PAIRS_MIN evaluations (every time where the switch
    says numba)."""
    if route.refine_all or route.complex_out or route.wide or not (route.fmt or route.faithful):
        return False
    m = compiled_mode.mode()
    if m == "numpy" or compiled_mode.numba_version() is None:
        return False
    return m == "numba" or np.unique(flagged // length).size * (walked or length) >= PAIRS_MIN


SHAREABLE = ("sum", "mean", "amax", "amin", "prod", "logsumexp")  # one number per row


@dataclass
class Shared:
    """The row reductions several outputs of one call compute alike (a cross entropy's loss and
    its log-probabilities both read the row's logsumexp): the first output's compiled kernel
    writes each one's value, bound and flags per row (rowgen's sv, se, sf), the later outputs'
    kernels read them instead of walking the row again, over rows of one layout. `done`: the
    reductions some kernel wrote (on the rows it ran; a row no kernel wrote keeps its flags
    set, bad: the reading kernel leaves it to the numpy tiers, which compute it)."""

    nodes: tuple[ir.Reduce, ...]
    layout: Layout | None = None
    done: frozenset[ir.Reduce] = frozenset()
    sv: np.ndarray | None = None
    se: np.ndarray | None = None
    sf: np.ndarray | None = None

    @classmethod
    def among(cls, outputs: Sequence[tuple[OpSpec, Call]]) -> Shared | None:
        """The reductions of one number per row that two or more of `outputs` (each output's
        spec, its attributes decided, and call) evaluate; None where there are none."""
        seen: dict[ir.Reduce, int] = {}
        for spec, call in outputs:
            if not reductions(spec):
                continue
            env = _rows_of(spec, call)[0]
            for node in dict.fromkeys(live(spec, env)):
                # (a paired reduction has a value per element, not one per row)
                if isinstance(node, ir.Reduce) and node.fn in SHAREABLE and not ir.paired(node):
                    seen[node] = seen.get(node, 0) + 1
        nodes = tuple(n for n, k in seen.items() if k > 1)
        return cls(nodes) if nodes else None

    def arrays(self, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The three arrays over every row of the call (made on the first writer's call)."""
        if self.sv is None or self.sv.shape[0] != rows:
            k = len(self.nodes)
            self.sv, self.se = np.zeros((rows, k)), np.zeros((rows, k))
            self.sf = np.ones((rows, 2 * k), np.bool_)  # (unwritten: bad, numpy's tiers)
        return self.sv, self.se, self.sf  # type: ignore[return-value]


@dataclass
class Compiled:
    """The compiled row tiers of one call (rowgen.py): tier 1 in float64 with its bound, and
    the double-double rows that settle what tier 1 flags; what the pair cannot decide stays
    flagged for mpmath. FLOAT, FLOAT16 and BF16 outputs, where the one switch of
    conformance/compiled/mode.py wants the compiled path; a DOUBLE output (faithful) has no
    float64 tier (within an ulp is past float64's own bound): the pairs are its tier 1, over
    every element in parallel (`every`)."""

    spec: OpSpec
    env: dict[str, Any]
    route: Plan
    f64: Any
    dd: Any
    every: bool = False
    shared: Shared | None = None  # the kernel reads or writes these rows' reductions

    @classmethod
    def make(
        cls,
        spec: OpSpec,
        env: dict[str, Any],
        route: Plan,
        total: int,
        length: int,
        shared: Shared | None = None,
    ) -> Compiled | None:
        if route.refine_all or route.complex_out or not (route.fmt or route.faithful):
            return None  # (a 64-bit integer input: chunks() checks it is within 2^53)
        if length == 0 or not compiled_mode.wanted(total):
            return None
        from . import kernel, rowgen  # numba is imported only where the compiled path runs

        if route.fmt is None:  # DOUBLE, faithful: the pairs over every element, in parallel
            try:
                every = rowgen.generate(
                    spec, env, True, length=length, live=frozenset(live(spec, env))
                )
                dd = kernel._compiled(every)
            except codegen.Unsupported:
                return None
            return None if dd is None else cls(spec, env, route, None, dd, every=True)

        half = frozenset(n for n, d in route.in_dtypes.items() if d == "FLOAT16")
        try:
            reach = frozenset(live(spec, env))
            f64 = None
            if length >= rowgen.LONG:  # its rows' segments in parallel, no whole-row buffer
                try:
                    src = rowgen.generate(spec, env, False, half, length, True, reach)
                    f64 = kernel._compiled(src)
                except codegen.Unsupported:  # a reduction without a long-row form
                    pass
            if f64 is None and shared is not None:
                nodes, given = shared.nodes, shared.done
                src = rowgen.generate(spec, env, False, half, length, live=reach, shared=nodes, given=given)  # fmt: skip
                f64 = kernel._compiled(src)
                shared = shared if f64 is not None else None
            else:
                shared = None
            if f64 is None:
                f64 = kernel._compiled(rowgen.generate(spec, env, False, half, length, live=reach))
        except codegen.Unsupported:
            return None
        if f64 is None:
            return None
        try:
            dd = kernel._compiled(rowgen.generate(spec, env, True, length=length, live=reach))
        except codegen.Unsupported:
            dd = None
        return cls(spec, env, route, f64, dd, shared=shared)

    @classmethod
    def make_pairs(
        cls, spec: OpSpec, env: dict[str, Any], route: Plan, length: int | None = None
    ) -> Compiled | None:
        """The double-double rows alone (after numpy's tier 1), or None where the formula has
        no double-double form."""
        from . import kernel, rowgen

        try:
            live_ = frozenset(live(spec, env))
            dd = kernel._compiled(rowgen.generate(spec, env, True, length=length, live=live_))
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
        self,
        raw: dict[str, np.ndarray],
        shape: tuple[int, int],
        y: np.ndarray | None = None,
        at: slice = slice(None),
        total: int = 0,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(values, flags (uint8, nonzero: not decided), rows for numpy) of a chunk of rows, or
        None where numba cannot type the arguments (numpy from then on). y: where the values
        go, the output's own FLOAT or DOUBLE rows (the kernel's store casts as round_to does:
        a decided element's float64 value rounds to the output as its exact value does), by
        default a float64 buffer."""
        y = np.empty(shape) if y is None else y
        flags = np.empty(shape, np.uint8)
        bad = np.empty(shape[0], np.bool_)
        drop, guard, emin = self._format()
        first = self.dd if self.every else self.f64  # DOUBLE: the pairs decide or flag
        if self.every:
            flags.fill(1)  # (the pair kernel evaluates the elements flagged on entry)
            raw = {nm: np.ascontiguousarray(a).astype(np.float64) for nm, a in raw.items()}
        extra: tuple[np.ndarray, ...] = ()
        if self.shared is not None and not self.every:
            extra = tuple(a[at] for a in self.shared.arrays(total))  # type: ignore[index]
        try:
            first.fn(*first._args(raw, self.env), *extra, y, flags, bad, drop, guard, emin)
        except Exception as exc:  # numba cannot type these arguments
            first.fail(exc)
            return None
        return y, flags, np.flatnonzero(bad)

    def store(self, flat: np.ndarray, dest: np.ndarray) -> bool:
        """Write the values `flat` into a FLOAT or DOUBLE output slice `dest` in parallel (the
        cast rounds as dtypes.round_to's does); False where it cannot (dest another dtype)."""
        k = self.f64 or self.dd
        if k.store_fn is None or dest.dtype not in (np.float32, np.float64):
            return False
        if flat.ndim != 1 or not flat.flags.c_contiguous or flat.dtype != np.float64:
            return False
        k.store_fn(flat, dest)
        return True

    def settle(self, raw: dict[str, np.ndarray], y: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """The rows of the flagged elements `idx` (flat) again in double-double: where the
        pair decides, y takes it (rounded to odd). Returns the elements still undecided."""
        if self.dd is None or self.every or idx.size == 0:
            return idx  # (no pairs, or the pairs were tier 1: what they left stays)
        length = y.shape[1]
        rows, first = np.unique(idx // length, return_inverse=True)
        drop, guard, emin = self._format()
        left = []
        per = max(DD_ROWS, DD_ELEMENTS // max(length, 1))  # short rows: more of them a call
        for i in range(0, rows.size, per):
            at = rows[i : i + per]
            mine = idx[(first >= i) & (first < i + per)]
            r, c = first[(first >= i) & (first < i + per)] - i, mine % length
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
            y[mine[ok] // length, mine[ok] % length] = yd[r[ok], c[ok]]  # (y in any order)
            left.append(mine[~ok])
        return np.sort(np.concatenate(left))


DD_ROWS = 64  # rows of one double-double call at least (its buffers: rows of float64)
DD_ELEMENTS = 1 << 18  # and as many more as this many elements hold (a call costs ~100 us)


def _long_double(
    spec: OpSpec,
    env: dict[str, Any],
    raw: dict[str, np.ndarray],
    y: np.ndarray,
    flagged: np.ndarray,
    route: Plan,
    per_row: bool,
) -> np.ndarray:
    """A DOUBLE output's elements the pairs left (flat indices into y): their rows through
    numpy's tier 1 (long double, trusted where float64's bound shows little amplification: the
    pairs' function bounds are generous, a row's x - m - log(S) leaves 1 % to it); the
    elements it flags too are returned (for mpmath)."""
    length = y.shape[1]
    rows_, at = np.unique(flagged // length, return_inverse=True)
    full = next(iter(raw.values())).shape[1] if raw else length
    got, mask = tier1(spec, env, {nm: a[rows_] for nm, a in raw.items()}, (rows_.size, full), route, per_row)  # fmt: skip
    cols = flagged % length
    y[rows_[at], cols] = got[at, cols]
    return flagged[mask[at, cols]]


def ieee(
    spec: OpSpec,
    env: dict[str, Any],
    raw: dict[str, np.ndarray],
    shape: tuple[int, int],
    per_row: bool = False,
    ar: Any = NUMPY,
    dtype: Any = np.float64,
) -> np.ndarray:
    """The formula's values over rows in numpy's IEEE arithmetic `ar` (complex128: COMPLEX),
    nothing bounded; per_row: the rows' first column."""
    chunk_env = dict(env)
    chunk_env[ROW] = shape
    for nm, arr in raw.items():
        chunk_env[nm] = arr.astype(dtype)
    cols = 1 if per_row else shape[1]
    with np.errstate(all="ignore"):
        y = Formula.of(spec.formula).evaluate(chunk_env, ar, shape)
        return np.array(np.broadcast_to(y, shape)[:, :cols], dtype=dtype)


def tier1(
    spec: OpSpec,
    env: dict[str, Any],
    raw: dict[str, np.ndarray],
    shape: tuple[int, int],
    route: Plan,
    per_row: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(values, flags) of a chunk of rows: the formula walked in float64 with a running error
    bound (errbound.py), each reduction's value within an ulp of the exact one and its bound
    carried. Flagged: a FLOAT, FLOAT16 or BF16 element near a rounding midpoint or whose bound
    (SAFETY times) reaches another output value; a DOUBLE element the bound does not keep
    within 1 ulp (every finite one with --exact); any element a comparison left undecided.
    per_row: the output holds one value per row, its first element's: (rows, 1) come back."""
    chunk_env = dict(env)
    out = (shape[0], 1) if per_row else shape
    chunk_env[ROW] = shape
    with np.errstate(all="ignore"):
        if route.complex_out:  # complex128, numpy's arithmetic, nothing settled (as elementwise)
            y = ieee(spec, env, raw, shape, per_row, COMPLEX, np.complex128)
            return y, np.zeros(out, bool)
        for nm, arr in raw.items():
            chunk_env[nm] = arr.astype(np.float64)
        y, err, undecided = errbound.bounded(spec, chunk_env, shape)
        # C order: the rows' flat indices (flags, the pairs' writes) are row-major; numpy's
        # walk of a transposed layout (a reduction over dim 0) gives Fortran-ordered values
        y = np.array(np.broadcast_to(y, shape)[:, : out[1]], dtype=np.float64, order="C")
        err = np.broadcast_to(err, shape)[:, : out[1]]
        undecided = np.broadcast_to(undecided, shape)[:, : out[1]]
        finite = np.isfinite(y)
        name = route.out_dtype.name
        if route.refine_all:
            mask = finite.copy()
        elif route.fmt is not None:
            # a zero's sign is not decided (all within reach rounding to zero: the comparison
            # takes -0 for +0, as the elementwise tiers' flag_far)
            differ = errbound.reaches(y, err, route.out_dtype, signed=False)
            # an error bound of 0: every operation was exact, the value is the exact one
            mask = finite & (differ | (precise.near_midpoint(y, name) & (err > 0)))
        elif name == "DOUBLE":
            # long double (11 more bits), trusted where float64's bound shows at most
            # AMPLIFICATION-fold amplification of rounding errors (else mpmath)
            ld = {k: v.astype(np.longdouble) if isinstance(v, np.ndarray) else v
                  for k, v in chunk_env.items()}  # fmt: skip
            ld.update({k: np.longdouble(v) for k, v in env.items() if isinstance(v, float)})
            ld[ROW] = shape
            y = np.array(
                np.broadcast_to(Formula.of(spec.formula).evaluate(ld, LONG, shape), shape)[
                    :, : out[1]
                ],
                dtype=np.float64,
                order="C",
            )
            finite = np.isfinite(y)
            mask = finite & ~(err * errbound.SAFETY < AMPLIFICATION * errbound.U * np.abs(y))
        else:
            mask = np.zeros(out, bool)
        mask |= undecided & finite
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
    per_row: bool = False,
) -> None:
    """y (rows, length; float64 values) with the `flagged` elements (flat indices) evaluated
    again in mpmath over their rows: nearest float64 for DOUBLE, else rounded to odd for the
    final rounding. A row with a NaN input keeps float64's IEEE values; mpmath takes infinities
    (exp(-inf) = 0: a -inf term is 0, and its row's other elements are refined), and an
    element it finds no finite value for keeps float64's. per_row: y holds
    one value per row (rows, 1), that of the row's first element."""
    length = next(iter(raw.values())).shape[1] if per_row and raw else y.shape[1]
    flagged = flagged * length if per_row else flagged
    attrs = {k: v for k, v in env.items() if k != ROW and k not in raw}
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
        if any(np.isnan(v).any() for v in inputs.values() if v.dtype.kind == "f"):
            continue  # (a NaN's row: IEEE's values; an infinity is mpmath's own: exp(-inf) = 0)
        values = {nm: arr.tolist() for nm, arr in inputs.items()}
        sums = exact_sums(spec, env, {nm: a[r : r + 1] for nm, a in raw.items()}, length)
        last: dict[int, float] = {}
        todo, bits = list(cols), precise.PRECISION
        while todo:
            with mpmath.workprec(bits):
                base = {k: (m.mpf(v) if isinstance(v, float) else v) for k, v in attrs.items()}
                row = Row([], lambda e, names: walk.bind(e, names, ar))
                row.envs = _Elements(base, values, length, m.mpf, row, check)
                for node, total in sums.items():  # float64's exact sum: no walk of the row
                    value = m.mpf(total)
                    if node.fn == "mean":
                        value = ar.div(value, m.mpf(length))
                    row.cache[id(node)] = (node, value)
                now: dict[int, float | None] = {}
                for j in todo:
                    v = walk.evaluate(row.envs[j], ar)
                    now[j] = None if v is None or not m.isfinite(v) else _convert(m.mpf(v), convert)
            # a tie goes on to TIE_PRECISION (precise.next_precision: a term below the
            # precision, x - m - log(1 + e^-800), makes one at every low precision alike)
            nxt = {j: None if now[j] is None else
                   precise.next_precision(bits, now[j], last.get(j), out_dtype) for j in todo}  # fmt: skip
            for j in todo:
                if now[j] is not None and nxt[j] is None:
                    c = 0 if per_row else j
                    old = y[r, c]
                    y[r, c] = old if (now[j] == 0 and old == 0) else now[j]
            last.update({j: v for j, v in now.items() if v is not None})
            todo = [j for j in todo if nxt[j] is not None]
            bits = min((b for b in nxt.values() if b is not None), default=bits)


EXACT_SUMS_MIN = 64  # a flagged row this long first has its sums tried in float64 (exact_sums)


def exact_sums(
    spec: OpSpec, env: dict[str, Any], raw: dict[str, np.ndarray], length: int
) -> dict[ir.Reduce, float]:
    """The sums and means over a whole row (one row of `raw`) whose every term float64 computes
    exactly and whose sum float64 holds exactly (errbound: a bound of 0, errbound.exact_sum):
    their exact sum, so that mpmath need not walk the row for them (a mean's divisor of picked
    class weights over 2^20 elements). Rows shorter than EXACT_SUMS_MIN: none tried; a paired
    reduction (a value per element) never."""
    if length < EXACT_SUMS_MIN:
        return {}
    nested = env.get(GATHER, {})
    found: dict[ir.Reduce, float] = {}
    pairs = errbound.as_pairs({**env, ROW: (1, length)})
    for nm, a in raw.items():
        pairs[nm] = (a.astype(np.float64), 0.0)
    walk = Formula.of(spec.formula)
    for node in live(spec, env):
        if isinstance(node, ir.Along) or node.fn not in ("sum", "mean") or node in nested:
            continue
        if ir.paired(node):  # a value per element (its argument reads outer), no row sum
            continue
        with np.errstate(all="ignore"):
            errbound.BOUNDED.state.undecided = False
            walk.bind(pairs, ir.names_read(node.x), errbound.BOUNDED)
            terms = errbound.BOUNDED.rows_of(stage(node.x, errbound.BOUNDED)(pairs), (1, length))
            if np.any(errbound.BOUNDED.state.undecided) or not np.isfinite(terms[0]).all():
                continue
            total, err = errbound.BOUNDED.r_sum(terms)  # a bound of 0: the exact sum
            if err[0, 0] == 0:
                found[node] = float(total[0, 0])
    return found


class _Elements(Sequence):
    """A row's element environments for mpmath, each made when first read (a row of 2^20 whose
    reductions are known already builds only the elements asked for), bound to `row`. `check`
    (the case's time limit) is called every CHECK_EVERY elements made: a long row's reduction
    in mpmath takes seconds, and the limit holds inside it too."""

    CHECK_EVERY = 4096

    def __init__(
        self,
        base: dict[str, Any],
        values: dict[str, list],
        length: int,
        mpf: Any,
        row: Row,
        check: Callable[[], None] | None = None,
    ):
        self.base, self.values, self.length, self.mpf, self.row = base, values, length, mpf, row
        self.check = check
        self.made: dict[int, _Element] = {}

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, j: Any) -> Any:
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(self.length))]
        e = self.made.get(j)
        if e is None:
            if self.check is not None and len(self.made) % self.CHECK_EVERY == self.CHECK_EVERY - 1:
                self.check()
            e = self.made[j] = _Element(self.base, self.values, j, self.mpf)
            e[ROW], e[POS] = self.row, j
        return e

    def __iter__(self) -> Iterator[Any]:
        return (self[j] for j in range(self.length))


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
