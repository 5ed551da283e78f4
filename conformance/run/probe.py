"""The dtype probe: which aclDataTypes does a backend really accept, parameter by parameter?

For each op, product and tensor or scalar parameter, a minimal valid call has that parameter's
dtype replaced by every aclDataType in turn (tensors tied by a same-dtype rule change together).
The spec's claim is what the reference says of that exact call; the backend's answer is whether
its status is 0. The result is a claimed-vs-actual matrix: agrees, listed but rejected, accepted
but not listed, or not expressible by the backend (skipped). Only a status is an answer: a call
that crashed, timed out or raised (a harness error) is a cell of its own, never a rejection.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..acl import dtypes as dt
from ..acl.planned import set_dtype
from ..cases.build import build
from ..cases.generate import dtype_combos
from ..cases.plan import CasePlan, base_args
from ..spec.checks.dtype import partners
from ..spec.interpret import validate
from ..spec.model import OpSpec
from ..spec.registry import Registry
from .backend import Backend, BackendCrash, BackendError, BackendTimeout

BROKEN_CELLS = ("crash", "timeout", "error")  # no answer: never counted as a rejection


@dataclass
class ProbeRow:
    op: str
    product: str
    param: str
    together: list[str]
    cells: dict[str, str] = field(default_factory=dict)  # dtype -> agree-accept | agree-reject |
    # listed-but-rejected | accepted-not-listed | skip | crash | timeout | error (no answer)

    @property
    def broken(self) -> dict[str, str]:
        """Cells where the backend gave no answer: it crashed, timed out or failed."""
        return {d: v for d, v in self.cells.items() if v in BROKEN_CELLS}

    @property
    def disagreements(self) -> dict[str, str]:
        return {
            d: v
            for d, v in self.cells.items()
            if v in ("listed-but-rejected", "accepted-not-listed")
        }


def probe_op(spec: OpSpec, backend: Backend, product: str) -> list[ProbeRow]:
    combos = dtype_combos(spec, product)
    if not combos:
        return []
    diag = next((c for c in combos if len(set(c.values())) == 1), combos[0])
    base = base_args(spec, diag, (2, 3))
    rows = []
    for p in spec.params:
        if p.kind not in ("tensor", "scalar"):
            continue
        together = partners(spec, p.name) if p.is_tensor else [p.name]
        row = ProbeRow(spec.name, product, p.name, together)
        for d in dt.tables().names():
            args = set_dtype(base, together, d)
            plan = CasePlan(
                f"probe/{p.name}/{d}", spec.name, product, "probe", tuple(args.items()), (), 0
            )
            call = build(spec, plan, 0).call
            claimed = validate(spec, call).status == 0
            if backend.supports(call):
                row.cells[d] = "skip"
                continue
            try:
                actual = backend.execute(call).status == 0
            except BackendError:
                raise  # the backend cannot run at all (setup): not a rejection
            except BackendCrash:
                row.cells[d] = "crash"
                continue
            except BackendTimeout:
                row.cells[d] = "timeout"
                continue
            except Exception:  # the harness or adapter failed: no answer about the dtype
                row.cells[d] = "error"
                continue
            if claimed == actual:
                row.cells[d] = "agree-accept" if claimed else "agree-reject"
            else:
                row.cells[d] = "listed-but-rejected" if claimed else "accepted-not-listed"
        rows.append(row)
    return rows


def probe(
    registry: Registry,
    backend: Backend,
    ops: list[str] | None = None,
    products: list[str] | None = None,
) -> list[ProbeRow]:
    rows: list[ProbeRow] = []
    for spec in sorted((registry.get(o) for o in ops) if ops else registry, key=lambda s: s.name):
        for product in spec.products:
            if products and product not in products:
                continue
            rows += probe_op(spec, backend, product)
    return rows


def to_json(rows: list[ProbeRow]) -> list[dict]:
    return [asdict(r) | {"disagreements": r.disagreements, "broken": r.broken} for r in rows]
