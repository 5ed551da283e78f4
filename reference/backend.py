"""The reference engine as a backend: the default oracle, and a backend in its own right."""

from __future__ import annotations

from conformance.backend import Backend, Capabilities
from conformance.call import Call, Outcome
from reference.engine import evaluate

VERSION = "0.1.0"


class ReferenceBackend(Backend):
    name = "reference"
    capabilities = Capabilities(status="exact", implements_specs=True)

    def version(self) -> str:
        return f"aclnn-conformance reference {VERSION}"

    def execute(self, call: Call) -> Outcome:
        return evaluate(call, self.registry)
