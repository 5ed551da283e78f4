"""The kinds of check a spec's `checks:` can hold: one class per kind, registered in CHECK_KINDS.

A kind's class holds all the suite knows of it: how its YAML fields are read and checked
(`parse`, for the linter), what it checks on a call (`evaluate`, run by conformance.spec.interpret in spec
order), how a valid call is broken to violate it (`mutations`, for conformance.cases.negatives) and
which generated positive cases exercise it (`credits`, `allowed_dtypes`, for planning). Adding a
kind is adding a class to CHECK_KINDS: its YAML fields (`fields`, `required`, `one_of`) make the
`checks` part of specs/schema/op-spec.schema.json (`schema_fragment`; rewrite the file with
`python -m aclnn_conformance.conformance.spec.checks.kinds --write`, a test fails while it differs). The base class
is in conformance.spec.checks.base, the dtype and shape kinds in checks_dtype and checks_shape.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ...acl import dtypes as dt
from ...acl.call import ArrayArg, Call, CallError, number_problem
from ..model import Check, OpSpec, Param
from .base import (
    COMMON_FIELDS,
    COMMON_REQUIRED,
    Args,
    CheckKind,
    Mutations,
    Violation,
    arg,
    attribute_env,
)
from .dims import DimDivisible, DimInRange, DimsUnique
from .dtype import Castable, DtypeIn, Promotable, SameDtype
from .shape import (
    Broadcastable,
    DimNonempty,
    MaxRank,
    MinRank,
    NumelAlong,
    NumelAtLeast,
    SameFormat,
    SameShape,
    ShapeIs,
    ShapeIsBroadcast,
)

if TYPE_CHECKING:
    from ..lint import Linter


class NotNull(CheckKind):
    """Every parameter named is a non-null pointer."""

    name = "not_null"

    @classmethod
    def param_problem(cls, name: str, p: Param) -> str | None:
        if p.by_value:
            return f"not_null: {name!r} is a {p.kind} passed by value; it cannot be null"
        return None

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        for name in check.params:
            if call.args[name] is None:
                raise Violation(check, f"{name} is null")
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        for n in check.params:
            yield n, {**base, n: None}


class Value(CheckKind):
    """A condition on scalars, bools and strings (`violated_if`), with violating `examples`."""

    name = "value"
    fields = {
        "violated_if": {"type": "string"},
        "examples": {"type": "array", "items": {"type": "object"}},
    }
    required = ("violated_if", "examples")

    @classmethod
    def parse_condition(
        cls, lint: Linter, base: tuple, c: dict[str, Any], by_name: dict[str, Param]
    ) -> tuple[Any, list[dict[str, Any]]]:
        attrs = [p.name for p in by_name.values() if not p.is_tensor and not p.is_list]
        strings = [p.name for p in by_name.values() if p.kind == "string"]
        violated = lint.expr((*base, "violated_if"), c["violated_if"], attrs, strings)
        examples: list[dict[str, Any]] = []
        for j, ex in enumerate(c.get("examples", [])):
            for k, v in ex.items():
                if k not in attrs:
                    lint.err(
                        (*base, "examples", j),
                        f"example sets {k!r}, which is not a scalar, bool, string, int, "
                        f"float or array parameter",
                    )
                elif by_name[k].is_number and (why := number_problem(by_name[k].kind, v)):
                    lint.err((*base, "examples", j, k), f"example {k}: {why}")
                elif by_name[k].is_array and not isinstance(v, list):
                    lint.err((*base, "examples", j, k), f"example {k}: an array is a list")
                elif isinstance(v, dict):
                    cls._typed_example(lint, (*base, "examples", j, k), by_name[k], v)
            examples.append(dict(ex))
        return violated, examples

    @staticmethod
    def _typed_example(lint: Linter, where: tuple, param: Param, v: dict) -> None:
        """An example scalar given with its own dtype: {dtype: DOUBLE, value: -1.0e-300}."""
        if param.kind != "scalar":
            lint.err(
                where, f"only a scalar example can give a dtype ({param.name} is a {param.kind})"
            )
        elif (
            set(v) != {"dtype", "value"}
            or isinstance(v["value"], bool)
            or not isinstance(v["value"], int | float)
        ):
            lint.err(where, "a typed example is {dtype: NAME, value: NUMBER}")
        else:
            try:
                dt.get(str(v["dtype"]))
            except dt.DtypeError as exc:
                lint.err(where, str(exc))

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        cond = check.violated_if
        assert cond is not None  # parse always sets it for this kind
        env = attribute_env(spec, call)
        if any(env.get(n) is None for n in cond.names):
            raise CallError(f"{check.id}: a parameter it reads is null")
        if bool(np.all(cond.evaluate(env))):
            shown = ", ".join(f"{n}={env[n]!r}" for n in sorted(cond.names))
            raise Violation(check, f"{cond.source} holds ({shown})")
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        for i, ex in enumerate(check.examples):
            args = dict(base)
            for k, v in ex.items():
                p = spec.param(k)
                if p.kind == "scalar" and isinstance(v, dict):  # {dtype: DOUBLE, value: x}
                    args[k] = replace(base[k], dtype=dt.get(v["dtype"]).name, value=v["value"])
                elif p.is_array:
                    args[k] = ArrayArg(p.kind, tuple(v))
                elif p.kind == "float":
                    args[k] = float(v)
                else:
                    args[k] = replace(base[k], value=v) if p.kind == "scalar" else v
            yield f"example{i + 1}", args

    @classmethod
    def credits(cls, check: Check, axis: str, param: str | None = None) -> bool:
        return (
            axis == "scalar-value"
            and check.violated_if is not None
            and param in check.violated_if.names
        )


class StringIn(CheckKind):
    """Every string parameter named is one of `values`."""

    name = "string_in"
    param_kind = "string"
    fields = {
        **CheckKind.fields,
        "values": {"type": "array", "minItems": 1, "items": {"type": "string"}},
    }
    required = ("params", "values")
    credit = frozenset({"variant"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        for name in check.params:
            v = call.args[name]
            if v not in check.values:
                raise Violation(check, f"{name} = {v!r} is not one of {list(check.values)}")
        return False

    @classmethod
    def mutations(cls, spec: OpSpec, check: Check, base: Args, product: str) -> Mutations:
        for n in check.params:
            for label, s in [
                ("test", "test"),
                ("upper", "NONE"),
                ("empty", ""),
                ("space", "tanh "),
            ]:
                yield f"{n}:{label}", {**base, n: s}


class EmptySuccess(CheckKind):
    """An empty tensor among those named ends the call with success, computing nothing."""

    name = "empty_success"
    param_kind = "tensor"
    fixed_status = 0
    credit = frozenset({"empty"})

    @classmethod
    def evaluate(cls, spec: OpSpec, check: Check, call: Call) -> bool:
        return any(arg(call, check, n).is_empty for n in check.params)


CHECK_KINDS: dict[str, type[CheckKind]] = {
    k.name: k
    for k in (
        NotNull,
        DtypeIn,
        SameDtype,
        Promotable,
        Castable,
        MaxRank,
        MinRank,
        DimNonempty,
        SameFormat,
        Broadcastable,
        SameShape,
        NumelAtLeast,
        NumelAlong,
        ShapeIsBroadcast,
        ShapeIs,
        DimInRange,
        DimsUnique,
        DimDivisible,
        Value,
        StringIn,
        EmptySuccess,
    )
}


def kind_of(check: Check) -> type[CheckKind]:
    """The class of `check`'s kind."""
    return CHECK_KINDS[check.kind]


