"""The one walker of the expression IR (conformance/spec/expr/ir.py), and the `Formula` walk of a
spec's lets and branches. The semantics live here once; an *arithmetic* supplies the values.

What the walker decides, for every arithmetic alike:
- a comparison chain a < b <= c holds where every link holds (`chain`: the links joined with
  `and_`);
- `and`/`or` fold their parts left to right with `and_`/`or_` (`logic`);
- `where(c, a, b)` evaluates only the side taken when the arithmetic says `c` is one value for
  every element (`choose`); otherwise both sides and the arithmetic's `where`;
- a formula binds a `let` only when an expression it evaluates names it, takes its branches in
  order (the first true one wins, `otherwise` ends the walk), skips a branch no element takes,
  and hands a branch some elements take, with the walk of the branches after it, to the
  arithmetic's `select`; where no branch holds the value is the arithmetic's `nothing`. The
  same walk tells which branch each element takes (`taken`) and which lets an evaluation
  binds (`needs`). Emitters (numba source) are arithmetics too: `let` names a bound let's
  variable, `scope` gives each branch value its own block.

What an arithmetic decides (its methods, see `Arithmetic`): the values of literals and constants,
the operators (division by zero, NaN in comparisons: IEEE in every float arithmetic), NaN in
minimum/maximum (propagated), and each function of the language as a method `f_<name>`. An
arithmetic that lacks a function the spec uses is found by `missing` (at lint time).

Reductions (`sum(x, dim)`, ...; ir.Reduce) are the arithmetic's `reduce`, and a gather
(`gather(x, target, dim)`, ir.Gather: a row operation along dim) its `gather`, a position
(`position(dim)`, ir.Position: each element's index along dim) its `position`: an array arithmetic
reduces the last axis of its values (the evaluator lays each chunk out as rows: the reduced
dims last, `ROW` in the environment holds the rows' shape), keeping it so the value broadcasts
back over the row; a scalar arithmetic (mpmath) evaluates the argument at every element of the
row (`Row`, bound as `ROW`), each reduction once per row. A paired reduction (its argument holds
`outer(x)`, ir.Outer: x at the element the reduction's value is for) has a value per element: an
array arithmetic's `paired` evaluates the argument on pair rows (env[OUTER] a `Pairs`, saying
which element each pair row is for), a scalar one evaluates it at every element of the row once
per element, each element's environment a `Paired` whose OUTER is that element's.

Expressions are *staged*: the walk is done once per (expression, arithmetic) into closures, so
evaluating one is a call per node, no dispatch on node kinds (numpy chunks, mpmath elements).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .ir import (
    Binary,
    Call,
    Compare,
    Concat,
    Const,
    Cumsum,
    Gather,
    Half,
    Logic,
    Node,
    Num,
    Outer,
    Position,
    Reduce,
    Text,
    Unary,
    Var,
    Where,
    memo,
    names_read,
    paired,
)
from .ir import walk as walk_ir

Env = dict[str, Any]
Fn = Callable[[Env], Any]
ROW = "\x00row"  # the environment's key for a reduction's row (no spec name can be this)
# the environment's key for where each gather's dim lies in the rows: {Gather node: (stride,
# size)}, the dim's stride and size inside a row (absent: the row is that dim alone); a
# reduction over one dim of rows spanning more is there too (Arithmetic.segments)
GATHER = "\x00gather"
POS = "\x00pos"  # a scalar arithmetic's element environment: the element's position in its row
# inside a paired reduction's argument (one holding `outer(x)`), what `outer` reads x at: a
# scalar arithmetic's environment of the element the reduction's value is for (`Paired`), an
# array arithmetic's `Pairs` (the rows' environment and which element each pair row is for)
OUTER = "\x00outer"


@dataclass
class Row:
    """The row of elements a scalar arithmetic's reduction walks: one environment per element
    (its inputs bound), `bind(env, names)` binds the lets an argument reads, and each reduction's
    value is kept once computed (a row's maximum is read by every element of the row)."""

    envs: Sequence[Env]
    bind: Callable[[Env, Iterable[str]], None] = lambda env, names: None
    cache: dict[int, Any] = field(default_factory=dict)


class Paired(dict):
    """A scalar arithmetic's environment of a reduced element `inner` inside a paired
    reduction's argument: the element's own names (read through), with OUTER the environment of
    the element the reduction's value is for (where `outer(x)` evaluates x)."""

    def __init__(self, inner: Env, outer: Env):
        super().__init__({OUTER: outer})
        self.inner = inner

    def __missing__(self, key: str) -> Any:
        return self.inner[key]

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return dict.get(self, key) if key == OUTER else self.inner.get(key, default)


@dataclass
class Pairs:
    """An array arithmetic's pair rows (Arithmetic.paired), as `outer(y)` reads y: y is
    evaluated in `env` (the rows' environment), laid out once by `lay` and kept in `values`
    (one evaluation per reduction, whatever the chunks), and `take` reads the laid value at the
    elements the current chunk's pair rows are for."""

    env: Env
    lay: Callable[[Any], Any]
    take: Callable[[Any], Any]
    values: dict[int, Any] = field(default_factory=dict)

    def value(self, node: Outer, x: Fn) -> Any:
        hit = self.values.get(id(node))
        if hit is None:
            hit = self.values[id(node)] = self.lay(x(self.env))
        return hit


class Arithmetic:
    """The values an expression is evaluated in. Subclasses define the operators below (names
    from ir.BINARY and ir.COMPARE), `f_<name>` for each language function they support, and,
    for a formula, `decide`, `select`, `nothing` and `finish`."""

    name = "arithmetic"

    def number(self, value: bool | int | float) -> Any:
        return value

    def constant(self, name: str, value: float) -> Any:
        return value

    def choose(self, cond: Any) -> bool | None:
        """True/False when `cond` is one value for every element (where() then evaluates only
        that side), None to evaluate both sides and `where`."""
        return None

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        """Elementwise selection (scalar arithmetics: the one side `cond` names)."""
        return a if cond else b

    def decide(self, cond: Any) -> bool | None:
        """A branch condition: True (every element takes it), False (none does), None (some)."""
        return bool(cond)

    def select(self, cond: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        """The value of a branch some elements take: `then()` where `cond` holds, `other()` (the
        branches after it) elsewhere."""
        return then() if cond else other()

    def nothing(self) -> Any:
        """The value where no branch holds (after a last guarded branch): NaN, None for a
        scalar arithmetic."""
        return None

    def finish(self, value: Any, n: int | None) -> Any:
        """The formula's value as `evaluate` returns it (over `n` elements)."""
        return value

    def result(self, value: Any) -> Any:
        """A branch's value as the formula returns it."""
        return value

    def let(self, name: str, value: Any) -> Any:
        """What a bound `let` holds in the environment (an emitter: the variable it assigns)."""
        return value

    def scope(self, env: Env) -> Env:
        """The environment a branch value is evaluated in: `env` itself (a let is bound once for
        every branch), or a copy for an emitter writing each branch in a block of its own."""
        return env

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def operand(self, value: Any) -> Any:
        """A value a comparison reads, as the comparison reads it (an emitter: a temporary)."""
        return value

    def chain(self, links: list[Any]) -> Any:
        """A comparison chain's value from its links (a < b, b < c): all of them, by `and_`."""
        acc = links[0]
        for link in links[1:]:
            acc = self.and_(acc, link)
        return acc

    def logic(self, op: str, parts: list[Any]) -> Any:
        """`and`/`or` of `parts`, folded left to right with `and_`/`or_`."""
        f = self.and_ if op == "and" else self.or_
        acc = parts[0]
        for p in parts[1:]:
            acc = f(acc, p)
        return acc

    def supports(self, fn: str) -> bool:
        return callable(getattr(self, "f_" + fn, None)) or callable(getattr(self, "r_" + fn, None))

    def reduce(self, node: Reduce, x: Fn, env: Env) -> Any:
        """The value of the reduction `node` whose argument is the staged `x`. Array
        arithmetics: `r_<fn>` of the argument's values, reduced over the last axis and kept
        (the rows' shape is env[ROW], for an argument constant over the row); scalar ones: the
        argument at every element of env[ROW] (a Row), reduced by `r_<fn>` of that list."""
        f = getattr(self, "r_" + node.fn, None)
        if f is None:
            raise self.lacks(node.fn)
        rows = env.get(ROW)
        part = env.get(GATHER, {}).get(node)  # a reduction over one dim of rows spanning more
        if isinstance(rows, Row):
            return self._row_value(node, x, f, rows, env, part, paired(node))[0]
        if rows is None:
            raise ValueError(f"{node.fn}() needs rows: the formula is evaluated by rows")
        if paired(node):
            return self.paired(node, x, f, env, part)
        if part is not None:
            return self.segments(f, self.rows_of(x(env), rows), *part)
        return f(self.rows_of(x(env), rows))

    @staticmethod
    def _row_value(
        node: Reduce,
        x: Fn,
        f: Callable[[Any], Any],
        rows: Row,
        env: Env,
        part: Any,
        pair: bool = False,
    ) -> tuple[Any, int]:
        """A scalar arithmetic's `f` of the argument's values along this element's row (the
        segment along one dim where `part`, (stride, size), is given), computed once per row
        (segment) and kept in the row's cache; with this element's index in it. `pair`: a
        paired reduction (its argument holds `outer`), once per element: each reduced
        element's environment a `Paired` whose OUTER is this element's."""
        envs, key, k = rows.envs, id(node), env[POS]
        if part is not None:  # the segment of this element's row along the dim
            stride, size = part
            k = (env[POS] // stride) % size
            base = env[POS] - k * stride
            envs, key = envs[base : base + stride * size : stride], (id(node), base)
        if pair:  # a value per element
            key = (id(node), OUTER, env[POS])
        hit = rows.cache.get(key)
        if hit is None or hit[0] is not node:
            names = names_read(node.x)
            values = []
            for e in envs:
                rows.bind(e, names)
                values.append(x(Paired(e, env) if pair else e))
            hit = rows.cache[key] = (node, f(values))
        return hit[1], k

    def paired(self, node: Reduce, x: Fn, f: Callable[[Any], Any], env: Env, part: Any) -> Any:
        """An array arithmetic's paired reduction (its argument holds `outer`), one value per
        element of the rows (env[ROW], (R, L)): the argument evaluated on pair rows, one per
        element k of each row, holding the reduced elements of k's row (of k's segment along
        the dim where `part`, (stride, size), is given), every name the argument reads laid
        out that way and env[OUTER] a `Pairs`; `f` reduces each pair row (numpy_arith.paired)."""
        raise ValueError(f"the {self.name} arithmetic has no paired reduction")

    def outer(self, node: Outer, x: Fn, env: Env) -> Any:
        """The value of `outer(x)` (node) inside a paired reduction's argument: x at the element
        the reduction's value is for. Scalar arithmetics: `r_outer(value)`, x evaluated in that
        element's environment (env[OUTER]); array arithmetics: `r_outer(value, pairs)`, x
        evaluated over the rows (once per reduction, `Pairs.value`), each pair row's element
        picked (a column: one value along the pair row)."""
        f = getattr(self, "r_outer", None)
        if f is None:
            raise self.lacks("outer")
        ctx = env.get(OUTER)
        if ctx is None:
            raise ValueError("outer() outside a reduction's argument")
        if isinstance(ctx, Pairs):
            return f(ctx.value(node, x), ctx)
        return f(x(ctx))

    def segments(self, f: Callable[[Any], Any], value: Any, stride: int, size: int) -> Any:
        """An array arithmetic's reduction `f` of the last axis, over the segments of each row
        along one dim (`stride`, `size` inside the row: a reduction nested in one over more
        dims, a cross entropy's logsumexp over the classes inside its mean over the batch),
        each segment's value broadcast back over it: the rows' shape again."""
        raise ValueError(f"the {self.name} arithmetic has no reduction over part of a row")

    def gather(self, node: Gather, x: Fn, index: Fn, env: Env) -> Any:
        """The value of `gather(x, index, dim)` (node) at the elements of `env`: `x` at the
        element of each element's row whose position along the row is the index's value there.
        Array arithmetics: `r_gather(x rows, index rows)` (both as rows, env[ROW]), or
        `r_gather(x rows, index rows, stride, size)` where the rows span more dims than the
        gather's (env[GATHER]); scalar ones: `r_gather(at, index, size)`, `at(k)` the argument's
        value at the element whose position along dim is k (evaluated there only), `index` this
        element's index value (env[POS]: the element's position in its row)."""
        f = getattr(self, "r_gather", None)
        if f is None:
            raise self.lacks("gather")
        rows = env.get(ROW)
        if isinstance(rows, Row):
            names = names_read(node.x)
            n = len(rows.envs)
            stride, size = env.get(GATHER, {}).get(node, (1, n))
            p = env[POS]
            base = p - (p // stride) % size * stride  # this element's row along dim, at 0

            def at(k: int) -> Any:
                e = rows.envs[base + k * stride]
                rows.bind(e, names)
                return x(e)

            return f(at, index(env), size)
        if rows is None:
            raise ValueError("gather() needs rows: the formula is evaluated by rows")
        geometry = env.get(GATHER, {}).get(node)
        xr, tr = self.rows_of(x(env), rows), self.rows_of(index(env), rows)
        return f(xr, tr) if geometry is None else f(xr, tr, *geometry)

    def position(self, node: Position, env: Env) -> Any:
        """The value of `position(dim)` (node) at the elements of `env`: each element's index
        along dim. Array arithmetics: `r_position(rows, stride, size)`, the rows' shape
        (env[ROW]) and where the dim lies in a row (env[GATHER]; absent: the row is that dim);
        scalar ones: `r_position(k)`, k this element's index (from env[POS], its position in
        its row)."""
        f = getattr(self, "r_position", None)
        if f is None:
            raise self.lacks("position")
        rows = env.get(ROW)
        if isinstance(rows, Row):
            stride, size = env.get(GATHER, {}).get(node, (1, len(rows.envs)))
            return f(env[POS] // stride % size)
        if rows is None:
            raise ValueError("position() needs rows: the formula is evaluated by rows")
        stride, size = env.get(GATHER, {}).get(node, (1, rows[-1]))
        return f(tuple(rows), stride, size)

    def cumsum(self, node: Cumsum, x: Fn, env: Env) -> Any:
        """The value of `cumsum(x, dim)` (node) at the elements of `env`: each one's prefix sum
        along dim within its row. Array arithmetics: `r_cumsum(x rows)` along the last axis, or
        `r_cumsum(x rows, stride, size)` where the rows span more dims (env[GATHER]); scalar
        ones: `r_cumsum(values)` of the argument along this element's row (a list of the
        prefixes, computed once per row), this element's prefix picked."""
        f = getattr(self, "r_cumsum", None)
        if f is None:
            raise self.lacks("cumsum")
        rows = env.get(ROW)
        if isinstance(rows, Row):
            prefixes, k = self._row_value(node, x, f, rows, env, env.get(GATHER, {}).get(node))
            return prefixes[k]
        if rows is None:
            raise ValueError("cumsum() needs rows: the formula is evaluated by rows")
        geometry = env.get(GATHER, {}).get(node)
        xr = self.rows_of(x(env), rows)
        return f(xr) if geometry is None else f(xr, *geometry)

    def rows_of(self, value: Any, rows: Any) -> Any:
        """An argument's value as rows of the shape `rows` (array arithmetics broadcast)."""
        return value

    def lacks(self, fn: str) -> Exception:
        """The error for a function this arithmetic has no method for (lint reports it first)."""
        return ValueError(f"the {self.name} arithmetic has no function {fn!r}")


def missing(arith: Arithmetic, functions: Iterable[str]) -> list[str]:
    """The functions among `functions` (where, half and concat aside: the walker's own) that
    `arith` cannot evaluate."""
    own = ("where", "half", "concat")
    return sorted(f for f in functions if f not in own and not arith.supports(f))


_FORMULA_ARITHMETICS: list[Arithmetic] = []


def require(arith: Arithmetic) -> Arithmetic:
    """Register `arith` as one every spec formula must be evaluable in (a tier of the reference:
    numpy, mpmath, the error bound, the rounding count); returns it."""
    _FORMULA_ARITHMETICS.append(arith)
    return arith


def unsupported(functions: Iterable[str]) -> dict[str, list[str]]:
    """For each registered formula arithmetic lacking some of `functions`: its name -> those
    functions (the spec linter reports them, so that no tier meets one at run time)."""
    functions = set(functions)
    out = {ar.name: missing(ar, functions) for ar in _FORMULA_ARITHMETICS}
    return {name: fns for name, fns in out.items() if fns}


def stage(node: Node, ar: Arithmetic) -> Fn:
    """`node` as a closure env -> value in the arithmetic `ar`."""
    if isinstance(node, Num):
        v = ar.number(node.value)
        return lambda env: v
    if isinstance(node, Const):
        c = ar.constant(node.name, node.value)
        return lambda env: c
    if isinstance(node, Var):
        name = node.name
        return lambda env: env[name]
    if isinstance(node, Text):
        name, choices, negate = node.name, node.choices, node.negate
        return lambda env: (env[name] in choices) != negate
    if isinstance(node, Unary):
        x = stage(node.x, ar)
        f = ar.neg if node.op == "neg" else ar.not_
        return lambda env: f(x(env))
    if isinstance(node, Binary):
        a, b = stage(node.a, ar), stage(node.b, ar)
        f = getattr(ar, node.op)
        return lambda env: f(a(env), b(env))
    if isinstance(node, Compare):
        return _stage_compare(node, ar)
    if isinstance(node, Logic):
        parts = [stage(p, ar) for p in node.parts]
        op, logic = node.op, ar.logic
        if len(parts) == 2 and type(ar).logic is Arithmetic.logic:  # the fold: one call
            f, (p0, p1) = (ar.and_ if op == "and" else ar.or_), parts
            return lambda env: f(p0(env), p1(env))
        return lambda env: logic(op, [p(env) for p in parts])
    if isinstance(node, Where):
        return _stage_where(node, ar)
    if isinstance(node, Gather):
        x, t, gather = stage(node.x, ar), stage(node.index, ar), ar.gather  # type: ignore[arg-type]
        return lambda env: gather(node, x, t, env)
    if isinstance(node, Position):
        where_ = ar.position
        return lambda env: where_(node, env)
    if isinstance(node, Cumsum):
        x, prefix = stage(node.x, ar), ar.cumsum
        return lambda env: prefix(node, x, env)
    if isinstance(node, Reduce):
        x, reduce = stage(node.x, ar), ar.reduce
        return lambda env: reduce(node, x, env)
    if isinstance(node, Outer):
        x, outer = stage(node.x, ar), ar.outer
        return lambda env: outer(node, x, env)
    if isinstance(node, Half):  # the half's values, bound under its key by the evaluator
        key = node.key
        return lambda env: env[key]
    if isinstance(node, Concat):  # where(index of the half == 0, a, b)
        return _stage_where(Where(Compare(("eq",), (Var(node.key), Num(0))), node.a, node.b), ar)
    if isinstance(node, Call):
        f = getattr(ar, "f_" + node.fn, None)
        if f is None:
            raise ar.lacks(node.fn)
        args = [stage(a, ar) for a in node.args]
        if len(args) == 1:
            (a0,) = args
            return lambda env: f(a0(env))
        return lambda env: f(*(a(env) for a in args))
    raise TypeError(f"not an expression node: {node!r}")


def _stage_compare(node: Compare, ar: Arithmetic) -> Fn:
    operands = [stage(o, ar) for o in node.operands]
    ops = [getattr(ar, op) for op in node.ops]
    chain, operand = ar.chain, ar.operand
    default = type(ar).operand is Arithmetic.operand and type(ar).chain is Arithmetic.chain
    if len(ops) == 1 and default:  # one link, its operands read as they are
        (f,), (a, b) = ops, operands
        return lambda env: f(a(env), b(env))

    def compare(env: Env) -> Any:
        vals = [operand(o(env)) for o in operands]
        return chain([op(vals[i], vals[i + 1]) for i, op in enumerate(ops)])

    return compare


def _stage_where(node: Where, ar: Arithmetic) -> Fn:
    c, a, b = stage(node.cond, ar), stage(node.a, ar), stage(node.b, ar)
    choose, where = ar.choose, ar.where

    def select(env: Env) -> Any:
        cond = c(env)
        side = choose(cond)
        if side is None:
            return where(cond, a(env), b(env))
        return a(env) if side else b(env)

    return select


class Expression:
    """What the walker needs of a checked expression: its IR and the names it reads. Staged
    closures are cached per arithmetic on the expression itself."""

    ir: Node
    names: frozenset[str]

    def staged(self, ar: Arithmetic) -> Fn:
        cache: dict[int, tuple[Arithmetic, Fn]] = self.__dict__.setdefault("_staged", {})
        hit = cache.get(id(ar))
        if hit is None or hit[0] is not ar:
            hit = cache[id(ar)] = (ar, stage(self.ir, ar))
        return hit[1]

    def run(self, env: Env, ar: Arithmetic) -> Any:
        """The value of the expression in `ar` with the names of `env` bound."""
        return self.staged(ar)(env)


class Formula:
    """A spec formula's walk: its lets (name, expression) and branches (condition or None for
    `otherwise`, value), evaluated in an arithmetic (see the module docstring)."""

    def __init__(
        self,
        lets: Sequence[tuple[str, Expression]],
        branches: Sequence[tuple[Expression | None, Expression]],
    ):
        self.lets = dict(lets)
        self.branches = tuple(branches)

    @classmethod
    def of(cls, formula: Any) -> Formula:
        """The walk of a model Formula (records with .lets: name/value, .branches: when/value),
        made once per formula object."""
        return memo(
            "formula",
            formula,
            lambda f: cls(
                [(x.name, x.value) for x in f.lets], [(br.when, br.value) for br in f.branches]
            ),
        )

    def bind(self, env: Env, names: Iterable[str], ar: Arithmetic) -> None:
        """Bind in `env` each let among `names` (and the lets they read) not bound yet, in name
        order (an emitter's source is the same from run to run)."""
        for name in sorted(names):
            if name in self.lets and name not in env:
                x = self.lets[name]
                self.bind(env, x.names, ar)
                env[name] = ar.let(name, x.run(env, ar))

    def evaluate(self, env: Env, ar: Arithmetic, n: int | None = None) -> Any:
        """The formula's value with `env` bound (`env` is extended with the lets it binds), over
        `n` elements for an array arithmetic; None from a scalar one where no branch holds."""

        def value(i: int, x: Expression, env: Env) -> Any:
            self.bind(env, x.names, ar)
            return ar.result(x.run(env, ar))

        with ar.context():
            return ar.finish(self._walk(0, env, ar, value), n)

    def taken(self, env: Env, ar: Arithmetic, n: int | None = None) -> Any:
        """The index of the branch each element takes (the arithmetic's `nothing` where none
        does): the same walk, each branch's value being its index."""
        with ar.context():
            return ar.finish(self._walk(0, env, ar, lambda i, x, env: ar.result(ar.number(i))), n)

    def _walk(self, first: int, env: Env, ar: Arithmetic, value: Callable[..., Any]) -> Any:
        """The value of the branches from `first` on: the first true one wins, `otherwise` ends
        the walk, a branch no element takes is skipped, one some take is the arithmetic's
        `select`."""
        for i in range(first, len(self.branches)):
            when, val = self.branches[i]
            if when is None:
                return value(i, val, ar.scope(env))
            self.bind(env, when.names, ar)
            cond = when.run(env, ar)
            d = ar.decide(cond)
            if d is True:
                return value(i, val, ar.scope(env))
            if d is None:
                return ar.select(
                    cond,
                    lambda i=i, val=val: value(i, val, ar.scope(env)),
                    lambda i=i: self._walk(i + 1, ar.scope(env), ar, value),
                )
        return ar.nothing()

    def expressions(self) -> list[Expression]:
        """Every expression of the formula: the lets' values, the conditions and the branch
        values (for static questions: which functions, names or node kinds it uses)."""
        out = list(self.lets.values())
        return out + [x for br in self.branches for x in br if x is not None]

    def needs(self, hits: Iterable[int]) -> set[str]:
        """The lets an evaluation that takes the branches `hits` (indices) binds: those the
        conditions tested up to the last of them and the values of `hits` read, closed over
        lets reading lets."""
        hits = set(hits)
        names: set[str] = set()
        for i, (when, val) in enumerate(self.branches[: max(hits, default=-1) + 1]):
            if when is not None:
                names |= when.names
            if i in hits:
                names |= val.names
        todo = [n for n in names if n in self.lets]
        while todo:
            for n in self.lets[todo.pop()].names:
                if n in self.lets and n not in names:
                    names.add(n)
                    todo.append(n)
        return names & set(self.lets)


def tensors_read(spec: Any) -> tuple[str, ...]:
    """The tensor inputs of `spec` (an OpSpec) that its formula names, in parameter order: what
    an evaluation reads. An input only the checks read (an optional tensor whose null is
    `absent`, say) is not among them, and may be null in a call the formula is evaluated on.
    A tensor read only through its halves is not among them either: the halves' keys are, after
    the inputs (then the concatenation's half index), each a view the evaluator binds
    (conformance/spec/split.py). A tensor whose element count `numel(x)` or dim size
    `size(x, k)` the formula reads is among them (its shape places the others)."""
    return memo("tensors_read", spec, _tensors_read)


def _tensors_read(spec: Any) -> tuple[str, ...]:
    direct: set[str] = set()
    split: list[Half | Concat] = []
    for e in Formula.of(spec.formula).expressions():
        nodes = walk_ir(e.ir)
        direct |= {n.name for n in nodes if isinstance(n, Var)}
        # numel(x) reads x's shape: x is placed with the rest (a gather's elements need it)
        direct |= {
            n.name[len("numel(") : -1]
            for n in nodes
            if isinstance(n, Var) and n.name.startswith("numel(") and n.name.endswith(")")
        }
        direct |= {  # size(x, k) likewise
            n.name[len("size(") :].split(",")[0]
            for n in nodes
            if isinstance(n, Var) and n.name.startswith("size(") and n.name.endswith(")")
        }
        split += [n for n in nodes if isinstance(n, Half | Concat)]
    order = {p.name: i for i, p in enumerate(spec.tensor_inputs)}
    keys = sorted(
        {n.key: n for n in split}.values(),
        key=lambda n: (isinstance(n, Concat), order.get(getattr(n, "x", ""), 0), n.key),
    )
    inputs = tuple(p.name for p in spec.tensor_inputs if p.name in direct)
    return inputs + tuple(n.key for n in keys)
