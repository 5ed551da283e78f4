"""Stored goldens: what the oracle says of a case, computed once to be written beside it
(`cases export --golden`), and the stand-in oracle of `run --golden stored`, which evaluates
nothing (each case's golden is read from its directory, conformance/cases/golden.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..acl.call import Call, Outcome, TensorArg
from ..cases.generate import Case
from ..cases.golden import StoredGolden, policy_dict
from ..spec.model import OpSpec
from ..spec.tolerances import policy_for
from .backend import Backend, Capabilities
from .judging import tolerance_dtype

STORED = "stored"  # the oracle name a record carries when its golden was read from the case


def compute_golden(spec: OpSpec, case: Case, oracle: Backend) -> StoredGolden:
    """The oracle's outcome of `case`, its streamed goldens materialised (float64, the view's
    elements in C order), and each output's comparison policy."""
    return golden_of(spec, case, oracle.expect(case.call), oracle.name, oracle.version())


def golden_values(want: Outcome, name: str) -> np.ndarray | None:
    """Output `name`'s float64 golden (the view's elements in C order), streamed or whole;
    None when the oracle gives expected storage (exact outputs) instead."""
    g = want.golden.get(name)
    if hasattr(g, "chunks"):
        g.prepare()
        parts = [np.asarray(c, dtype=np.float64) for _, _, c in g.chunks()]
        return np.concatenate(parts) if parts else np.empty(0)
    if g is not None:
        return np.asarray(g, dtype=np.float64).reshape(-1)
    return None


def golden_of(spec: OpSpec, case: Case, want: Outcome, oracle: str, version: str) -> StoredGolden:
    """An outcome the oracle gave, as a stored golden (materialised goldens, the policies)."""
    goldens: dict[str, np.ndarray] = {}
    outputs: dict[str, np.ndarray] = {}
    policies: dict[str, dict[str, Any]] = {}
    for p in spec.outputs:
        t = case.call.args.get(p.name)
        if not isinstance(t, TensorArg):
            continue
        tol = tolerance_dtype(spec, case.call, t.dtype)
        policies[p.name] = policy_dict(tol, policy_for(tol, spec.tolerance_of(p.name)))
        if want.status != 0 or t.is_empty or want.nothing_written:
            continue
        g = golden_values(want, p.name)
        if g is not None:
            goldens[p.name] = g
        elif p.name in want.outputs:
            outputs[p.name] = want.outputs[p.name]
    outcome = Outcome(
        want.status, outputs, want.message, want.clause, want.nothing_written, goldens
    )
    return StoredGolden(outcome, policies, oracle, version)


class StoredOracle(Backend):
    """The oracle of `run --golden stored`: every case brings its own golden, so this one is
    never asked (asking it is a bug, said plainly)."""

    name = STORED
    capabilities = Capabilities(status="exact", reads_inputs_only=True)

    def version(self) -> str:
        return "golden stored beside each case (cases export --golden)"

    def execute(self, call: Call) -> Outcome:
        raise RuntimeError("--golden stored: the case's golden.json is the oracle; none was read")
