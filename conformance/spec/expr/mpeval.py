"""The arbitrary-precision (mpmath) arithmetic of the expression walker (walk.py), IEEE-style: a
NaN or infinity where numpy would give one, never an exception or a complex number. The
reference engine uses it to decide roundings float64 cannot (reference/precise.py)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import mpmath
from mpmath import libmp

from .walk import Arithmetic, Env, Expression, require


class ScalarOperators:
    """The operators of one Python number at a time (mpf, Fraction): Python's own, shared by the
    mpmath and the exact-rational arithmetics."""

    add = staticmethod(operator.add)
    sub = staticmethod(operator.sub)
    mul = staticmethod(operator.mul)
    neg = staticmethod(operator.neg)
    lt = staticmethod(operator.lt)
    le = staticmethod(operator.le)
    gt = staticmethod(operator.gt)
    ge = staticmethod(operator.ge)
    eq = staticmethod(operator.eq)
    ne = staticmethod(operator.ne)
    f_abs = staticmethod(abs)


class MpArithmetic(ScalarOperators, Arithmetic):
    """One element at a time in the library `m` (mpmath.mp, or an object with its interface):
    a condition is a Python bool, so where() and a formula take one side only."""

    name = "mpmath"

    @staticmethod
    def f_sign(x: Any) -> Any:
        return x if x != x else (x > 0) - (x < 0)

    def __init__(self, m: Any):
        self.m = m
        nan = m.nan
        real = self._real

        def guarded(f: Callable[[Any], Any], domain: Callable[[Any], bool]) -> Callable[[Any], Any]:
            return lambda x: real(f(x)) if x != x or domain(x) else nan

        self.f_exp = m.exp
        self.f_expm1 = m.expm1
        self.f_erf = m.erf
        self.f_erfc = m.erfc
        self.f_erfinv = guarded(m.erfinv, lambda x: -1 <= x <= 1)
        self.f_tanh = m.tanh
        self.f_conj = m.conj
        self.f_log = guarded(m.log, lambda x: x >= 0)
        self.f_log1p = guarded(m.log1p, lambda x: x >= -1)
        self.f_sqrt = guarded(m.sqrt, lambda x: x >= 0)

    def number(self, value: bool | int | float) -> Any:
        if isinstance(value, bool):
            return value
        with mpmath.workprec(128):  # a literal (|int| <= 10**30) is exact at any precision
            return self.m.mpf(value)

    def constant(self, name: str, value: float) -> Any:
        m = self.m
        return {"pi": m.pi, "e": m.e, "inf": m.inf, "nan": m.nan}[name]

    @staticmethod
    def not_(x: Any) -> bool:
        return not x

    @staticmethod
    def and_(a: Any, b: Any) -> bool:
        return bool(a) and bool(b)

    @staticmethod
    def or_(a: Any, b: Any) -> bool:
        return bool(a) or bool(b)

    @staticmethod
    def choose(cond: Any) -> bool:
        return bool(cond)

    @staticmethod
    def f_minimum(a: Any, b: Any) -> Any:
        return a if a != a else (b if b != b else min(a, b))

    @staticmethod
    def f_maximum(a: Any, b: Any) -> Any:
        return a if a != a else (b if b != b else max(a, b))

    # reductions of a row's values (walk.py: Arithmetic.reduce), IEEE-style like the operators
    def r_sum(self, xs: list[Any]) -> Any:
        """The exact sum (mpf_sum at precision 0), rounded once to the working precision."""
        m = self.m
        vals = [v if isinstance(v, mpmath.mpf) else m.mpf(v) for v in xs]
        exact = libmp.mpf_sum([v._mpf_ for v in vals], 0)
        return m.make_mpf(libmp.mpf_pos(exact, m.prec, libmp.round_nearest))

    def r_mean(self, xs: list[Any]) -> Any:
        return self.div(self.r_sum(xs), self.m.mpf(len(xs)))

    def r_amax(self, xs: list[Any]) -> Any:
        if any(v != v for v in xs):
            return self.m.nan
        return max(xs, default=-self.m.inf)

    def r_amin(self, xs: list[Any]) -> Any:
        if any(v != v for v in xs):
            return self.m.nan
        return min(xs, default=self.m.inf)

    def r_prod(self, xs: list[Any]) -> Any:
        out = self.m.mpf(1)
        for v in xs:
            out = out * v
        return out

    def r_logsumexp(self, xs: list[Any]) -> Any:
        m = self.m
        top = self.r_amax(xs)
        if top != top or not xs:
            return top if xs else -m.inf
        shift = top if m.isfinite(top) else m.mpf(0)
        total = self.r_sum([m.exp(v - shift) for v in xs])
        return shift + (m.log(total) if total > 0 else (-m.inf if total == 0 else m.nan))

    def r_gather(self, at: Any, index: Any, length: int) -> Any:
        """The row's value at position `index` (`at(j)` evaluates it at element j); NaN where the
        index is not an integer in [0, length)."""
        if index != index or index < 0 or index >= length or self.m.floor(index) != index:
            return self.m.nan
        return at(int(index))

    def r_cumsum(self, xs: list[Any]) -> list[Any]:
        """Each prefix's exact sum (mpf_add at precision 0), rounded once to the working
        precision: the row's prefixes, in order."""
        m = self.m
        acc, out = libmp.fzero, []
        for v in xs:
            acc = libmp.mpf_add(acc, (v if isinstance(v, mpmath.mpf) else m.mpf(v))._mpf_, 0)
            out.append(m.make_mpf(libmp.mpf_pos(acc, m.prec, libmp.round_nearest)))
        return out

    @staticmethod
    def r_outer(value: Any) -> Any:
        """outer(x): x evaluated at the element the paired reduction's value is for (walk.py:
        Arithmetic.outer; each such reduction is computed once per element, its argument at
        every element of the row, walk.Paired)."""
        return value

    def r_position(self, k: int) -> Any:
        """This element's index along the position's dim (walk.py: Arithmetic.position)."""
        return self.m.mpf(k)

    @staticmethod
    def r_any(xs: list[Any]) -> bool:
        return any(bool(v) for v in xs)

    @staticmethod
    def r_all(xs: list[Any]) -> bool:
        return all(bool(v) for v in xs)

    def _real(self, x: Any) -> Any:
        return self.m.nan if isinstance(x, self.m.mpc) else x

    def div(self, a: Any, b: Any) -> Any:
        m = self.m
        if b == 0:
            if a != a or a == 0:
                return m.nan
            return -m.inf if a < 0 else m.inf  # mpmath has no signed zero: b counts as +0
        return a / b

    def pow(self, a: Any, b: Any) -> Any:
        try:
            return self._real(self.m.power(a, b))
        except (ZeroDivisionError, ValueError):
            return self.m.inf


_ARITHMETICS: dict[int, MpArithmetic] = {}


def mp_arithmetic(m: Any) -> MpArithmetic:
    """The arithmetic of the library object `m`: one per object, so it keeps its staged
    expressions."""
    ar = _ARITHMETICS.get(id(m))
    if ar is None or ar.m is not m:
        ar = _ARITHMETICS[id(m)] = MpArithmetic(m)
    return ar


require(mp_arithmetic(mpmath.mp))


def evaluate_mp(expr: Expression, env: Env, m: Any) -> Any:
    """Evaluate `expr` on scalars with the arbitrary-precision library `m` (mpmath), IEEE-style:
    a NaN or infinity where numpy would give one, never an exception or a complex number."""
    return expr.run(env, mp_arithmetic(m))
