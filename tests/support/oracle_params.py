"""The (op, product, dtype) parameters of the oracle tests: one place for every oracle kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

FLOATS = ("FLOAT", "FLOAT16", "BF16")


def oracle_params(
    registry: Any, oracles: dict[str, Any], allows: Callable[[Any, str, str], bool]
) -> list[Any]:
    """pytest params (name, product, dtype): each oracle's products the spec has, each float
    dtype `allows(module, product, dtype)` there."""
    out = []
    for name, mod in oracles.items():
        for product in mod.PRODUCTS:
            if product not in registry.get(name).products:
                continue
            for d in FLOATS:
                if allows(mod, product, d):
                    out.append(pytest.param(name, product, d, id=f"{name}-{product}-{d}"))
    return out
