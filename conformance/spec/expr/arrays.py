"""Evaluating a compiled spec expression with another array library (jax.numpy, numpy), so that
an adapter can run a formula written in the spec: the JAX adapter differentiates the forward
of `bindings.jax.forward` with jax.vjp.

The expression's IR is walked by conformance/spec/expr/walk.py; this module is the arithmetic
(ArrayArithmetic) it is handed. Arithmetic goes through the library's functions, so Python
scalars stay weakly typed (a float32 tensor times a FLOAT scalar stays float32 in JAX) and a
division by zero gives inf or NaN, never an exception. `where` with a condition that is a plain
bool (a string comparison, say) evaluates only the branch it takes: the other one, an overflow
for instance, then cannot put 0 * inf = NaN into a gradient.
"""

from __future__ import annotations

from typing import Any

from .language import FUNCTIONS
from .walk import Arithmetic, Env, Expression

BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "pow": "power"}
COMPARE = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal",
           "ne": "not_equal"}  # fmt: skip


class ArrayArithmetic(Arithmetic):
    """An array library's functions as an arithmetic of the walker (walk.py), by name: the
    elementwise functions of the language plus add, subtract, ..., less, ..., logical_and/or/not,
    negative and where. Literals stay Python numbers (weakly typed); a condition that is a
    plain bool decides where() for every element, so only the side taken is evaluated."""

    def __init__(self, name: str, fn: dict[str, Any]):
        self.name = name
        self.fn = fn
        for op, lib in (*BINARY.items(), *COMPARE.items()):
            setattr(self, op, fn[lib])
        for f in FUNCTIONS:
            if f != "where" and f in fn:
                setattr(self, "f_" + f, fn[f])
        self.neg = fn["negative"]
        self.where = fn["where"]

    def not_(self, x: Any) -> Any:
        return (not x) if isinstance(x, bool) else self.fn["logical_not"](x)

    def and_(self, a: Any, b: Any) -> Any:
        if isinstance(a, bool) and isinstance(b, bool):
            return a and b
        return self.fn["logical_and"](a, b)

    def or_(self, a: Any, b: Any) -> Any:
        if isinstance(a, bool) and isinstance(b, bool):
            return a or b
        return self.fn["logical_or"](a, b)

    def choose(self, cond: Any) -> bool | None:
        return cond if isinstance(cond, bool) else None


def jax_namespace(jax: Any) -> ArrayArithmetic:
    """jax.numpy (and jax.scipy.special's erf family) as an arithmetic."""
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
    return ArrayArithmetic("jax.numpy", fn)


def evaluate_with(expr: Expression, env: Env, ns: ArrayArithmetic) -> Any:
    """The value of `expr` with the names of `env` bound, computed by the library `ns`."""
    return expr.run(env, ns)
