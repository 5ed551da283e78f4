"""The spec expression language: formulas, `let` bindings and value constraints.

An expression is parsed with `ast` and checked node by node against a whitelist, then lowered to
the IR of ir.py, which walk.py evaluates in an arithmetic (numpy's: numpy_arith.py). Nothing is
ever passed to eval/exec/compile, so a spec can only name parameters, numbers and the functions
below. Grammar (Python syntax, this subset only):

    numbers, True/False, the constants pi e inf nan, parameter and `let` names,
    + - * / ** (binary), unary - + not, and / or, comparisons (chains allowed),
    name == "text" / name != "text" / name in ("a", "b") for string parameters,
    calls of: where exp expm1 log1p log erf erfc erfinv tanh sqrt abs sign minimum maximum conj,
    reductions sum mean amax amin prod logsumexp any all, as fn(x, dim) where dim is an int
    literal, a tuple of them, an int/int_array parameter's name or `all` (every dim),
    gather(x, target, dim): x at index target along dim (dim an int literal or int parameter),
    position(dim): each element's index along dim, an integer (one-hot: position(dim) == t),
    cumsum(x, dim): each element's prefix sum along dim (dim an int literal or int parameter),
    outer(x), in a reduction's argument only (not inside a gather, cumsum or outer there): x
    at the element the reduction's value is for, while the rest of the argument runs over the
    reduced elements -- sum(maximum(0, outer(y) - x), -1) at element j is the sum over i of
    max(0, y_j - x_i), a value per element (a paired reduction, ir.Outer),
    half(x, dim, k) (the first, k = 0, or second, k = 1, half of tensor x along dim) and
    concat(a, b, dim) (a as the first half along dim, b as the second), dim an int literal or
    an int parameter's name,
    numel(x): the element count of tensor x's own shape (unbroadcast),
    size(x, k): the size of tensor x's own dim k (an int literal, negative wraps; a 0-d x: 1)
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
    Reduce,
    Text,
    Unary,
    Var,
    Where,
    position,
)
from .numpy_arith import NUMPY
from .walk import Expression

MAX_SOURCE = 4000
MAX_NODES = 400
MAX_DEPTH = 40
MAX_EXPONENT = 64


class ExprError(ValueError):
    """A rejected expression; `line` and `col` are 1-based positions inside the expression text."""

    def __init__(self, message: str, line: int = 1, col: int = 1):
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col


# the functions of the language and their arities; each arithmetic (numpy_arith.py, mpeval.py,
# arrays.py, ...) implements them as methods f_<name>, `where` is the walker's own (walk.py)
FUNCTIONS: dict[str, int] = {
    "where": 3,
    "exp": 1,
    "expm1": 1,
    "log1p": 1,
    "log": 1,
    "erf": 1,
    "erfc": 1,
    "erfinv": 1,
    "tanh": 1,
    "sqrt": 1,
    "abs": 1,
    "sign": 1,  # -1, 0 or 1 (NaN for NaN; the sign of a zero is not kept)
    "minimum": 2,
    "maximum": 2,
    "conj": 1,  # the complex conjugate; the identity on real values
}
# reductions: fn(x, dim), the value broadcast back over the reduced dims (keepdim); each
# arithmetic implements them as methods r_<name> (walk.py: Arithmetic.reduce)
REDUCTIONS: dict[str, str] = {
    "sum": "the sum (exact accumulation in the reference)",
    "mean": "the sum divided by the number of reduced elements",
    "amax": "the largest value (NaN if any is NaN)",
    "amin": "the smallest value (NaN if any is NaN)",
    "prod": "the product",
    "logsumexp": "log(sum(exp(x))), computed as m + log(sum(exp(x - m))) with m = amax(x)",
    "any": "1 where some value is nonzero (true), else 0",
    "all": "1 where every value is nonzero (true), else 0",
}
FUNCTIONS.update({name: 2 for name in REDUCTIONS})
# gather(x, target, dim): x's element at index `target` along dim (ir.Gather); each arithmetic
# implements it as r_gather (walk.py: Arithmetic.gather)
FUNCTIONS["gather"] = 3
# position(dim): each element's index along dim, an integer (ir.Position; the one-hot of a
# target is `position(dim) == target`); each arithmetic implements it as r_position
# (walk.py: Arithmetic.position)
FUNCTIONS["position"] = 1
# cumsum(x, dim): each element's prefix sum along dim (ir.Cumsum, a row operation); each
# arithmetic implements it as r_cumsum (walk.py: Arithmetic.cumsum)
FUNCTIONS["cumsum"] = 2
# outer(x): x at the element a reduction's value is for, in that reduction's argument only
# (ir.Outer; the reduction is then a paired one, walk.py: Arithmetic.paired); each arithmetic
# implements it as r_outer (walk.py: Arithmetic.outer)
FUNCTIONS["outer"] = 1
# the split of a tensor in two halves along a dim (conformance/spec/split.py binds them): the
# walker's own, like where
SPLITS: dict[str, str] = {
    "half": "half(x, dim, k): the first (k = 0) or second (k = 1) half of tensor x along dim",
    "concat": "concat(a, b, dim): a as the first half along dim, b as the second",
}
FUNCTIONS.update({name: 3 for name in SPLITS})
#: numel(x) reads this name, which the environment binds to x's element count
NUMEL = "numel({})"
#: size(x, k) reads this name, bound to the size of x's own dim k (k as written, negative or not)
SIZE = "size({}, {})"
#: a reduction over a tensor laid along a dim (`sum(x, weight)`) reads this name, bound to the
#: dims that tensor broadcasts over (every dim of its `of` but `dim`; all of them for one element)
SPANS = "dims-not-spanned({})"
MAX_DIMS = 8  # a reduction's literal dims: each in [-8, 7]
CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

_BINOPS: dict[type, str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.Pow: "pow",
}
_CMPOPS: dict[type, str] = {
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
    ast.Eq: "eq",
    ast.NotEq: "ne",
}

Env = dict[str, Any]


@dataclass
class Expr(Expression):
    """A checked expression lowered to the IR (ir.py): `evaluate(env)` with every name in
    `names` bound evaluates it with numpy; `run(env, arithmetic)` with any other arithmetic."""

    source: str
    names: frozenset[str]
    functions: frozenset[str]
    ir: Node = field(repr=False)

    def evaluate(self, env: Env) -> Any:
        with np.errstate(all="ignore"):
            return self.staged(NUMPY)(env)


def _pos(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1


def _fail(node: ast.AST, message: str) -> ExprError:
    return ExprError(message, *_pos(node))


class _Compiler:
    """Checks a parsed expression node by node against the whitelist and lowers it to the IR."""

    def __init__(self, known: Iterable[str], strings: Iterable[str]):
        self.known = set(known)
        self.strings = set(strings)  # names whose values are strings
        self.names: set[str] = set()
        self.funcs: set[str] = set()
        # what encloses the node being compiled, innermost last: "reduce" (a reduction's
        # argument), "along" (a gather's or cumsum's arguments), "outer" (an outer's argument)
        self.scopes: list[str] = []

    def within(self, scope: str, node: ast.AST, depth: int) -> Node:
        """`node` compiled as part of a `scope` (see `scopes`)."""
        self.scopes.append(scope)
        try:
            return self.compile(node, depth)
        finally:
            self.scopes.pop()

    def compile(self, node: ast.AST, depth: int = 0) -> Node:
        if depth > MAX_DEPTH:
            raise _fail(node, f"expression nested deeper than {MAX_DEPTH} levels")
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise _fail(node, f"{_describe(node)} is not allowed in a spec expression")
        return method(node, depth + 1)

    def _Constant(self, node: ast.Constant, depth: int) -> Node:
        v = node.value
        if isinstance(v, bool):
            return Num(v)
        if isinstance(v, int | float):
            if isinstance(v, int) and abs(v) > 10**30:
                raise _fail(node, "integer literal too large (write it as a float, e.g. 1e300)")
            return Num(v)
        if isinstance(v, str):
            raise _fail(node, "a string may only be compared with a string parameter (== != in)")
        raise _fail(node, f"constant {v!r} is not allowed")

    def _Name(self, node: ast.Name, depth: int) -> Node:
        name = node.id
        if name in self.known:
            self.names.add(name)
            return Var(name)
        if name in CONSTANTS:
            return Const(name, CONSTANTS[name])
        if name in FUNCTIONS:
            raise _fail(node, f"function {name!r} must be called, e.g. {name}(x)")
        raise _fail(node, f"unknown name {name!r} (known: {', '.join(sorted(self.known))})")

    def _BinOp(self, node: ast.BinOp, depth: int) -> Node:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise _fail(node, f"operator {type(node.op).__name__} is not allowed")
        if isinstance(node.op, ast.Pow):
            for side in (node.left, node.right):
                if any(
                    isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) for n in ast.walk(side)
                ):
                    raise _fail(node, "powers cannot be nested (write the exponent out)")
            r = node.right
            if isinstance(r, ast.UnaryOp) and isinstance(r.operand, ast.Constant):
                r = r.operand
            if (
                isinstance(r, ast.Constant)
                and isinstance(r.value, int | float)
                and abs(r.value) > MAX_EXPONENT
            ):
                raise _fail(node, f"exponent {r.value!r} is larger than {MAX_EXPONENT}")
        return Binary(op, self.compile(node.left, depth), self.compile(node.right, depth))

    def _UnaryOp(self, node: ast.UnaryOp, depth: int) -> Node:
        x = self.compile(node.operand, depth)
        if isinstance(node.op, ast.USub):
            return Unary("neg", x)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.Not):
            return Unary("not", x)
        raise _fail(node, f"operator {type(node.op).__name__} is not allowed")

    def _BoolOp(self, node: ast.BoolOp, depth: int) -> Node:
        parts = tuple(self.compile(v, depth) for v in node.values)
        return Logic("and" if isinstance(node.op, ast.And) else "or", parts)

    def _string_side(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id in self.strings

    def _Compare(self, node: ast.Compare, depth: int) -> Node:
        left = node.left
        if self._string_side(left):
            return self._string_compare(node)
        operands = [self.compile(left, depth)]
        ops = []
        for op, comp in zip(node.ops, node.comparators, strict=True):
            f = _CMPOPS.get(type(op))
            if f is None:
                raise _fail(node, f"comparison {type(op).__name__} is not allowed here")
            if self._string_side(comp):
                raise _fail(comp, 'write string comparisons as name == "text"')
            ops.append(f)
            operands.append(self.compile(comp, depth))
        return Compare(tuple(ops), tuple(operands))

    def _string_compare(self, node: ast.Compare) -> Node:
        if len(node.ops) != 1:
            raise _fail(node, "a string comparison cannot be chained")
        name = node.left.id  # type: ignore[attr-defined]
        self.names.add(name)
        op, comp = node.ops[0], node.comparators[0]
        if isinstance(op, ast.Eq | ast.NotEq):
            if not (isinstance(comp, ast.Constant) and isinstance(comp.value, str)):
                raise _fail(comp, f"{name} can only be compared with a string literal")
            return Text(name, isinstance(op, ast.NotEq), frozenset({comp.value}))
        if isinstance(op, ast.In | ast.NotIn):
            if not isinstance(comp, ast.Tuple | ast.List | ast.Set) or not all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in comp.elts
            ):
                raise _fail(comp, f"{name} in (...) needs a list of string literals")
            choices = frozenset(e.value for e in comp.elts)  # type: ignore[attr-defined]
            return Text(name, isinstance(op, ast.NotIn), choices)
        raise _fail(node, "strings support only ==, != and in")

    def _Call(self, node: ast.Call, depth: int) -> Node:
        if isinstance(node.func, ast.Attribute):
            raise _fail(node, "attribute access is not allowed; call a built-in function by name")
        if not isinstance(node.func, ast.Name):
            raise _fail(
                node, f"only the built-in functions can be called, not {_describe(node.func)}"
            )
        fname = node.func.id
        if fname == "numel":
            return self._numel(node)
        if fname == "size":
            return self._size(node)
        if fname not in FUNCTIONS:
            raise _fail(node, f"unknown function {fname!r} (allowed: {', '.join(FUNCTIONS)})")
        if node.keywords:
            raise _fail(node, f"{fname}() takes positional arguments only")
        arity = FUNCTIONS[fname]
        if len(node.args) != arity:
            raise _fail(node, f"{fname}() takes {arity} argument(s), got {len(node.args)}")
        self.funcs.add(fname)
        if fname in REDUCTIONS:
            return self._reduce(fname, node, depth)
        if fname == "gather":
            return self._gather(node, depth)
        if fname == "position":
            return self._position(node)
        if fname == "cumsum":
            return self._cumsum(node, depth)
        if fname == "outer":
            return self._outer(node, depth)
        if fname == "half":
            return self._half(node)
        if fname == "concat":
            a, b = (self.compile(x, depth) for x in node.args[:2])
            dim, param = self._split_dim(fname, node.args[2])
            c = Concat(a, b, dim, param)
            self.names.add(c.key)
            return c
        args = tuple(self.compile(a, depth) for a in node.args)
        if fname == "where":
            return Where(*args)
        return Call(fname, args)

    def _numel(self, node: ast.Call) -> Node:
        """numel(x): the element count of tensor x's own shape (not broadcast), an integer;
        bound in the environment as the name NUMEL.format(x) (checks.base.attribute_env)."""
        if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Name):
            raise _fail(node, "numel() takes one tensor parameter's name")
        name = node.args[0].id
        if name not in self.known:
            raise _fail(node.args[0], f"numel(): {name!r} is not a parameter")
        self.names.add(name)
        return Var(NUMEL.format(name))

    def _size(self, node: ast.Call) -> Node:
        """size(x, k): the size of tensor x's own dim k (an int literal in [-8, 7], negative
        wrapping by x's rank; a 0-d x counts as one dim of size 1), an integer; bound in the
        environment as the name SIZE.format(x, k) (checks.base.attribute_env). A batch mean's
        divisor: the size of dim 0."""
        if len(node.args) != 2 or node.keywords or not isinstance(node.args[0], ast.Name):
            raise _fail(node, "size() takes a tensor parameter's name and an int literal dim")
        name = node.args[0].id
        if name not in self.known:
            raise _fail(node.args[0], f"size(): {name!r} is not a parameter")
        k = _literal_dim("size", node.args[1])
        self.names.add(name)
        return Var(SIZE.format(name, k))

    def _reduce(self, fname: str, node: ast.Call, depth: int) -> Node:
        """fn(x, dim): dim is an int literal, a tuple of them, a parameter's name or `all`."""
        x = self.within("reduce", node.args[0], depth)
        dim = node.args[1]
        if isinstance(dim, ast.Name) and dim.id == "all":
            return Reduce(fname, x)
        if isinstance(dim, ast.Name):
            if dim.id not in self.known:
                raise _fail(dim, f"{fname}(): dim {dim.id!r} is not a parameter (nor `all`)")
            self.names.add(dim.id)
            return Reduce(fname, x, param=dim.id)
        items = dim.elts if isinstance(dim, ast.Tuple) else [dim]
        dims = tuple(_literal_dim(fname, d) for d in items)
        if not dims:
            raise _fail(dim, f"{fname}(): an empty tuple of dims (write `all` for every dim)")
        return Reduce(fname, x, dims=dims)

    def _gather(self, node: ast.Call, depth: int) -> Node:
        """gather(x, target, dim): dim is one int literal or an int parameter's name."""
        x = self.within("along", node.args[0], depth)
        index = self.within("along", node.args[1], depth)
        dim = node.args[2]
        if isinstance(dim, ast.Name):
            if dim.id not in self.known:
                raise _fail(dim, f"gather(): dim {dim.id!r} is not a parameter")
            self.names.add(dim.id)
            return Gather("gather", x, param=dim.id, index=index)
        return Gather("gather", x, dims=(_literal_dim("gather", dim),), index=index)

    def _position(self, node: ast.Call) -> Node:
        """position(dim): dim is one int literal or an int parameter's name."""
        (dim,) = node.args
        if isinstance(dim, ast.Name):
            if dim.id not in self.known:
                raise _fail(dim, f"position(): dim {dim.id!r} is not a parameter")
            self.names.add(dim.id)
            return position(param=dim.id)
        if isinstance(dim, ast.Tuple):
            raise _fail(dim, "position(): one dim (an int literal or an int parameter)")
        return position(dims=(_literal_dim("position", dim),))

    def _cumsum(self, node: ast.Call, depth: int) -> Node:
        """cumsum(x, dim): dim is one int literal or an int parameter's name."""
        x = self.within("along", node.args[0], depth)
        d, param = self._split_dim("cumsum", node.args[1])
        return Cumsum("cumsum", x, dims=None if d is None else (d,), param=param)

    def _outer(self, node: ast.Call, depth: int) -> Node:
        """outer(x): only where the innermost scope around it is a reduction's argument (not a
        gather's, a cumsum's or another outer's inside it): x is read at the element that
        reduction's value is for."""
        line, col = _pos(node)
        where = f"outer() at line {line}, column {col}" if line > 1 else f"outer() at column {col}"
        scope = self.scopes[-1] if self.scopes else None
        if scope is None:
            raise _fail(
                node,
                f"{where} is outside any reduction: it reads its argument at the element a "
                "reduction's value is for, so it may appear only in a reduction's argument "
                "(sum(maximum(0, outer(y) - x), -1))",
            )
        if scope != "reduce":
            inside = "another outer()" if scope == "outer" else "a gather() or cumsum()"
            raise _fail(
                node,
                f"{where} is inside {inside}: outer() may appear in a reduction's argument, "
                "not in a gather's, a cumsum's or an outer's",
            )
        return Outer(self.within("outer", node.args[0], depth))

    def _split_dim(self, fname: str, dim: ast.AST) -> tuple[int | None, str | None]:
        """A split's dim: an int literal (-8..7) or a parameter's name (lint: an int one)."""
        if isinstance(dim, ast.Name):
            if dim.id not in self.known:
                raise _fail(dim, f"{fname}(): dim {dim.id!r} is not a parameter")
            self.names.add(dim.id)
            return None, dim.id
        if isinstance(dim, ast.Tuple):
            raise _fail(
                dim, f"{fname}(): splits along one dim (an int literal or an int parameter)"
            )
        return _literal_dim(fname, dim), None

    def _half(self, node: ast.Call) -> Node:
        """half(x, dim, k): x a parameter (lint: a tensor input), k the literal 0 or 1."""
        x, dim, k = node.args
        if not isinstance(x, ast.Name) or x.id not in self.known:
            raise _fail(x, "half(): the first argument must be a tensor parameter's name")
        if not (isinstance(k, ast.Constant) and type(k.value) is int and k.value in (0, 1)):
            raise _fail(k, "half(): the third argument is 0 (the first half) or 1 (the second)")
        d, param = self._split_dim("half", dim)
        h = Half(x.id, k.value, d, param)
        self.names |= {x.id, h.key}
        return h


