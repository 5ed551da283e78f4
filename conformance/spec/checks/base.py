"""The base class of the check kinds, and what evaluating a check on a call needs.

conformance.spec.checks.kinds registers one subclass per kind; see there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...acl import dtypes as dt
from ...acl.call import ArrayArg, Call, CallError, ScalarArg, TensorArg
from ..expr.language import MAX_DIMS, NUMEL, SIZE, SPANS
from ..model import Check, DtypeTerm, OpSpec, Param

if TYPE_CHECKING:
    from ..lint import Linter

Args = dict[str, Any]
Mutations = Iterator[tuple[str, Args]]


class Violation(Exception):
    """A check that a call fails; the message says how."""

    def __init__(self, check: Check, message: str):
        super().__init__(message)
        self.check, self.message = check, message


def null_default(p: Param, call: Call | None = None) -> Any:
    """The argument a null pointer stands for when the parameter says `null: default`: its
    documented default (a scalar of its default dtype). A tensor's is a rank-0 tensor filled
    with the default, which broadcasts to whatever shape the formula reads it at; its dtype is
    `default_dtype`, else that of the call's first non-null input tensor (FLOAT without one)."""
    if p.kind == "tensor":
        dtype = p.default_dtype or next(
            (
                a.dtype
                for a in (call.args.values() if call is not None else ())
                if isinstance(a, TensorArg)
            ),
            "FLOAT",
        )
        return TensorArg.from_array(np.array(float(p.default)), dtype)
    if p.kind == "scalar":
        return ScalarArg(p.default_dtype or "FLOAT", p.default)
    if p.is_array:
        return ArrayArg(p.kind, tuple(p.default or ()))
    return bool(p.default) if p.kind == "bool" else p.default


def with_defaults(spec: OpSpec, call: Call, tensors: bool = True) -> Call:
    """`call` with every null of a `null: default` parameter replaced by that default: the call
    the op makes. Backends that cannot pass a null (PyTorch, JAX) and the formula see this one.
    tensors=False keeps a null tensor null (PyTorch and JAX take None for an optional tensor,
    and their default is the same fill)."""
    subs = {
        p.name: null_default(p, call)
        for p in spec.params
        if p.null == "default"
        and (tensors or p.kind != "tensor")
        and p.name in call.args
        and call.args[p.name] is None
    }
    return Call(call.op, call.product, {**call.args, **subs}) if subs else call


def accepted_nulls(spec: OpSpec, call: Call) -> set[str]:
    """The parameters that are null in `call` and whose null the spec accepts (default, absent):
    no check reads them (the library tests `ptr != nullptr && ...`)."""
    return {p.name for p in spec.params if p.nullable and call.args.get(p.name, 0) is None}


def attribute_env(spec: OpSpec, call: Call) -> dict[str, Any]:
    """Scalars (as float64 of their declared dtype), bools, strings, ints and floats (Python
    numbers) of the call, arrays as tuples of Python numbers (lists: tuples of their items); a
    null that stands for a default (`null: default`) is that default; a C `float` parameter
    the float32 value the library receives (Param.passed)."""
    env: dict[str, Any] = {}
    for p in spec.attributes:
        v = call.args.get(p.name)
        if v is None and p.null == "default":
            v = null_default(p)
        if isinstance(v, ScalarArg):
            v = v.as_float64()
        elif isinstance(v, ArrayArg):
            v = v.values()
        env[p.name] = p.passed(v)
    for p in spec.params:  # numel(x): a tensor's own element count
        t = call.args.get(p.name)
        if p.is_tensor and hasattr(t, "shape"):
            numel, sizes = _shape_keys(p.name)
            env[numel] = math.prod(int(n) for n in t.shape)
            dims = tuple(t.shape) or (1,)  # size(x, k): a 0-d tensor as one dim of size 1
            for k in range(-min(len(dims), MAX_DIMS), min(len(dims), MAX_DIMS)):
                env[sizes[k]] = int(dims[k])
            of = call.args.get(p.along.of) if p.along is not None else None
            if hasattr(of, "shape"):  # laid along a dim: the dims a reduction to it reduces
                rank, one = len(of.shape), env[numel] == 1
                env[SPANS.format(p.name)] = tuple(
                    d
                    for d in range(rank)
                    if one or d != p.along.dim  # type: ignore[union-attr]
                )
    return env


