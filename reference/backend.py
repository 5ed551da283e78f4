"""The reference engine as a backend: the default oracle, and a backend in its own right."""

from __future__ import annotations

from typing import Any

from ..conformance.acl.call import Call, Outcome
from ..conformance.run.backend import Backend, BackendOptionError, Capabilities
from . import kernel
from .engine import evaluate, prepare, working_bytes

VERSION = "0.2.0"


class ReferenceBackend(Backend):
    """Options: exact=1 makes DOUBLE outputs correctly rounded (mpmath for every element)
    instead of faithful (float64 with an error bound, refined where the bound is too wide)."""

    name = "reference"
    capabilities = Capabilities(status="exact", implements_specs=True, reads_inputs_only=True)
    known_options = ("exact",)

    def __init__(self, registry: Any = None, **options: Any):
        super().__init__(registry, **options)
        self.exact = _flag(options.get("exact", False))

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> None:
        if "exact" in options:
            _flag(options["exact"])

    def version(self) -> str:
        mode = "exact" if self.exact else "faithful"
        return f"aclnn-conformance reference {VERSION} (DOUBLE {mode}, {kernel.name()})"

    def execute(self, call: Call) -> Outcome:
        return evaluate(call, self.registry, exact=self.exact, in_place=True)

    def prepare_call(self, call: Call) -> None:
        """The kernels this call compiles, compiled before its clock starts (engine.prepare)."""
        prepare(call, self.registry, exact=self.exact)

    def working_bytes(self, call: Call) -> int:
        """Memory evaluating `call` needs beyond its tensors (engine.working_bytes)."""
        return working_bytes(call, self.registry)

    def execute_by(self, call: Call, deadline: float | None) -> Outcome:
        """execute, stopped between chunks past the deadline (OracleTimeout)."""
        return evaluate(call, self.registry, exact=self.exact, deadline=deadline, in_place=True)

    def expect(self, call: Call, deadline: float | None = None) -> Outcome:
        return evaluate(call, self.registry, exact=self.exact, deadline=deadline, lazy=True)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise BackendOptionError(f"reference: exact must be 1 or 0 (true/false), not {value!r}")
