"""The operator spec model: what one YAML file under specs/ops says, as typed records.

Every rule that a case can exercise carries a clause id, unique within its spec; the full clause
name used in results and reports is `<op name>/<clause id>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .expr.language import Expr

NULL_MEANINGS = ("default", "absent", "error")
#: Every parameter kind (docs/spec-format.md "params"). By value: bool, int (int64_t), float
#: (double) and string (char*); by pointer: tensor, scalar, the arrays and the lists.
PARAM_KINDS = (
    "tensor",
    "scalar",
    "bool",
    "string",
    "int",
    "float",
    "int_array",
    "float_array",
    "bool_array",
    "tensor_list",
    "scalar_list",
)
NUMBER_KINDS = ("int", "float")  # passed by value; a formula reads them as numbers
ARRAY_KINDS = ("int_array", "float_array", "bool_array")  # aclIntArray* ...: values, by pointer
LIST_KINDS = ("tensor_list", "scalar_list")  # aclTensorList*, aclScalarList*
BY_VALUE_KINDS = ("bool", "string", "int", "float")  # never null (a string is a char*, but the
# specs so far pass none null)
TERM_PROMOTE = re.compile(r"^promote\(\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*\)$")


@dataclass(frozen=True)
class IndexOf:
    """An integer tensor's values are indices into another tensor (`values: {index_of: {param:
    self, dim: 1, ignore: ignore_index}}`): drawn in [0, size of `param` along `dim`), plus the
    value of the int parameter `ignore` (the ignore index) at some positions where given. `dim`
    is an int literal (negative wraps) or an int parameter's name. `pad` (an int literal, with
    no `ignore`): the tensor holds lists of indices along its own `dim`, each ended by `pad`
    (what follows the first `pad` of a row is read by nothing: indices and `pad` again)."""

    param: str
    dim: int | str
    ignore: str | None = None
    pad: int | None = None


@dataclass(frozen=True)
class Along:
    """A tensor read by its element count along one dim of another (`along: {of: self, dim:
    1}`): n elements, whatever their shape, lie along `dim` of the formula's elements (n = 1
    broadcasts over them all): a channel weight, (C) or (1, C, 1) read as (1, C, 1, 1) beside a
    (N, C, H, W) self. The size it must hold is `of`'s along `dim`, 1 where `of` has `dim` dims
    or fewer (the vendor's and ATen's "channels")."""

    of: str
    dim: int

    def size(self, shape: tuple[int, ...]) -> int:
        """The element count a tensor laid along `of` of this shape holds (besides 1)."""
        return int(shape[self.dim]) if len(shape) > self.dim else 1


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # one of PARAM_KINDS
    role: str = "input"  # input | output | inout (tensors only; inout: an in-place op's tensor)
    c_type: str = ""
    default: Any = None
    default_dtype: str | None = None  # scalars
    values: tuple[Any, ...] = ()  # strings, ints, floats: the documented choices
    doc: str = ""
    c_name: str = ""  # the name in the C signature when it differs (an in-place op's selfRef)
    # What a null pointer does (`if_null:`, NULL_MEANINGS): "default" (accepted, the op uses `default`),
    # "absent" (accepted, the parameter takes no part), "error" (a not_null check rejects it);
    # "" when the spec does not say (a pointer no check names is then simply not tested null).
    null: str = ""  # the `if_null:` field
    range: tuple[float, float] | None = None  # int, float: the documented [lo, hi] (inclusive)
    # An output the op neither reads nor writes (`unused: true`; the doc's "reserved, not used"
    # buffer): no formula computes it and the judge requires its storage unchanged.
    unused: bool = False
    # an integer tensor whose values index another tensor along a dim (`values: {index_of:}`)
    index_of: IndexOf | None = None
    # a tensor input read by its element count along a dim of another (`along:`)
    along: Along | None = None
    # A tensor's shape rule (`shape:`, conformance.spec.shapes.ShapeRule); None: an output is
    # the broadcast of the tensor inputs, an input is free.
    shape: Any = None

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    @property
    def c_float(self) -> bool:
        """A `float` parameter the prototype declares as a C `float` (`c_type: float`), not the
        kind's `double`: the library receives the value rounded to float32."""
        return self.kind == "float" and self.c_type == "float"

    def passed(self, value: Any) -> Any:
        """What the library receives for `value` by value: a C float parameter's value rounded
        to float32 (0.1 is 0.100000001490116...; beyond float's range an infinity), any other
        value as it is."""
        if self.c_float and isinstance(value, int | float) and not isinstance(value, bool):
            with np.errstate(over="ignore"):
                return float(np.float32(value))
        return value

    @property
    def is_number(self) -> bool:
        """An int64_t or double passed by value: formulas and checks read it as a number."""
        return self.kind in NUMBER_KINDS

    @property
    def is_array(self) -> bool:
        """An aclIntArray*, aclFloatArray* or aclBoolArray*: a tuple of values, not elementwise."""
        return self.kind in ARRAY_KINDS

    @property
    def is_list(self) -> bool:
        """An aclTensorList* or aclScalarList*."""
        return self.kind in LIST_KINDS

    @property
    def by_value(self) -> bool:
        """Passed by value in C: it has no null."""
        return self.kind in ("bool", "int", "float")

    @property
    def nullable(self) -> bool:
        """A null pointer is a valid argument (its `null` is default or absent)."""
        return self.null in ("default", "absent")

    @property
    def is_output(self) -> bool:
        """Written by the op: an output, or an in-place op's input that is also its output."""
        return self.kind == "tensor" and self.role in ("output", "inout")

    @property
    def is_inout(self) -> bool:
        return self.kind == "tensor" and self.role == "inout"

    @property
    def is_read(self) -> bool:
        """Read by the op: every parameter but a pure output tensor."""
        return not (self.kind == "tensor" and self.role == "output")


@dataclass(frozen=True)
class DtypeTerm:
    """A dtype-valued term in a check: a parameter's dtype, a dtype name, or promote(a, b)."""

    param: str | None = None
    dtype: str | None = None
    promote: tuple[str, str] | None = None

    def __str__(self) -> str:
        if self.promote:
            return f"promote({self.promote[0]}, {self.promote[1]})"
        return self.param or self.dtype or "?"

    def params(self) -> tuple[str, ...]:
        if self.promote:
            return self.promote
        return (self.param,) if self.param else ()


@dataclass(frozen=True)
class Check:
    """One validation rule; the engine runs them in spec order and the first violation wins."""

    id: str
    kind: str
    params: tuple[str, ...]
    status: int
    source: str
    terms: tuple[DtypeTerm, ...] = ()  # dtype kinds: the params (or promote(...)) as terms
    dtype_set: str | None = None
    dtypes: tuple[str, ...] = ()
    to: DtypeTerm | None = None
    max: int | None = None
    of: tuple[str, ...] = ()
    violated_if: Expr | None = None
    values: tuple[str, ...] = ()
    examples: tuple[dict[str, Any], ...] = ()
    summary: str = ""
    line: int = 0
    dim: str | None = None  # dim_in_range: the int or int_array parameter naming dims
    min: int | None = None  # min_rank
    by: int | None = None  # dim_divisible: the divisor
    # The products the check applies on (`products:`, any kind); () means all of the op's.
    products: tuple[str, ...] = ()
    # `when:` (any kind): an expression on the attributes; the library runs the check only
    # where it holds (a size rule the library runs in training only). None: always.
    when: Expr | None = None
    numel_of: str | None = None  # numel_at_least: the tensor whose element count is the bound
    axis: int | None = None  # dim_nonempty: the dim (an int literal) that must not be empty

    def applies_on(self, product: str) -> bool:
        """Whether the library runs this check on `product` (a product-scoped rule)."""
        return not self.products or product in self.products

    def applies_with(self, env: dict[str, Any]) -> bool:
        """Whether the library runs this check with these attributes (its `when:`)."""
        return self.when is None or bool(self.when.evaluate(env))


@dataclass(frozen=True)
class Let:
    id: str
    name: str
    value: Expr
    source: str
    summary: str = ""
    line: int = 0


@dataclass(frozen=True)
class Branch:
    id: str
    when: Expr | None  # None: otherwise
    value: Expr
    source: str
    summary: str = ""
    line: int = 0


@dataclass(frozen=True)
class Relation:
    """A rule a random output must satisfy element by element (`relation:` of a formula), in one
    of three forms over the inputs, attributes and outputs: `holds` (a condition that must be
    true), `equals` (the output is this value, judged under the output's tolerance policy like
    any computed output) or `within` (the output lies in [lo, hi], each bound widened to the
    output dtype's next value outward: a draw in float32 cast to a narrower type stays in it);
    `where` (optional) restricts it to the elements where a condition holds."""

    id: str
    holds: Expr | None
    source: str
    summary: str = ""
    line: int = 0
    equals: Expr | None = None
    within: tuple[Expr, Expr] | None = None
    where: Expr | None = None

    @property
    def form(self) -> str:
        return "equals" if self.equals else "within" if self.within else "holds"

    @property
    def exprs(self) -> tuple[Expr, ...]:
        """Every expression of the relation, its `where` first."""
        main = (self.equals,) if self.equals else self.within or (self.holds,)
        return tuple(e for e in (self.where, *main) if e is not None)


@dataclass(frozen=True)
class Formula:
    output: str
    lets: tuple[Let, ...]
    branches: tuple[Branch, ...]
    source: str = ""
    # A random output (`relation:`): the branches give one valid draw (what the reference
    # writes) and the judge checks these relations on a backend's outputs instead of values,
    # where `random_when` (an expression on the attributes; None: always) holds.
    relations: tuple[Relation, ...] = ()
    random_when: Expr | None = None


@dataclass(frozen=True)
class SpecialPoint:
    id: str
    param: str
    value: Expr
    with_: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    source: str = ""
    line: int = 0


@dataclass(frozen=True)
class Property:
    id: str
    kind: str
    params: tuple[str, ...]
    source: str
    summary: str = ""
    line: int = 0


@dataclass(frozen=True)
class DeviationFormula:
    """The library's own version of a formula branch (or let): None keeps the spec's."""

    when: Expr | None = None
    value: Expr | None = None


DIFFERS = ("status", "values", "nonfinite")
BOUND_KEYS = ("rel", "ulp", "abs")


@dataclass(frozen=True)
class Deviation:
    """A known difference between the doc (the spec) and an implementation. With `backends` it
    gates: a failure of exactly the kind `differs` names, on a case exercising `clause` and
    fitting the narrowing (dtypes, products, when), becomes the verdict `deviation`."""

    id: str
    summary: str
    source: str
    clause: str | None = None
    actual: str = ""
    backends: tuple[str, ...] = ()
    line: int = 0
    differs: str | None = None  # status | values | nonfinite (required when gating)
    actual_status: int | None = None  # status: what the library returns instead
    formula: DeviationFormula | None = None  # values: the library's branch
    bound: dict[str, float] = field(default_factory=dict)  # values: rel / ulp / abs
    dtypes: Any = None  # dtypecond.DtypeCondition: only calls with these dtypes
    products: tuple[str, ...] = ()  # only these products
    when: Expr | None = None  # only calls whose scalars, bools and strings make it true


@dataclass
class OpSpec:
    name: str  # snake case, e.g. some_op_backward
    op: str  # the C API name, e.g. aclnnSomeOpBackward
    aten: str
    summary: str
    source: dict[str, str]
    products: tuple[str, ...]
    params: tuple[Param, ...]
    dtype_sets: dict[str, dict[str, tuple[str, ...]]]  # set -> product (or "default") -> dtypes
    checks: tuple[Check, ...]
    formula: Formula  # the first (for a single-output op the only) formula
    special_points: tuple[SpecialPoint, ...] = ()
    properties: tuple[Property, ...] = ()
    deviations: tuple[Deviation, ...] = ()
    tolerance: dict[str, dict[str, float]] = field(default_factory=dict)
    path: str = ""
    sha256: str = ""
    bindings: dict[str, Any] = field(default_factory=dict)  # family -> bindings.Binding
    # The in-place variant the file also defines (spec section `inplace`), and for a variant the
    # name of the spec it was derived from.
    variants: tuple[OpSpec, ...] = ()
    inplace_of: str = ""
    # For a variant, its in-place tensor (the input the written output took the place of): a
    # relation reads it as it was before the call (the written value is its formula's subject)
    inplace_tensor: str = ""
    # One formula per computed output (`formulas:`; `formula:` gives one); () means (formula,).
    formulas: tuple[Formula, ...] = ()
    # An output's own per-dtype tolerance overrides (`tolerance: {out: {DTYPE: {...}}}`)
    output_tolerance: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    _per_output: dict[str, OpSpec] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not self.formulas:
            self.formulas = (self.formula,)

    def tolerance_of(self, output: str) -> dict[str, dict[str, float]]:
        """The tolerance overrides judging `output`: the spec's, with the output's own on top."""
        own = self.output_tolerance.get(output)
        if not own:
            return self.tolerance
        merged = {k: dict(v) for k, v in self.tolerance.items()}
        for dtype, fields in own.items():
            merged[dtype] = {**merged.get(dtype, {}), **fields}
        return merged

    @property
    def multi(self) -> bool:
        """Several outputs are computed, each by its own formula."""
        return len(self.formulas) > 1

    def formula_of(self, output: str) -> Formula | None:
        """The formula computing `output`, or None (an unused output)."""
        return next((f for f in self.formulas if f.output == output), None)

    def for_output(self, output: str) -> OpSpec:
        """This spec seen as computing `output` alone: `formula` is that output's formula. The
        single-output machinery (the reference's tiers, the clause walk) runs on it unchanged;
        the same object is returned each time (kernel caches key on its identity)."""
        f = self.formula_of(output)
        if f is None:
            raise KeyError(output)
        if f is self.formula and not self.multi:
            return self
        if output not in self._per_output:
            self._per_output[output] = replace(self, formula=f, formulas=(f,))
        return self._per_output[output]

    @property
    def computed(self) -> tuple[OpSpec, ...]:
        """One single-output view (for_output) per formula, in spec order."""
        return tuple(self.for_output(f.output) for f in self.formulas)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def tensor_inputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_tensor and p.is_read)

    @property
    def outputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_output)

    @property
    def attributes(self) -> tuple[Param, ...]:
        """Scalars, bools, strings, numbers, arrays and lists: everything that is not a tensor."""
        return tuple(p for p in self.params if not p.is_tensor)

    def dtypes_for(self, set_name: str, product: str) -> tuple[str, ...]:
        table = self.dtype_sets[set_name]
        return table.get(product, table.get("default", ()))

    def clause_ids(self) -> list[str]:
        """Every clause id of the spec, in spec order."""
        ids = [c.id for c in self.checks]
        for f in self.formulas:
            ids += [x.id for x in f.lets] + [b.id for b in f.branches]
            ids += [r.id for r in f.relations]
        ids += [s.id for s in self.special_points] + [p.id for p in self.properties]
        return ids

    def clause(self, clause_id: str) -> str:
        """Fully qualified clause name."""
        return f"{self.name}/{clause_id}"