def _literal_dim(fname: str, node: ast.AST) -> int:
    v = node
    sign = 1
    if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub):
        v, sign = v.operand, -1
    if not isinstance(v, ast.Constant) or isinstance(v.value, bool) or not isinstance(v.value, int):
        raise _fail(
            node, f"{fname}(): dim must be an int literal, a tuple of them, a parameter or `all`"
        )
    d = sign * v.value
    if not -MAX_DIMS <= d < MAX_DIMS:
        raise _fail(node, f"{fname}(): dim {d} is out of range [-{MAX_DIMS}, {MAX_DIMS - 1}]")
    return d


def _describe(node: ast.AST) -> str:
    kinds = {
        "Attribute": "attribute access",
        "Subscript": "subscripting",
        "Lambda": "a lambda",
        "ListComp": "a comprehension",
        "GeneratorExp": "a generator",
        "DictComp": "a comprehension",
        "SetComp": "a comprehension",
        "NamedExpr": "an assignment expression",
        "IfExp": "an if-expression (use where(cond, a, b))",
        "Starred": "argument unpacking",
        "JoinedStr": "an f-string",
    }
    return kinds.get(type(node).__name__, f"syntax {type(node).__name__}")


def compile_expr(source: Any, known: Iterable[str], strings: Iterable[str] = ()) -> Expr:
    """Parse and check `source`; raises ExprError naming the offending position."""
    if isinstance(source, bool) or not isinstance(source, str | int | float):
        raise ExprError(f"an expression must be text or a number, not {type(source).__name__}")
    text = str(source).strip()
    if not text:
        raise ExprError("empty expression")
    if len(text) > MAX_SOURCE:
        raise ExprError(f"expression longer than {MAX_SOURCE} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ExprError(f"expression cannot be parsed: {type(exc).__name__}") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > MAX_NODES:
        raise ExprError(f"expression has {count} syntax nodes (at most {MAX_NODES})")
    comp = _Compiler(known, strings)
    node = comp.compile(tree.body)
    return Expr(text, frozenset(comp.names), frozenset(comp.funcs), node)
