"""How the erfc coefficients of conformance/compiled/vecmath.py and conformance/compiled/ddmath.py were made (and tests
check they still are).

erfc(x) = exp(-x^2) * phi(x) / (1 + sqrt(pi) x) for x >= 0, where phi(x) = erfc(x) exp(x^2)
(1 + sqrt(pi) x) is smooth and flat (1 at 0, tending to 1 + 1/(sqrt(pi) x) far out). phi is
interpolated at Chebyshev nodes in t = (x - K) / (x + K), mapped onto s in [-1, 1] over x in
[0, XMAX], and the series is rewritten in powers of s: its coefficients fall about 6-fold a
degree, so the monomial form is as well conditioned (the sum of their magnitudes is 1.56, phi
is above 1) and evaluates with independent partial sums (Estrin's scheme) instead of Clenshaw's
serial recurrence, which bounded vecmath's erfc by its latency.

- vecmath (float64): degree 24, each coefficient rounded to float64 (truncation below 2^-62);
- ddmath (double-double): degree 28 (truncation below 2^-68), the first PAIR_TERMS as (hi, lo)
  pairs and the rest, whose sum of magnitudes is below 2^-14, as float64.

    python -m tests.support.erfc_fit    (prints the tables)
"""

from __future__ import annotations

import mpmath as mp

K = 4.0
XMAX = 27.3  # erfc(27.3) is below half the smallest subnormal: 0 beyond it
NODES = 40
DEG_FLOAT, DEG_PAIR, PAIR_TERMS = 24, 28, 12


def phi(x: mp.mpf) -> mp.mpf:
    return mp.erfc(x) * mp.exp(x * x) * (1 + mp.sqrt(mp.pi) * x)


def mapping() -> tuple[mp.mpf, mp.mpf]:
    """(SA, SB): s = SA * t + SB maps t's range [-1, tb] onto [-1, 1]."""
    tb = (mp.mpf(XMAX) - K) / (mp.mpf(XMAX) + K)
    return 2 / (tb + 1), (1 - tb) / (tb + 1)


def in_powers(f, degree: int, nodes: int = NODES) -> list[mp.mpf]:
    """f's Chebyshev interpolant on s in [-1, 1] (`nodes` nodes), truncated at `degree` and
    rewritten in powers of s, at 60 digits."""
    with mp.workdps(60):
        pts = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / nodes) for k in range(nodes)]
        values = [f(s) for s in pts]
        c = [2 * mp.fsum(values[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / nodes)
                         for k in range(nodes)) / nodes for j in range(degree + 1)]  # fmt: skip
        c[0] /= 2
        cheb = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]  # T_j's coefficients in powers of s
        for j in range(2, degree + 1):
            up = [mp.mpf(0)] + [2 * v for v in cheb[j - 1]]
            cheb.append([a - b for a, b in zip(up, cheb[j - 2] + [0, 0], strict=False)])
        return [mp.fsum(c[j] * cheb[j][k] for j in range(k, degree + 1)) for k in range(degree + 1)]


def monomial(degree: int) -> list[mp.mpf]:
    """phi's interpolant up to `degree`, in powers of s (at 60 digits)."""
    with mp.workdps(60):
        sa, sb = mapping()
        return in_powers(lambda s: phi(K * (1 + (s - sb) / sa) / (1 - (s - sb) / sa)), degree)


def coefficients() -> tuple[float, ...]:
    """vecmath's table: degree DEG_FLOAT, float64."""
    return tuple(float(v) for v in monomial(DEG_FLOAT))


def pairs() -> tuple[tuple[tuple[float, float], ...], tuple[float, ...]]:
    """ddmath's tables: the first PAIR_TERMS coefficients as (hi, lo), the rest as float64."""
    mono = monomial(DEG_PAIR)
    with mp.workdps(60):
        head = tuple((float(v), float(v - mp.mpf(float(v)))) for v in mono[:PAIR_TERMS])
    return head, tuple(float(v) for v in mono[PAIR_TERMS:])


if __name__ == "__main__":
    print(coefficients())
    print(pairs())
