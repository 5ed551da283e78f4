"""Negative cases: one minimal violation per error clause of a spec.

Each kind of check says how to break a valid base call (`mutations`, conformance.spec.checks.kinds); each
mutation is checked with conformance.spec.interpret and kept only when the first rule it breaks is the
clause it targets, so its expected status is that clause's status. A clause no mutation can
reach first (shadowed by an earlier rule) gets no negative case, and `unreachable` says which.
"""

from __future__ import annotations

from ..spec.checks.kinds import kind_of
from ..spec.model import OpSpec
from .build import verdict
from .plan import CasePlan, make_plan


def negative_plans(spec: OpSpec, product: str, base: dict) -> list[CasePlan]:
    """The negative plans of every error clause of `spec` on `product`, from valid args `base`."""
    plans = []
    for check in spec.checks:
        if check.status == 0 or not check.applies_on(product):
            continue
        kind = kind_of(check)
        kept: dict[str, dict] = {}
        for detail, args in kind.mutations(spec, check, base, product):
            if detail in kept:
                continue
            if kind.limit is not None and len(kept) >= kind.limit:
                break
            v = verdict(spec, product, args)
            if v.check is not None and v.check.id == check.id and v.status:
                kept[detail] = args
        for detail, args in kept.items():
            tail = f"{check.id}/{detail}"
            plans.append(make_plan(spec, product, "negative", args, tail, [check.id], check.status))
    return plans


def unreachable(spec: OpSpec, plans: list[CasePlan]) -> list[str]:
    """Error clauses of `spec` that no negative plan reaches first."""
    reached = {c for p in plans if p.kind == "negative" for c in p.clauses}
    products = {p.product for p in plans}
    return [
        c.id
        for c in spec.checks
        if c.status and c.id not in reached and any(c.applies_on(x) for x in products)
    ]
