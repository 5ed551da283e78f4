"""How reference/vecmath.py's erfc coefficients were made (and a test checks they still are).

erfc(x) = exp(-x^2) * phi(x) / (1 + sqrt(pi) x) for x >= 0, where phi(x) = erfc(x) exp(x^2)
(1 + sqrt(pi) x) is smooth and flat (1 at 0, tending to 1 + 1/(sqrt(pi) x) far out). phi is
interpolated at Chebyshev nodes in t = (x - K) / (x + K), mapped onto [-1, 1] over x in [0, XMAX],
and the coefficients whose size matters at 2^-60 are kept.

    python -m tests.support.erfc_fit    (prints the tuple for vecmath.py)
"""

from __future__ import annotations

import mpmath as mp

K = 4.0
XMAX = 27.3  # erfc(27.3) is below half the smallest subnormal: 0 beyond it
NODES = 40


def phi(x: mp.mpf) -> mp.mpf:
    return mp.erfc(x) * mp.exp(x * x) * (1 + mp.sqrt(mp.pi) * x)


def coefficients() -> tuple[float, ...]:
    with mp.workdps(40):
        ta, tb = mp.mpf(-1), (mp.mpf(XMAX) - K) / (mp.mpf(XMAX) + K)
        nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / NODES) for k in range(NODES)]
        values = []
        for s in nodes:
            t = (tb - ta) / 2 * s + (ta + tb) / 2
            values.append(phi(K * (1 + t) / (1 - t)))
        c = [2 * mp.fsum(values[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / NODES)
                         for k in range(NODES)) / NODES for j in range(NODES)]  # fmt: skip
        c[0] /= 2
        keep = max(j for j in range(NODES) if abs(c[j]) > mp.mpf(2) ** -60)
        return tuple(float(v) for v in c[: keep + 1])


if __name__ == "__main__":
    print(coefficients())
