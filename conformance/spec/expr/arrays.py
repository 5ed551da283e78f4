"""Evaluating a compiled spec expression with another array library (jax.numpy, numpy), so that
an adapter can run a formula written in the spec: the JAX adapter differentiates the forward
of `bindings.jax.forward` with jax.vjp.

The tree was validated when the expression was compiled (conformance/spec/expr/language.py), so only the
whitelisted node kinds appear. Arithmetic goes through the library's functions, so Python
scalars stay weakly typed (a float32 tensor times a FLOAT scalar stays float32 in JAX) and a
division by zero gives inf or NaN, never an exception. `where` with a condition that is a plain
bool (a string comparison, say) evaluates only the branch it takes: the other one, an overflow
for instance, then cannot put 0 * inf = NaN into a gradient.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from .language import CONSTANTS, Expr

FUNCTIONS = ("exp", "expm1", "log1p", "log", "erf", "erfc", "erfinv", "tanh", "sqrt", "abs", "minimum",
             "maximum", "conj")  # fmt: skip
BINARY = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "true_divide",
          ast.Pow: "power"}  # fmt: skip
COMPARE = {ast.Lt: "less", ast.LtE: "less_equal", ast.Gt: "greater", ast.GtE: "greater_equal",
           ast.Eq: "equal", ast.NotEq: "not_equal"}  # fmt: skip


@dataclass(frozen=True)
class Namespace:
    """The functions an expression needs, by name: the elementwise functions of the language
    plus add, subtract, ..., less, ..., logical_and/or/not, negative and where."""

    fn: dict[str, Any]


def jax_namespace(jax: Any) -> Namespace:
    jnp = jax.numpy
    fn = {name: getattr(jnp, name) for name in (*BINARY.values(), *COMPARE.values())}
    fn.update({name: getattr(jnp, name) for name in FUNCTIONS if hasattr(jnp, name)})
    fn.update(
        erf=jax.scipy.special.erf,
        erfc=jax.scipy.special.erfc,
        erfinv=jax.scipy.special.erfinv,
        where=jnp.where,
        logical_and=jnp.logical_and,
        logical_or=jnp.logical_or,
        logical_not=jnp.logical_not,
        negative=jnp.negative,
        abs=jnp.abs,
    )
    return Namespace(fn)


def evaluate_with(expr: Expr, env: dict[str, Any], ns: Namespace) -> Any:
    """The value of `expr` with the names of `env` bound, computed by the library `ns`."""
    return _Walk(ns.fn, env).run(expr._tree)  # noqa: SLF001 - the validated tree


class _Walk:
    def __init__(self, fn: dict[str, Any], env: dict[str, Any]):
        self.fn, self.env = fn, env

    def run(self, node: Any) -> Any:
        method = getattr(self, f"_{type(node).__name__}")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        return self.env[node.id] if node.id in self.env else CONSTANTS[node.id]

    def _BinOp(self, node: ast.BinOp) -> Any:
        return self.fn[BINARY[type(node.op)]](self.run(node.left), self.run(node.right))

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        x = self.run(node.operand)
        if isinstance(node.op, ast.Not):
            return (not x) if isinstance(x, bool) else self.fn["logical_not"](x)
        return self.fn["negative"](x) if isinstance(node.op, ast.USub) else x

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        vals = [self.run(v) for v in node.values]
        if all(isinstance(v, bool) for v in vals):
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        op = self.fn["logical_and" if isinstance(node.op, ast.And) else "logical_or"]
        acc = vals[0]
        for v in vals[1:]:
            acc = op(acc, v)
        return acc

    def _Compare(self, node: ast.Compare) -> Any:
        left = node.left
        if isinstance(left, ast.Name) and isinstance(self.env.get(left.id), str):
            value, op, comp = self.env[left.id], node.ops[0], node.comparators[0]
            if isinstance(op, ast.Eq | ast.NotEq):
                return (value == comp.value) == isinstance(op, ast.Eq)  # type: ignore[attr-defined]
            choices = {e.value for e in comp.elts}  # type: ignore[attr-defined]
            return (value in choices) == isinstance(op, ast.In)
        acc = None
        a = self.run(left)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            b = self.run(comp)
            r = self.fn[COMPARE[type(op)]](a, b)
            acc = r if acc is None else self.fn["logical_and"](acc, r)
            a = b
        return acc

    def _Call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]
        if name == "where":
            cond = self.run(node.args[0])
            if isinstance(cond, bool):  # decided for every element: the other side is not built
                return self.run(node.args[1] if cond else node.args[2])
            return self.fn["where"](cond, self.run(node.args[1]), self.run(node.args[2]))
        return self.fn[name](*(self.run(a) for a in node.args))
