"""The spec's validation rules, interpreted: what phase 1 of an aclnn call checks, in order.

Shared by the reference engine (which returns the status) and the case generator (which uses it
to prove that a negative case violates exactly the clause it targets, first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..acl.call import Call, TensorArg
from ..acl.views import FlatView, numel, ranges
from .checks.base import Violation, accepted_nulls, attribute_env, with_defaults
from .checks.kinds import kind_of
from .elements import element_shape
from .expr.numpy_arith import NUMPY
from .expr.walk import Formula, tensors_read
from .model import Check, OpSpec
from .split import split_call, splits
from .tables import status_name


@dataclass(frozen=True)
class Validation:
    """What validation decided: a status, the deciding clause (if any), and whether it was empty."""

    status: int
    check: Check | None = None
    message: str = ""
    empty: bool = False

    @property
    def ok_to_compute(self) -> bool:
        return self.status == 0 and not self.empty


def check_reads(check: Check) -> set[str]:
    """Every parameter a check names (its params, dtype terms, `to` and `of`)."""
    names = set(check.params) | set(check.of)
    for t in (*check.terms, check.to):
        if t is not None:
            names |= set(t.params())
    return names


def validate(spec: OpSpec, call: Call) -> Validation:
    """Run the spec's checks in order; the first violation wins, an empty_success rule ends early.
    A null the spec accepts (`null: default` or `absent`) is read by no check but a value
    check, which sees the default it stands for."""
    nulls = accepted_nulls(spec, call)
    resolved = with_defaults(spec, call)
    env = attribute_env(spec, resolved) if any(c.when for c in spec.checks) else {}
    for check in spec.checks:
        if not check.applies_on(call.product) or not check.applies_with(env):
            continue
        if nulls and check.kind != "value" and check_reads(check) & nulls:
            continue
        try:
            done = kind_of(check).evaluate(spec, check, resolved)
        except Violation as v:
            msg = f"{v.message} [{spec.clause(check.id)}, {status_name(check.status)}]"
            return Validation(check.status, check, msg)
        if done:
            return Validation(
                0, check, f"empty tensor: nothing computed [{spec.clause(check.id)}]", True
            )
    return Validation(0)


def formula_domain(spec: OpSpec, call: Call) -> tuple[tuple[int, ...], bool]:
    """The shape a formula is evaluated over, and whether its output collapses it (holds one
    element per row of the formula's reductions and gathers): elements.element_shape, the
    output's shape where it broadcasts with the inputs to itself, else the inputs' broadcast
    (a gather's index placed along its dim). A formula with halves is elementwise over its
    output (split.py)."""
    out = tuple(call.tensor(spec.formula.output).shape)
    if splits(spec):
        return out, False
    shape, _ = element_shape(spec, call, attribute_env(spec, call))
    return shape, shape != out


def formula_env(
    spec: OpSpec, call: Call, start: int = 0, stop: int | None = None, flat: bool = False
) -> dict[str, Any]:
    """Attributes plus every input tensor the formula reads as float64, broadcast to the
    formula's elements (elements.py: the output view's shape, or the inputs' one where the
    output drops reduced dims; flat elements [start, stop) of it: large cases are walked a
    chunk at a time); a formula splitting tensors in halves sees the views split_call makes
    (split.py). flat: the tensors already hold one value per element (branch_hits flat), each
    read as it is."""
    env = attribute_env(spec, call)
    call = split_call(spec, call)
    if flat:
        read = tensors_read(spec)
        args = {n: t for n, t in call.args.items() if n in read and isinstance(t, TensorArg)}
        shape = None
    else:  # an absent optional tensor is not among them
        shape, args = element_shape(spec, call, env)
    for name, t in args.items():
        view = FlatView(t, t.shape if shape is None else shape)
        with np.errstate(all="ignore"):
            v = view.get(start, view.size if stop is None else stop)
            env[name] = v.astype(np.complex128 if np.iscomplexobj(v) else np.float64)
    return env


def branch_hits(spec: OpSpec, call: Call, flat: bool = False) -> list[str]:
    """Ids of the formula branches that at least one output element of a valid call takes (the
    formula walk's `taken`, chunk by chunk), over every output's formula. flat: the call's
    tensors already hold one value per element, 1-D (the ATK importer's chunks, each input
    read as the formula reads it): they are not placed again (a gather's index, a per-row
    gradient, a class weight laid along its dim would each take a dim of its own)."""
    ids: list[str] = []
    for sub in spec.computed:
        out = call.args.get(sub.formula.output)
        if out is None:
            continue
        if flat:
            total = numel(call.tensor(sub.formula.output).shape)
        else:
            total = numel(element_shape(sub, call, attribute_env(sub, call))[0])
        branches = sub.formula.branches
        if len(branches) == 1 and branches[0].when is None:  # taken wherever there is an element
            ids += [branches[0].id] if total else []
            continue
        walk = Formula.of(sub.formula)
        hit: set[int] = set()
        for start, stop in ranges(total, 1 << 20):
            env = formula_env(sub, call, start, stop, flat)
            taken = walk.taken(env, NUMPY, stop - start)
            hit |= {int(i) for i in np.unique(taken[~np.isnan(taken)])}
        ids += [br.id for i, br in enumerate(sub.formula.branches) if i in hit]
    return ids


def lets_used(spec: OpSpec, hits: list[str]) -> list[str]:
    """Ids of the `let`s the evaluation of the taken branches `hits` binds (the formula walk's
    `needs`): a let no taken branch needs is not credited as exercised."""
    ids: list[str] = []
    for f in spec.formulas:
        index = [i for i, b in enumerate(f.branches) if b.id in hits]
        names = Formula.of(f).needs(index)
        ids += [x.id for x in f.lets if x.name in names]
    return ids


def random_relations(spec: OpSpec, call: Call) -> list[str]:
    """Ids of the relations the judge checks for a valid call: those of every formula with
    relations whose `random_when` holds (or that has none)."""
    env = attribute_env(spec, with_defaults(spec, call))
    ids: list[str] = []
    for f in spec.formulas:
        if f.relations and (f.random_when is None or bool(np.all(f.random_when.evaluate(env)))):
            ids += [r.id for r in f.relations]
    return ids