@functools.lru_cache(maxsize=1024)
def _shape_keys(name: str) -> tuple[str, dict[int, str]]:
    """The environment's names of tensor `name`'s element count and dim sizes (by dim k)."""
    return NUMEL.format(name), {k: SIZE.format(name, k) for k in range(-MAX_DIMS, MAX_DIMS)}


def arg(call: Call, check: Check, name: str) -> Any:
    """Argument `name` of the call, which a check can only read once a null rule has passed."""
    v = call.args[name]
    if v is None:
        raise CallError(f"{name} is null but the spec checks it in {check.id} before any null rule")
    return v


def dtype_of(call: Call, check: Check, term: DtypeTerm) -> str | None:
    """The dtype a term names in the call; None where promote(a, b) has no result."""
    if term.dtype:
        return term.dtype
    if term.param:
        return arg(call, check, term.param).dtype
    a, b = (arg(call, check, n).dtype for n in term.promote)  # type: ignore[union-attr]
    return dt.tables().promote(a, b)


def broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The broadcast shape of `shapes`, or None if they do not broadcast."""
    try:
        return tuple(int(n) for n in np.broadcast_shapes(*shapes))
    except ValueError:
        return None


# The JSON Schema of the YAML fields of a check (specs/schema/op-spec.schema.json's `checks` is
# generated from these and the kinds' `fields`: conformance.spec.checks.kinds.schema_fragment).
NAME = {"type": "string", "minLength": 1, "maxLength": 200}
#: Fields every check has, whatever its kind.
COMMON_FIELDS: dict[str, dict[str, Any]] = {
    "id": {"type": "string", "pattern": "^[a-z0-9][A-Za-z0-9-]*$"},
    "status": {"type": ["string", "integer"]},
    "summary": {"type": "string"},
    "source": {"type": "string", "minLength": 1},
    # the products the check applies on (default: every product of the op)
    "products": {"type": "array", "minItems": 1, "items": NAME},
    # an expression on the attributes: the check runs only where it holds (default: always)
    "when": {"type": ["string", "boolean"]},
}
COMMON_REQUIRED = ("id", "kind", "source")
PARAMS = {"type": "array", "minItems": 1, "items": NAME}


class CheckKind:
    """A kind of check. The defaults fit a rule on named parameters that cases cannot break."""

    name: ClassVar[str] = ""
    #: The kind's own YAML fields (besides COMMON_FIELDS) and the JSON Schema of each; a field
    #: two kinds share has one schema (conformance.spec.checks.kinds.schema_fragment refuses two).
    fields: ClassVar[dict[str, dict[str, Any]]] = {"params": PARAMS}
    required: ClassVar[tuple[str, ...]] = ("params",)  # of `fields`, always given
    one_of: ClassVar[tuple[str, ...]] = ()  # of `fields`: exactly one of these is given
    param_kind: ClassVar[str | None] = None  # what every name in `params` must be: tensor | string
    fixed_status: ClassVar[int | None] = None  # the status whatever `status:` says
    limit: ClassVar[int | None] = None  # negative cases kept per check (None: every mutation)
    credit: ClassVar[frozenset[str]] = frozenset()  # plan axes whose positive cases exercise it

    # -- the YAML fields (the linter calls parse) ------------------------------------------------
    @classmethod
    def parse(
        cls, lint: Linter, i: int, c: dict[str, Any], by_name: dict[str, Param], sets: dict
    ) -> Check:
        """The Check of `checks[i]`, after the schema; every problem is reported to `lint`."""
        base = ("checks", i)
        status = lint.status((*base, "status"), c.get("status", "ACLNN_ERR_PARAM_INVALID"))
        if cls.fixed_status is not None:
            status = cls.fixed_status
        params: list[str] = []
        terms: list[DtypeTerm] = []
        for j, text in enumerate(c.get("params", [])):
            cls.parse_param(lint, (*base, "params", j), text, by_name, params, terms)
        set_name = c.get("set")
        if set_name is not None and set_name not in sets:
            lint.err(
                (*base, "set"),
                f"unknown dtype set {set_name!r} (defined: {', '.join(sets) or 'none'})",
            )
        dtypes = [
            lint.dtype_name((*base, "dtypes", j), n) for j, n in enumerate(c.get("dtypes", []))
        ]
        to = lint.term((*base, "to"), c["to"], by_name) if "to" in c else None
        of = tuple(c.get("of", ()))
        for j, n in enumerate(of):
            if n not in by_name or not by_name[n].is_tensor:
                lint.err((*base, "of", j), f"unknown tensor parameter {n!r}")
        violated, examples = cls.parse_condition(lint, base, c, by_name)
        return Check(
            id=c["id"],
            kind=cls.name,
            params=tuple(params),
            status=status,
            source=c["source"],
            terms=tuple(terms),
            dtype_set=set_name,
            dtypes=tuple(d for d in dtypes if d),
            to=to,
            max=c.get("max"),
            of=of,
            violated_if=violated,
            values=tuple(c.get("values", ())),
            examples=tuple(examples),
            summary=c.get("summary", ""),
            line=lint.doc.line(base),
            dim=c.get("dim"),
            min=c.get("min"),
            by=c.get("by"),
            products=cls.parse_products(lint, (*base, "products"), c.get("products", [])),
            when=cls.parse_when(lint, base, c, by_name),
            numel_of=c.get("numel_of"),
            axis=c.get("axis"),
        )

    @classmethod
    def parse_when(
        cls, lint: Linter, base: tuple, c: dict[str, Any], by_name: dict[str, Param]
    ) -> Any:
        """A check's `when:`, an expression on the attributes (no tensor is readable)."""
        if "when" not in c:
            return None
        attrs = [n for n, p in by_name.items() if not p.is_tensor]
        strings = [n for n, p in by_name.items() if p.kind == "string"]
        return lint.expr((*base, "when"), str(c["when"]), attrs, strings)

    @classmethod
    def parse_products(cls, lint: Linter, path: tuple, names: list[str]) -> tuple[str, ...]:
        """A check's `products:`, each a product of the op."""
        prods = list(lint.doc.data.get("products") or [])
        for j, n in enumerate(names):
            if n not in prods:
                lint.err(
                    (*path, j), f"product {n!r} is not a product of this op ({', '.join(prods)})"
                )
        return tuple(names)

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
        """Check one entry of `params` and add it to `params` (and `terms`, for dtype kinds)."""
        if text not in by_name:
            lint.err(path, f"unknown parameter {text!r} (parameters: {', '.join(by_name)})")
            return
        problem = cls.param_problem(text, by_name[text])
        if problem:
            lint.err(path, problem)
        params.append(text)

    @classmethod
    def param_problem(cls, name: str, p: Param) -> str | None:
        """Why parameter `p` cannot be named by this kind of check, or None."""
        if cls.param_kind == "tensor" and not p.is_tensor:
            return f"{cls.name}: {name!r} is a {p.kind}, not a tensor"
        if cls.param_kind == "string" and p.kind != "string":
            return f"{cls.name}: {name!r} is a {p.kind}, not a string"
        return None

    @classmethod
    def parse_condition(
        cls, lint: Linter, base: tuple, c: dict[str, Any], by_name: dict[str, Param]
    ) -> tuple[Any, list[dict[str, Any]]]:
        """`violated_if` and `examples`, for the kinds that have them."""
        return None, []

    # -- a call (conformance.spec.interpret) ---------------------------------------------------------------
    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        """Raise Violation if `call` fails `check`; True if it ends the call successfully."""
        return False

    # -- negative cases (conformance.cases.negatives) ---------------------------------------------------
    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        """(detail, args): changes of the valid plan arguments `base` meant to violate `check`."""
        return iter(())

    @classmethod
    def fit(cls, spec: OpSpec, check: Check, base: Args) -> Args:
        """The planned base call changed as little as needed to pass `check` (most kinds: as
        it is; dim_divisible scales the split dim): every case is planned from it."""
        return base

    # -- positive cases (conformance.cases.generate) ----------------------------------------------------
    @classmethod
    def credits(cls, check: Check, axis: str, param: str | None = None) -> bool:
        """Whether the positive cases of plan axis `axis` (varying `param`) exercise `check`."""
        return axis in cls.credit

    @classmethod
    def allowed_dtypes(cls, spec: OpSpec, check: Check, product: str, name: str) -> tuple:
        """The dtypes `check` lets tensor `name` have on `product` (() if it does not say)."""
        return ()

    @classmethod
    def tied(cls, spec: OpSpec, check: Check, product: str) -> tuple[str, ...]:
        """Tensors that share one dtype in every call `check` lets pass on `product` (planning
        enumerates the dtype matrix over such groups, not over each tensor alone)."""
        return ()
