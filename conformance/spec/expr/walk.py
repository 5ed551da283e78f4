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
  and hands the branches some elements take to the arithmetic's `merge`.

What an arithmetic decides (its methods, see `Arithmetic`): the values of literals and constants,
the operators (division by zero, NaN in comparisons: IEEE in every float arithmetic), NaN in
minimum/maximum (propagated), and each function of the language as a method `f_<name>`. An
arithmetic that lacks a function the spec uses is found by `missing` (at lint time).

Expressions are *staged*: the walk is done once per (expression, arithmetic) into closures, so
evaluating one is a call per node, no dispatch on node kinds (numpy chunks, mpmath elements).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .ir import Binary, Call, Compare, Const, Logic, Node, Num, Text, Unary, Var, Where

Env = dict[str, Any]
Fn = Callable[[Env], Any]


class Arithmetic:
    """The values an expression is evaluated in. Subclasses define the operators below (names
    from ir.BINARY and ir.COMPARE), `f_<name>` for each language function they support, and,
    for a formula, `decide` and `merge`."""

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

    def merge(self, base: Any, pending: list[tuple[Any, Callable[[], Any]]], n: int | None) -> Any:
        """The formula's value: `base` (the first branch every element takes; None if none),
        overridden by each (condition, value) of `pending`, last first."""
        return base

    def result(self, value: Any) -> Any:
        """A branch's value as the formula returns it."""
        return value

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
        return callable(getattr(self, "f_" + fn, None))

    def lacks(self, fn: str) -> Exception:
        """The error for a function this arithmetic has no method for (lint reports it first)."""
        return ValueError(f"the {self.name} arithmetic has no function {fn!r}")


def missing(arith: Arithmetic, functions: Iterable[str]) -> list[str]:
    """The functions among `functions` (where aside: the walker's own) that `arith` cannot
    evaluate."""
    return sorted(f for f in functions if f != "where" and not arith.supports(f))


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
        hit = _WALKS.get(id(formula))
        if hit is None or hit[0] is not formula:
            walk = cls(
                [(x.name, x.value) for x in formula.lets],
                [(br.when, br.value) for br in formula.branches],
            )
            hit = _WALKS[id(formula)] = (formula, walk)
        return hit[1]

    def bind(self, env: Env, names: Iterable[str], ar: Arithmetic) -> None:
        """Bind in `env` each let among `names` (and the lets they read) not bound yet."""
        for name in names:
            if name in self.lets and name not in env:
                x = self.lets[name]
                self.bind(env, x.names, ar)
                env[name] = x.run(env, ar)

    def evaluate(self, env: Env, ar: Arithmetic, n: int | None = None) -> Any:
        """The formula's value with `env` bound (`env` is extended with the lets it binds), over
        `n` elements for an array arithmetic; None from a scalar one where no branch holds."""

        def value(x: Expression) -> Any:
            self.bind(env, x.names, ar)
            return ar.result(x.run(env, ar))

        with ar.context():
            pending: list[tuple[Any, Callable[[], Any]]] = []
            base = None
            for when, val in self.branches:
                if when is None:
                    base = value(val)
                    break
                self.bind(env, when.names, ar)
                cond = when.run(env, ar)
                d = ar.decide(cond)
                if d is True:
                    base = value(val)
                    break
                if d is None:
                    pending.append((cond, lambda val=val: value(val)))
            return ar.merge(base, pending[::-1], n)


_WALKS: dict[int, tuple[Any, Formula]] = {}
