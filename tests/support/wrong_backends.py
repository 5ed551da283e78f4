"""Deliberately wrong backends: each wraps the reference engine and breaks one promise.

Self-contained on purpose (imports only the installed packages): tests/support/wrong_plugin.py
copies this file into a temporary plug-in so that a subprocess finds the classes through the
`aclnn_conformance.backends` entry-point group.
"""

from __future__ import annotations

import numpy as np
from aclnn_conformance.conformance.acl.call import Call, Outcome, TensorArg
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.spec.tolerances import policy_for
from aclnn_conformance.reference.engine import evaluate

ERR_NULLPTR = 161001
ERR_INVALID = 161002


def output_name(call: Call) -> str:
    return default_registry().get(call.op).formula.output


def storage_index(t: TensorArg, index: tuple[int, ...]) -> int:
    """Position in t.storage of the view element at `index`."""
    return t.offset + sum(i * s for i, s in zip(index, t.strides, strict=True))


def pick_element(call: Call, storage: np.ndarray) -> tuple[int, ...] | None:
    """The first view element (C order) that a 2-ulp step makes fail the dtype's relative bound.

    Its expected value is finite, outside the small-value domain, and its mantissa is below 1.5,
    so two ulps are at least 2 * 2^-p / 1.5 relative: 1.3e-3 for FLOAT16 (bound 1e-3).
    """
    t = call.tensor(output_name(call))
    view = TensorArg(t.dtype, t.shape, t.strides, t.offset, storage).view()
    small = policy_for(t.dtype).small_threshold
    for index in np.ndindex(*t.shape):
        v = float(view[index])
        if not np.isfinite(v) or abs(v) < max(small, 1e-30):
            continue
        mantissa = abs(v) / 2.0 ** np.floor(np.log2(abs(v)))
        if mantissa < 1.5 and abs(v) < 1e4:
            return tuple(int(i) for i in index)
    return None


class _Wrapper(Backend):
    """The reference, then `spoil` the call or the outcome."""

    name = "wrong"
    capabilities = Capabilities(status="exact")

    def version(self) -> str:
        return f"{self.name} 0.0 (test double)"

    def execute(self, call: Call) -> Outcome:
        out = evaluate(call)
        return self.spoil(call, out)

    def spoil(self, call: Call, out: Outcome) -> Outcome:  # pragma: no cover - overridden
        return out


class TwoUlpBackend(_Wrapper):
    """(a) One output element moved 2 ulp up (np.nextafter twice); the message names it."""

    name = "wrong-ulp"

    def spoil(self, call: Call, out: Outcome) -> Outcome:
        if out.status != 0 or out.nothing_written:
            return out
        name = output_name(call)
        t = call.tensor(name)
        if t.is_empty:
            return out
        storage = out.outputs[name]
        index = pick_element(call, storage)
        if index is None:
            return out
        k = storage_index(t, index)
        inf = storage.dtype.type(np.inf)
        x = storage[k : k + 1]
        storage[k : k + 1] = np.nextafter(np.nextafter(x, inf), inf)
        out.message = f"perturbed {list(index)} by 2 ulp"
        return out


class WrongNullStatusBackend(_Wrapper):
    """(b) 161002 where 161001 is due."""

    name = "wrong-status"

    def spoil(self, call: Call, out: Outcome) -> Outcome:
        if out.status == ERR_NULLPTR:
            return Outcome(ERR_INVALID, out.outputs, "invalid (wrong code on purpose)")
        return out


class GapWriterBackend(_Wrapper):
    """(c) Correct values in the view, zeros written into the gaps/padding of the output."""

    name = "wrong-gaps"

    def spoil(self, call: Call, out: Outcome) -> Outcome:
        if out.status != 0:
            return out
        name = output_name(call)
        t = call.tensor(name)
        storage = out.outputs[name]
        inside = np.zeros(storage.size, dtype=bool)
        if not t.is_empty:
            ids = TensorArg(t.dtype, t.shape, t.strides, t.offset, np.arange(storage.size)).view()
            inside[np.asarray(ids).reshape(-1)] = True
        storage[~inside] = storage.dtype.type(0)
        return out


class InputMutatorBackend(_Wrapper):
    """(d) Flips one bit of the first non-empty input storage (in place, as a kernel would)."""

    name = "wrong-input"

    def spoil(self, call: Call, out: Outcome) -> Outcome:
        spec = default_registry().get(call.op)
        for p in spec.tensor_inputs:
            a = call.args.get(p.name)
            if isinstance(a, TensorArg) and a.storage.size:
                a.storage.view(np.uint8)[0] ^= 1
                out.message = f"mutated {p.name}"
                break
        return out


class ErrorWriterBackend(_Wrapper):
    """(e) Returns the right error status but scribbles over the output storage first."""

    name = "wrong-error-write"

    def spoil(self, call: Call, out: Outcome) -> Outcome:
        if out.status == 0:
            return out
        for storage in out.outputs.values():
            if storage.size:
                storage.view(np.uint8)[:] = 0x11
        return out


class RaisingBackend(_Wrapper):
    """(f) Raises on every call whose op is hardshrink_backward; correct for the others."""

    name = "wrong-raise"

    def execute(self, call: Call) -> Outcome:
        if default_registry().get(call.op).name == "hardshrink_backward":
            raise RuntimeError("driver exploded (on purpose)")
        return evaluate(call)


ALL = {
    cls.name: cls
    for cls in (
        TwoUlpBackend,
        WrongNullStatusBackend,
        GapWriterBackend,
        InputMutatorBackend,
        ErrorWriterBackend,
        RaisingBackend,
    )
}
