"""aclnnNLLLoss2dBackward, from ops-nn loss/nll_loss_grad/docs/aclnnNLLLoss2dBackward.md and
aclnnNLLLossBackward.md's formula (the 2d page gives none), per pixel (interface:
tests/oracles/__init__.py, KIND "classes").

self (N, C, H, W), class dim 1; target (N, H, W); gradOutput target's shape for reduction 0,
else (1,) (the page: one-element 1-D); totalWeight (1,).
"""

from __future__ import annotations

from tests.oracles._common import bf16_if_a2
from tests.oracles._targets import draw as _draw
from tests.oracles._targets import nll_grad

KIND = "classes"
OUT = "out"
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")
SHAPES = ((2, 3, 2, 4), (1, 5, 1, 1), (3, 1, 2, 2))
DIM = 1


def allowed(param: str, product: str) -> set[str]:
    return bf16_if_a2(product, ["FLOAT", "FLOAT16"])


def draw(rng, shape, reduction, ignore):
    return _draw(rng, shape, DIM, reduction, ignore, (1,))


def value(a: dict, s: dict):
    return nll_grad(a["gradOutput"], a["target"], a["weight"], a["totalWeight"],
                    a["self"].shape, DIM, s["reduction"], s["ignoreIndex"])  # fmt: skip
