"""How the erfinv first-guess coefficients of conformance/compiled/vecmath.py were made (and tests check
they still are).

With a = |x| and w = -log((1 - a)(1 + a)), erfinv is smooth in w (M. Giles' variable): below
W_SPLIT, erfinv(a) / a is a polynomial in w; above it, erfinv(a) is a polynomial in sqrt(w), up
to R_MAX (float64's a < 1 keeps w below 52 ln 2, sqrt(w) below 6.01). Each is the Chebyshev
interpolant of its range mapped onto s in [-1, 1], rewritten in powers of s (erfc_fit.in_powers).
They are first guesses only, within about 4e-9 and 1.3e-10 (relative): one Halley step on erf or
erfc takes vecmath's erfinv to a few ulp (tests/test_vecmath.py).

    python -m tests.support.erfinv_fit    (prints the tables)
"""

from __future__ import annotations

import mpmath as mp

from tests.support.erfc_fit import in_powers

W_SPLIT = 5.0
R_LOW, R_MAX = 2.2, 6.1  # the tail's range of sqrt(w): from below sqrt(W_SPLIT)
DEG_CENTRAL, DEG_TAIL = 10, 12


def _a(w: mp.mpf) -> mp.mpf:
    return mp.sqrt(-mp.expm1(-w))


def _central(s: mp.mpf) -> mp.mpf:
    w = (s + 1) * W_SPLIT / 2
    return mp.sqrt(mp.pi) / 2 if w == 0 else mp.erfinv(_a(w)) / _a(w)


def _tail(s: mp.mpf) -> mp.mpf:
    r = R_LOW + (s + 1) * (mp.mpf(R_MAX) - R_LOW) / 2
    return mp.erfinv(_a(r * r))


def coefficients() -> tuple[tuple[float, ...], tuple[float, ...]]:
    """vecmath's tables: (central, tail), in powers of s, float64."""
    return (tuple(float(v) for v in in_powers(_central, DEG_CENTRAL, 40)),
            tuple(float(v) for v in in_powers(_tail, DEG_TAIL, 40)))  # fmt: skip


if __name__ == "__main__":
    print(coefficients())
