"""The spec's formula walked with numpy over a chunk of elements: the float64 evaluation that
the engine, the error-bound tier and the settling of flagged elements share."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..conformance.spec.model import OpSpec


def evaluate_formula(
    spec: OpSpec, env: dict[str, Any], n: int, dtype: Any = np.float64
) -> np.ndarray:
    """The float64 value of the formula over `n` elements bound in `env` (mutated with lets).

    Branches are taken in order, first true wins; a condition that is one value (a bool or a
    string parameter decides it) ends the walk or skips its branch without evaluating it, and a
    let is evaluated only when an expression that is evaluated names it."""
    lets = {x.name: x for x in spec.formula.lets}

    def bind(names: frozenset[str]) -> None:
        for name in names:
            if name in lets and name not in env:
                bind(lets[name].value.names)
                env[name] = lets[name].value.evaluate(env)

    def value(br) -> np.ndarray:
        bind(br.value.names)
        return np.asarray(br.value.evaluate(env), dtype=dtype)

    pending = []
    base = None
    for br in spec.formula.branches:
        if br.when is None:
            base = value(br)
            break
        bind(br.when.names)
        cond = br.when.evaluate(env)
        if np.ndim(cond) == 0 or np.all(cond):
            if bool(np.all(cond)):
                base = value(br)
                break
            continue
        if np.any(cond):
            pending.append((cond, br))
    result = np.broadcast_to(base, (n,))
    for cond, br in reversed(pending):
        result = np.where(cond, value(br), result)
    return np.asarray(result, dtype=dtype)
