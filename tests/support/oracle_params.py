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


def on_compiled_rows(check: Callable[[str, str, str], None], mod: Any, name: str, dtype: str,
                     param: str) -> None:  # fmt: skip
    """check(name, product, dtype) with the compiled (numba) row tiers forced, for the first
    product of the oracle `mod` whose `param` takes `dtype` (the reference takes those tiers
    for large outputs; a formula they have no form for keeps the numpy tiers)."""
    pytest.importorskip("numba")
    from tests.support.paths import kernel_mode

    product = next(p for p in mod.PRODUCTS if dtype in mod.allowed(param, p))
    with kernel_mode("numba"):
        check(name, product, dtype)