SCHEMA_PATH = ("schema", "op-spec.schema.json")  # under the specs folder


def schema_fragment(kinds: dict[str, type[CheckKind]] | None = None) -> dict[str, Any]:
    """The JSON Schema of a spec's `checks:` list, built from COMMON_FIELDS and each kind's
    `fields`, `required` and `one_of`: what a kind's YAML holds is said once, in its class.
    A field may be given to any kind (the base parse reads it); the kind decides what is
    required. Raises ValueError where two kinds give one field two schemas, or a kind requires
    a field it does not declare."""
    kinds = CHECK_KINDS if kinds is None else kinds
    props: dict[str, Any] = {"id": COMMON_FIELDS["id"], "kind": {"enum": list(kinds)}}
    owner: dict[str, str] = {}
    for k in kinds.values():
        for f, schema in k.fields.items():
            if f in props and props[f] != schema:
                raise ValueError(
                    f"check kinds {owner[f]} and {k.name} give field {f!r} two schemas; share one"
                )
            props[f], owner[f] = schema, owner.get(f, k.name)
        missing = [f for f in (*k.required, *k.one_of) if f not in k.fields]
        if missing:
            raise ValueError(f"check kind {k.name} requires {missing} but does not declare them")
    props.update({f: s for f, s in COMMON_FIELDS.items() if f != "id"})
    groups: dict[tuple[str, ...], list[str]] = {}
    for k in kinds.values():
        if k.required:
            groups.setdefault(tuple(k.required), []).append(k.name)
    rules: list[dict[str, Any]] = []
    for req, names in groups.items():
        when = {"const": names[0]} if len(names) == 1 else {"enum": names}
        rules.append({"if": {"properties": {"kind": when}}, "then": {"required": list(req)}})
    for k in kinds.values():
        if k.one_of:
            rules.append(
                {
                    "if": {"properties": {"kind": {"const": k.name}}},
                    "then": {"oneOf": [{"required": [f]} for f in k.one_of]},
                }
            )
    item = {
        "type": "object",
        "additionalProperties": False,
        "required": list(COMMON_REQUIRED),
        "properties": props,
        "allOf": rules,
    }
    return {"type": "array", "minItems": 1, "items": item}


def schema_text(current: str) -> str:
    """The schema file's text with its `checks` part generated (the rest kept as it is)."""
    import json

    schema = json.loads(current)
    schema["properties"]["checks"] = schema_fragment()
    return json.dumps(schema, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`python -m aclnn_conformance.conformance.spec.checks.kinds [--write]`: check (exit 1 when stale) or rewrite the
    schema's `checks` part from CHECK_KINDS."""
    import sys

    from .... import specs

    args = sys.argv[1:] if argv is None else argv
    path = specs.root().joinpath(*SCHEMA_PATH)
    current = path.read_text(encoding="utf-8")
    wanted = schema_text(current)
    if "--write" in args:
        if wanted != current:
            path.write_text(wanted, encoding="utf-8")
        print(f"{path}: checks generated from {len(CHECK_KINDS)} check kinds")
        return 0
    if wanted != current:
        print(
            f"{path}: stale; rewrite it with: python -m aclnn_conformance.conformance.spec.checks.kinds --write"
        )
        return 1
    print(f"{path}: up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
