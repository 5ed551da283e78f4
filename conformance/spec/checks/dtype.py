"""The dtype check kinds: dtype_in, same_dtype, promotable, castable (see conformance.spec.checks.kinds)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...acl import dtypes as dt
from ...acl.call import Call
from ...acl.planned import set_dtype
from ..model import Check, DtypeTerm, OpSpec, Param
from .base import NAME, Args, CheckKind, Mutations, Violation, arg, dtype_of

if TYPE_CHECKING:
    from ..lint import Linter


class _DtypeKind(CheckKind):
    """A rule on dtypes: the dtype matrix exercises it; breaking it means changing a dtype."""

    credit = frozenset({"dtype"})

    @staticmethod
    def retyped(names: list[str], base: Args) -> Mutations:
        """Each parameter of `names` alone given every other dtype."""
        for n in dict.fromkeys(names):
            for d in dt.tables().names():
                yield f"{n}:{d}", set_dtype(base, [n], d)

    @staticmethod
    def term_params(check: Check) -> list[str]:
        """The parameters of the terms, those inside promote(a, b) last."""
        names = [t.param for t in check.terms if t.param]
        if any(t.promote for t in check.terms):
            names += [p for t in check.terms if t.promote for p in t.promote]
            names += list(check.params)
        return names


class _TermKind(_DtypeKind):
    """A dtype rule on terms: `params` are parameters with a dtype, or promote(a, b)."""

    @classmethod
    def parse_param(
        cls,
        lint: Linter,
        path: tuple,
        text: str,
        by_name: dict[str, Param],
        params: list[str],
        terms: list[DtypeTerm],
    ) -> None:
        t = lint.term(path, text, by_name)
        if t is None:
            return
        if t.dtype:
            lint.err(
                path,
                f"{cls.name}: a dtype name cannot be checked; name a parameter or promote(a, b)",
            )
            return
        if t.param and by_name[t.param].kind not in ("tensor", "scalar"):
            lint.err(path, f"{cls.name}: {t.param!r} has no dtype")
        terms.append(t)
        params.extend(t.params())


class DtypeIn(_TermKind):
    """Every term's dtype is in a dtype set (per product) or a list."""

    name = "dtype_in"
    fields = {
        **CheckKind.fields,
        "set": {"type": "string"},
        "dtypes": {"type": "array", "items": {"type": "string"}},
    }
    one_of = ("set", "dtypes")

    @staticmethod
    def allowed(spec: OpSpec, check: Check, product: str) -> tuple[str, ...]:
        return spec.dtypes_for(check.dtype_set, product) if check.dtype_set else check.dtypes

    @classmethod
    def allowed_dtypes(cls, spec: OpSpec, check: Check, product: str, name: str) -> tuple:
        return cls.allowed(spec, check, product) if name in check.params else ()

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        allowed = cls.allowed(spec, check, call.product)
        for term in check.terms:
            d = dtype_of(call, check, term)
            if d not in allowed:
                raise Violation(
                    check,
                    f"{term} dtype {d or 'UNDEFINED'} is not one of "
                    f"{{{', '.join(allowed)}}} on {call.product}",
                )
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        allowed = cls.allowed(spec, check, product)
        inputs = [p.name for p in spec.tensor_inputs]
        for term in check.terms:
            if not term.param:
                continue
            for d in dt.tables().names():
                if d in allowed:
                    continue
                for group in ([term.param], partners(spec, term.param), inputs + [term.param]):
                    yield f"{term.param}:{d}", set_dtype(base, group, d)


class SameDtype(_TermKind):
    """All terms have one dtype."""

    name = "same_dtype"
    limit = 3

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        got = [(str(t), dtype_of(call, check, t)) for t in check.terms]
        if len({d for _, d in got}) != 1 or got[0][1] is None:
            raise Violation(check, "dtypes differ: " + ", ".join(f"{n}={d}" for n, d in got))
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        return cls.retyped(cls.term_params(check), base)

    @classmethod
    def tied(cls, spec: OpSpec, check: Check, product: str) -> tuple[str, ...]:
        # Only a rule the library always runs there ties its plain tensor terms.
        if not check.applies_on(product) or check.when is not None:
            return ()
        return tuple(t.param for t in check.terms if t.param and spec.param(t.param).is_tensor)


class Promotable(_DtypeKind):
    """The first two tensors named have a promoted dtype (PromoteType is not DT_UNDEFINED)."""

    name = "promotable"
    param_kind = "tensor"
    limit = 2

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        a, b = (arg(call, check, n).dtype for n in check.params[:2])
        if dt.tables().promote(a, b) is None:
            raise Violation(check, f"no promotion between {a} and {b}")
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        return cls.retyped(list(check.params), base)


class Castable(_TermKind):
    """Every term's dtype can be cast to the dtype of `to` (CanCast)."""

    name = "castable"
    fields = {**CheckKind.fields, "to": NAME}
    required = ("params", "to")
    limit = 3

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        dst = dtype_of(call, check, check.to)  # type: ignore[arg-type]
        for term in check.terms:
            src = dtype_of(call, check, term)
            if src is None or dst is None or not dt.tables().can_cast(src, dst):
                raise Violation(
                    check,
                    f"{term} ({src or 'no promotion'}) cannot be cast to "
                    f"{check.to} ({dst or 'no promotion'})",
                )
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        names = cls.term_params(check)
        if check.to is not None and check.to.param:
            names = [check.to.param] + names
        return cls.retyped(names, base)


def partners(spec: OpSpec, name: str) -> list[str]:
    """Tensors tied to `name` by a same_dtype rule (changing one alone would trip that rule)."""
    out = [name]
    for c in spec.checks:
        if c.kind == SameDtype.name and name in c.params:
            out += [p for p in c.params if p not in out and spec.param(p).is_tensor]
    return out
