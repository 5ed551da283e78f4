"""aclnnNLLLossBackward, from ops-nn loss/nll_loss_grad/docs/aclnnNLLLossBackward.md (interface:
tests/oracles/__init__.py, KIND "classes").

self (N, C) or (C), class dim -1; target (N) or (); gradOutput (N) for reduction 0 and a 2-D
self, else one element (the page: one-element 1-D or ()); totalWeight (1,). The gradient is
-g w[t] at the target class (/ totalWeight for mean), 0 elsewhere and at the ignore index.
Dtypes: FLOAT, FLOAT16, BFLOAT16 (the page; the A2 / A3 / 950 products).
"""

from __future__ import annotations

from tests.oracles._common import bf16_if_a2
from tests.oracles._targets import draw as _draw
from tests.oracles._targets import nll_grad

KIND = "classes"
OUT = "out"
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")
SHAPES = ((6, 5), (7,), (1, 1), (3, 1))  # self's shapes
DIM = -1


def allowed(param: str, product: str) -> set[str]:
    return bf16_if_a2(product, ["FLOAT", "FLOAT16"])


def draw(rng, shape, reduction, ignore):
    return _draw(rng, shape, DIM, reduction, ignore, ())


def value(a: dict, s: dict):
    return nll_grad(a["gradOutput"], a["target"], a["weight"], a["totalWeight"],
                    a["self"].shape, DIM, s["reduction"], s["ignoreIndex"])  # fmt: skip
