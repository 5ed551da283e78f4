"""Which formulas float64 evaluates correctly rounded: at most one rounding per branch value.

IEEE 754 rounds each +, -, *, / and sqrt correctly. A branch value that makes one such rounding
on exact operands (the inputs and scalars, which float64 holds exactly, and literals that are
binary fractions), and then only exact steps (negation, abs, min, max, where: rounding is
monotonic, so they commute with it), is the exact value correctly rounded; a condition that
compares exact operands decides as the exact values do. Such a formula's DOUBLE output needs
neither long double nor mpmath: the compiled float64 kernel is correctly rounded, faithful a
fortiori. Anything else (library functions, two chained roundings, a literal such as 0.1) counts
as more than one and keeps the faithful paths of errbound.py.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..conformance.spec.expr.walk import Arithmetic, Formula, require
from ..conformance.spec.model import OpSpec

MANY = 2  # two or more roundings: not correctly rounded by construction


def correctly_rounded(spec: OpSpec) -> bool:
    """Whether every branch of spec's formula is correctly rounded in float64 (see above): the
    formula walked in the rounding count, every branch visited."""
    return Formula.of(spec.formula).evaluate(_Exact(), COUNT) < MANY


class _Exact(dict):
    """Every input, scalar, bool or string parameter is exact: 0 roundings."""

    def __missing__(self, name: str) -> int:
        return 0


def _n(x: Any) -> int:
    """A count; a string comparison's bool is exact (0)."""
    return 0 if isinstance(x, bool) else x


class RoundingCount(Arithmetic):
    """The walker's arithmetic whose values are how many roundings float64 made (capped at
    MANY): + - * / and sqrt round once on top of their operands', negation, abs, minimum,
    maximum, conj and where are exact, a comparison of rounded operands counts as MANY (it may
    decide otherwise than the exact values), every other function and a power as MANY."""

    name = "rounding count"

    def number(self, value: bool | int | float) -> int:
        if isinstance(value, bool | int):
            return 0
        return 0 if Fraction(repr(value)) == Fraction(float(value)) else 1

    def constant(self, name: str, value: float) -> int:
        return 1 if name in ("pi", "e") else 0

    @staticmethod
    def _once(a: Any, b: Any) -> int:
        return min(_n(a) + _n(b) + 1, MANY)

    add = sub = mul = div = _once

    @staticmethod
    def pow(a: Any, b: Any) -> int:
        return MANY

    @staticmethod
    def _same(x: Any) -> int:
        return _n(x)

    neg = not_ = f_abs = f_sign = f_conj = _same

    @staticmethod
    def _max(a: Any, b: Any) -> int:
        return max(_n(a), _n(b))

    and_ = or_ = f_minimum = f_maximum = _max

    @staticmethod
    def _compare(a: Any, b: Any) -> int:
        return MANY if _n(a) or _n(b) else 0

    lt = le = gt = ge = eq = ne = _compare

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> int:
        return MANY if _n(cond) else max(_n(a), _n(b))

    def decide(self, cond: Any) -> bool | None:
        return None  # every branch counts

    def select(self, cond: Any, then: Callable[[], Any], other: Callable[[], Any]) -> int:
        # a branch condition must make no rounding (a string comparison, one bool for the
        # call, is not credited: != 0)
        return MANY if cond != 0 else max(_n(then()), _n(other()))

    def nothing(self) -> int:
        return 0

    @staticmethod
    def f_sqrt(x: Any) -> int:
        return min(_n(x) + 1, MANY)

    @staticmethod
    def _many(x: Any) -> int:
        return MANY

    f_exp = f_expm1 = f_log1p = f_log = f_erf = f_erfc = f_erfinv = f_tanh = _many
    # a sum, mean, product or logsumexp rounds many times; amax, amin, any and all are exact
    r_sum = r_mean = r_prod = r_logsumexp = _many
    r_amax = r_amin = r_any = r_all = _same

    def reduce(self, node: Any, x: Callable[[Any], Any], env: Any) -> int:
        return getattr(self, "r_" + node.fn)(x(env))

    def gather(self, node: Any, x: Callable[[Any], Any], index: Any, env: Any) -> int:
        """A gather picks one of its argument's values: its roundings, none of its own."""
        return self.r_gather(x(env))

    r_gather = _same

    def cumsum(self, node: Any, x: Callable[[Any], Any], env: Any) -> int:
        """A prefix sum rounds once per addition."""
        return self.r_cumsum(x(env))

    r_cumsum = _many

    def outer(self, node: Any, x: Callable[[Any], Any], env: Any) -> int:
        """outer(x) is x's value at another element: its roundings, none of its own."""
        return self.r_outer(x(env))

    r_outer = _same

    def position(self, node: Any, env: Any) -> int:
        """An element's index along a dim is an exact integer: no rounding."""
        return self.r_position()

    @staticmethod
    def r_position(*geometry: Any) -> int:
        return 0


COUNT = require(RoundingCount())
