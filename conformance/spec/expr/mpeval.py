"""Evaluating a compiled spec expression in arbitrary precision (mpmath), IEEE-style: a NaN or
infinity where numpy would give one, never an exception or a complex number. The reference
engine uses it to decide roundings float64 cannot (reference/precise.py)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from .language import PY_COMPARE, Env, ExprError


class MpEval:
    """Walks an already validated tree (so only whitelisted node kinds can appear)."""

    def __init__(self, m: Any):
        self.m = m
        nan = m.nan
        real = self._real

        def guarded(f, domain):
            return lambda x: real(f(x)) if x != x or domain(x) else nan

        self.funcs: dict[str, Callable[..., Any]] = {
            "exp": m.exp,
            "expm1": m.expm1,
            "erf": m.erf,
            "erfc": m.erfc,
            "erfinv": guarded(m.erfinv, lambda x: -1 <= x <= 1),
            "tanh": m.tanh,
            "abs": abs,
            "conj": m.conj,
            "log": guarded(m.log, lambda x: x >= 0),
            "log1p": guarded(m.log1p, lambda x: x >= -1),
            "sqrt": guarded(m.sqrt, lambda x: x >= 0),
            "minimum": lambda a, b: a if a != a else (b if b != b else min(a, b)),
            "maximum": lambda a, b: a if a != a else (b if b != b else max(a, b)),
        }

    def _real(self, x: Any) -> Any:
        return self.m.nan if isinstance(x, self.m.mpc) else x

    def _div(self, a: Any, b: Any) -> Any:
        m = self.m
        if b == 0:
            if a != a or a == 0:
                return m.nan
            return -m.inf if a < 0 else m.inf  # mpmath has no signed zero: b counts as +0
        return a / b

    def _pow(self, a: Any, b: Any) -> Any:
        try:
            return self._real(self.m.power(a, b))
        except (ZeroDivisionError, ValueError):
            return self.m.inf

    def run(self, node: ast.AST, env: Env) -> Any:
        m = self.m
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, bool) else m.mpf(node.value)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            return {"pi": m.pi, "e": m.e, "inf": m.inf, "nan": m.nan}[node.id]
        if isinstance(node, ast.BinOp):
            a, b = self.run(node.left, env), self.run(node.right, env)
            op = type(node.op)
            if op is ast.Add:
                return a + b
            if op is ast.Sub:
                return a - b
            if op is ast.Mult:
                return a * b
            if op is ast.Div:
                return self._div(a, b)
            return self._pow(a, b)
        if isinstance(node, ast.UnaryOp):
            x = self.run(node.operand, env)
            if isinstance(node.op, ast.Not):
                return not x
            return -x if isinstance(node.op, ast.USub) else x
        if isinstance(node, ast.BoolOp):
            vals = [self.run(v, env) for v in node.values]
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        if isinstance(node, ast.Compare):
            if isinstance(node.left, ast.Name) and isinstance(env.get(node.left.id), str):
                v, op, comp = env[node.left.id], node.ops[0], node.comparators[0]
                if isinstance(op, ast.Eq | ast.NotEq):
                    return (v == comp.value) == isinstance(op, ast.Eq)  # type: ignore[attr-defined]
                choices = {e.value for e in comp.elts}  # type: ignore[attr-defined]
                return (v in choices) == isinstance(op, ast.In)
            left = self.run(node.left, env)
            for op, comp in zip(node.ops, node.comparators, strict=True):
                right = self.run(comp, env)
                if not PY_COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            name = node.func.id  # type: ignore[attr-defined]
            args = [self.run(a, env) for a in node.args]
            if name == "where":
                return args[1] if args[0] else args[2]
            return self.funcs[name](*args)
        raise ExprError(f"cannot evaluate {type(node).__name__}")
