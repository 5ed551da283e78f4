"""The range where an error-free transformation (Veltkamp's split, TwoProduct) is exact in
float64: defined once for the double-double kernels (ddmath), the numpy error bound (errbound)
and the double-double tier (ddtier). No numba here: the numpy paths import it too."""

from __future__ import annotations

BIG = 2.0**995  # beyond it a split or an operation's intermediate may overflow
TINY = 2.0**-969  # below it a product's error term may underflow (a pair may have lost bits)
