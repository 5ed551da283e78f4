"""The spec-file linter: JSON Schema first, then the semantic checks the schema cannot say.

`lint_file` collects every problem as `file:line: message` and returns the OpSpec only if there
is none (conformance.spec.registry.load_spec raises them instead). Nothing in a spec is executed:
formulas go through conformance.spec.expr.language's whitelist compiler. Each check kind reads its own fields
(conformance.spec.checks.kinds).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from ... import specs
from ..acl import dtypes as dt
from ..acl.call import number_problem
from . import bindings, dtypecond
from .atk_section import section_problems
from .checks.kinds import CHECK_KINDS
from .expr import ir, walk
from .expr.language import CONSTANTS, FUNCTIONS, Expr, ExprError, compile_expr
from .expr.walk import unsupported
from .inplace import derive as derive_inplace
from .model import (
    ARRAY_KINDS,
    LIST_KINDS,
    NUMBER_KINDS,
    TERM_PROMOTE,
    Along,
    Branch,
    Check,
    Deviation,
    DeviationFormula,
    DtypeTerm,
    Formula,
    IndexOf,
    Let,
    OpSpec,
    Param,
    Property,
    Relation,
    SpecialPoint,
)
from .shapes import ShapeRule, ShapeSyntaxError, parse_rule, rule_order
from .tables import planned_products, products, status_codes
from .tolerances import field_problem, policy_for, table_problems, tolerance_table
from .yamlpos import Located, YamlError
from .yamlpos import load as load_yaml


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec file, where it is."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@cache
def _schema() -> dict[str, Any]:
    text = (specs.root() / "schema" / "op-spec.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


class Linter:
    """Builds an OpSpec from located YAML while collecting problems.

    The check kinds call back its helpers (err, status, term, dtype_name, expr) while parsing.
    """

    def __init__(self, doc: Located):
        self.doc = doc
        self.problems: list[Problem] = []
        # arrays and lists: no expression reads them elementwise (checks and shape rules do)
        self.unreadable: dict[str, str] = {}
        self.kinds: dict[str, str] = {}  # every parameter's kind (a reduction's dim: int)
        self.laid: set[str] = set()  # tensors laid `along:` a dim (a reduction may name one)

    def err(self, path: Iterable[Any], message: str, extra_lines: int = 0) -> None:
        self.problems.append(
            Problem(self.doc.file, self.doc.line(tuple(path)) + extra_lines, message)
        )

    # -- helpers -------------------------------------------------------------------------
    def expr(self, path: tuple[Any, ...], text: Any, known: Iterable[str], strings: Iterable[str]):
        if isinstance(text, int | float) and not isinstance(text, bool):
            text = self.doc.numbers.get(tuple(path), text)  # a number keeps its spelling: 6e-8
        try:
            e = compile_expr(text, known, strings)
        except ExprError as exc:
            # A literal block (`|`) starts on the line after its key and keeps its lines; other
            # multi-line styles fold into one line, so the key's line is the best we can say.
            offset = exc.line if self.doc.literal.get(tuple(path)) else 0
            self.err(path, f"{exc.message} in expression {str(text)!r}", offset)
            return None
        dims = {r.param for r in ir.reductions(e.ir) if r.param}
        for name in sorted(dims - self.laid):
            if self.kinds.get(name) not in ("int", "int_array"):
                self.err(
                    path,
                    f"{name} is a {self.kinds.get(name, 'name')}: a reduction's dim must be an "
                    f"int or int_array parameter, a tensor laid `along:` a dim, an int literal "
                    f"or `all` (expression {text!r})",
                )
        for node in ir.along(e.ir):  # one dim: gather, position, cumsum
            if node.param is not None and self.kinds.get(node.param) == "int_array":
                self.err(
                    path,
                    f"{node.param} is an int_array: {node.fn}() runs along one dim, an int "
                    f"parameter or an int literal (expression {text!r})",
                )
        for node in ir.splits(e.ir):
            if node.param is not None and self.kinds.get(node.param) != "int":
                self.err(
                    path,
                    f"{node.param} is a {self.kinds.get(node.param, 'name')}: the dim of "
                    f"{node.key} must be an int parameter or an int literal (expression {text!r})",
                )
            if isinstance(node, ir.Half) and self.kinds.get(node.x) != "tensor":
                self.err(
                    path,
                    f"{node.x} is a {self.kinds.get(node.x, 'let')}: half() splits a tensor "
                    f"input (expression {text!r})",
                )
        read = {n.name for n in ir.walk(e.ir) if isinstance(n, ir.Var)}
        for name in sorted(read & set(self.unreadable)):
            self.err(
                path,
                f"{name} is a {self.unreadable[name]}: an expression cannot read it "
                f"(expression {str(text)!r}; checks and shape rules read arrays)",
            )
        for arith, fns in unsupported(e.functions).items():
            self.err(path, f"the {arith} arithmetic has no {', '.join(fns)} (expression {text!r})")
        return e

    def dtype_name(self, path: tuple[Any, ...], name: Any) -> str | None:
        try:
            return dt.get(str(name)).name
        except dt.DtypeError:
            self.err(path, f"unknown dtype {name!r} (see specs/dtypes.yaml)")
            return None

    def status(self, path: tuple[Any, ...], value: Any) -> int:
        codes = status_codes()
        if value is None:
            return codes["ACLNN_ERR_PARAM_INVALID"]
        if isinstance(value, int) and not isinstance(value, bool):
            if value in codes.values():
                return value
        elif value in codes:
            return codes[value]
        self.err(path, f"unknown status code {value!r} (see specs/status_codes.yaml)")
        return -1

    # -- the spec --------------------------------------------------------------------------
    def build(self) -> OpSpec | None:
        data = self.doc.data
        if not isinstance(data, dict):
            self.err((), "a spec must be a mapping at the top level")
            return None
        validator = jsonschema.Draft202012Validator(_schema())
        schema_errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        for e in schema_errors:
            where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
            path = tuple(e.absolute_path)
            if e.validator == "additionalProperties" and isinstance(e.instance, dict):
                allowed = set(e.schema.get("properties", {}))
                extra = [k for k in e.instance if k not in allowed]
                if extra:  # point at the offending key, not at the mapping holding it
                    path = (*path, extra[0])
            self.err(path, f"{where}: {_schema_message(e)}")
        if schema_errors:
            return None

        prods = list(data["products"])
        for i, p in enumerate(prods):
            if p not in products():
                hint = " (planned, not yet a product)" if p in planned_products() else ""
                self.err(("products", i), f"unknown product {p!r}{hint}")

        params = self.params(data["params"])
        by_name = {p.name: p for p in params}
        self.unreadable = {p.name: p.kind for p in params if p.kind in (*ARRAY_KINDS, *LIST_KINDS)}
        self.kinds = {p.name: p.kind for p in params}
        self.laid = {p.name for p in params if p.along is not None}
        sets = self.dtype_sets(data.get("dtype_sets", {}), prods)
        checks = [self.check(i, c, by_name, sets) for i, c in enumerate(data["checks"])]
        raw_formulas, formula_paths = _formula_sections(data)
        formulas = [
            self.formula(f, by_name, fp) for f, fp in zip(raw_formulas, formula_paths, strict=True)
        ]
        self.outputs_computed(params, formulas, formula_paths)
        formula = formulas[0]
        self.nulls(params, [c for c in checks if c], formulas)
        points = [
            self.special(i, s, by_name, formula)
            for i, s in enumerate(data.get("special_points", []))
        ]
        props = [self.prop(i, p, by_name) for i, p in enumerate(data.get("properties", []))]
        tol, out_tol = self.tolerance(data.get("tolerance", {}), by_name)
        self.judged_dtypes(data)

        ids: dict[str, tuple[Any, ...]] = {}
        sections = [
            ("checks", data["checks"]),
            ("special_points", data.get("special_points", [])),
            ("properties", data.get("properties", [])),
        ]
        for f, fp in zip(raw_formulas, formula_paths, strict=True):
            sections += [((*fp, "let"), f.get("let", [])), ((*fp, "branches"), f["branches"])]
            sections += [((*fp, "relation"), f.get("relation", []))]
        for sec, items in sections:
            base = sec if isinstance(sec, tuple) else (sec,)
            for i, item in enumerate(items):
                cid = item["id"]
                if cid in ids:
                    self.err((*base, i, "id"), f"duplicate clause id {cid!r}")
                ids[cid] = (*base, i)
        devs = [
            self.deviation(i, d, ids, by_name, formula, prods)
            for i, d in enumerate(data.get("deviations", []))
        ]
        if self.problems:
            return None
        if isinstance(data.get("atk"), dict):  # what the ATK section names is of this spec
            kinds = {n: (p.kind, p.is_output) for n, p in by_name.items()}
            for path, msg in section_problems(data["atk"], kinds):
                self.err(("atk", *path), msg)
        variants = self.inplace_variant(data) if "inplace" in data else ()
        if self.problems:
            return None
        return OpSpec(
            name=data["name"],
            op=data["op"],
            aten=data.get("aten", ""),
            summary=data.get("summary", ""),
            source=dict(data["source"]),
            products=tuple(prods),
            params=tuple(params),
            dtype_sets=sets,
            checks=tuple(c for c in checks if c),
            formula=formula,
            formulas=tuple(formulas),
            special_points=tuple(p for p in points if p),
            properties=tuple(p for p in props if p),
            deviations=tuple(d for d in devs if d),
            tolerance=tol,
            output_tolerance=out_tol,
            path=self.doc.file,
            bindings=bindings.from_document(data.get("bindings"), self.doc),
            variants=variants,
        )

    def inplace_variant(self, data: dict[str, Any]) -> tuple[OpSpec, ...]:
        """The spec of the `inplace` section's API, built from the derived data by a linter
        whose problems are reported at the section's line (conformance/spec/inplace.py)."""
        ip = data["inplace"]
        for key in ("input", "output"):
            want = "output" if key == "output" else "input"
            p = next((q for q in data["params"] if q["name"] == ip[key]), None)
            if p is None or p["kind"] != "tensor" or p.get("role", "input") != want:
                self.err(
                    ("inplace", key), f"inplace {key} {ip[key]!r} is not an {want} tensor parameter"
                )
        ids = {c.get("id") for c in data["checks"]}
        for j, cid in enumerate(ip.get("first") or ()):
            if cid not in ids:
                self.err(("inplace", "first", j), f"inplace first: {cid!r} is not a check id")
        if self.problems:
            return ()
        line = self.doc.line(("inplace",))
        sub = Linter(Located(derive_inplace(data), {(): line}, self.doc.file))
        variant = sub.build()
        for prob in sub.problems:
            self.problems.append(
                Problem(prob.file, prob.line, f"inplace variant {ip['name']}: {prob.message}")
            )
        if variant is None:
            return ()
        variant.inplace_of = data["name"]
        variant.inplace_tensor = ip["input"]
        return (variant,)

    def params(self, raw: list[dict[str, Any]]) -> list[Param]:
        out, seen = [], set()
        for i, p in enumerate(raw):
            name = p["name"]
            if name in seen:
                self.err(("params", i, "name"), f"duplicate parameter {name!r}")
            seen.add(name)
            kind = p["kind"]
            if kind != "tensor" and p.get("role", "input") != "input":
                self.err(("params", i, "role"), f"{name}: only tensors can be outputs")
            ddt = p.get("default_dtype")
            if ddt is not None:
                ddt = self.dtype_name(("params", i, "default_dtype"), ddt)
            elif kind == "scalar":
                ddt = "FLOAT"
            if kind == "float" and p.get("c_type", "double") not in ("double", "float"):
                self.err(
                    ("params", i, "c_type"),
                    f"{name}: a float parameter's c_type is double (the default) or float "
                    f"(the prototype's C float: the value is rounded to float32), not "
                    f"{p.get('c_type')!r}",
                )
            null = p.get("if_null", "")
            if null and kind in ("bool", "int", "float"):
                self.err(
                    ("params", i, "if_null"),
                    f"{name}: a {kind} is passed by value; it cannot be null",
                )
            elif null == "default" and p.get("default") is None:
                self.err(
                    ("params", i, "if_null"),
                    f"{name}: if_null: default needs a documented `default:` value to take"
                    + (" (a tensor's: the number it is filled with)" if kind == "tensor" else ""),
                )
            if kind in ("tensor", "tensor_list") and p.get("default") is not None:
                d = p["default"]
                if kind == "tensor_list" or null != "default":
                    self.err(
                        ("params", i, "default"),
                        f"{name}: a {kind} takes a default only with if_null: default "
                        f"(the number a null tensor stands for)",
                    )
                elif isinstance(d, bool) or not isinstance(d, int | float) or d != d:
                    self.err(
                        ("params", i, "default"),
                        f"{name}: a tensor's default is the number a null pointer is filled "
                        f"with, not {d!r}",
                    )
            default, values, rng = self.param_values(i, p)
            out.append(
                Param(
                    name,
                    kind,
                    p.get("role", "input"),
                    p.get("c_type", ""),
                    default,
                    ddt,
                    values,
                    p.get("doc", ""),
                    p.get("c_name", ""),
                    null,
                    rng,
                    bool(p.get("unused", False)),
                    index_of=self.index_of(i, p, raw),
                    along=self.along(i, p, raw),
                )
            )
            if "shape" in p:
                out[-1] = replace(out[-1], shape=self.shape_rule(i, p, out))
            if p.get("unused") and (kind != "tensor" or p.get("role", "input") != "output"):
                self.err(("params", i, "unused"), f"{name}: only an output tensor can be unused")
        if not any(p.is_output for p in out):
            self.err(("params",), "a spec needs at least one output tensor (role: output)")
        try:
            rule_order(out)
        except ValueError as exc:
            self.err(("params",), str(exc))
        return out

    def shape_rule(self, i: int, p: dict[str, Any], earlier: list[Param]) -> ShapeRule | None:
        """A tensor's `shape:` (conformance.spec.shapes): it parses, reads tensors that come
        earlier, dims from int / int_array parameters, keepdim from bool ones."""
        where = ("params", i, "shape")
        name = p["name"]
        if p["kind"] != "tensor":
            self.err(where, f"{name}: only a tensor has a shape rule")
            return None
        by_name = {q.name: q for q in earlier[:-1]}
        later = [q.get("name") for q in self.doc.data.get("params", [])[i + 1 :]]
        attrs = [q for q in self.doc.data.get("params", []) if q.get("kind") != "tensor"]
        known = [q["name"] for q in attrs if q.get("kind") in ("int", "bool", "string", "float")]
        strings = [q["name"] for q in attrs if q.get("kind") == "string"]
        tensors = [
            q.name for q in earlier[:-1] if q.is_tensor
        ]  # a `when` reads numel(x), size(x, k)
        try:
            rule = parse_rule(p["shape"], known + tensors, strings)
        except ShapeSyntaxError as exc:
            self.err(where, f"{name}: shape rule: {exc}")
            return None
        for cond, _ in rule.cases:
            bare = {n.name for n in ir.walk(cond.ir) if isinstance(n, ir.Var)} if cond else set()
            for t in sorted(bare & set(tensors)):
                self.err(
                    where,
                    f"{name}: shape rule's `when` reads tensor {t} itself: it may read "
                    f"numel({t}) and size({t}, k)",
                )
        kinds = {q["name"]: q.get("kind") for q in self.doc.data.get("params", [])}
        for t in rule.tensors:
            if t == name:
                self.err(where, f"{name}: its shape rule reads its own shape")
            elif t in later:  # a later tensor (a gradient before the input it halves, in C
                if kinds.get(t) != "tensor":  # order): derived after it; no cycle (params)
                    self.err(
                        where, f"{name}: shape rule reads {t}, a {kinds.get(t)} (not a tensor)"
                    )
            elif t not in by_name:
                self.err(where, f"{name}: shape rule reads {t!r}, not a tensor parameter")
            elif not by_name[t].is_tensor:
                self.err(where, f"{name}: shape rule reads {t}, a {by_name[t].kind} (not a tensor)")
        for term in rule.terms():
            for n, want in ((term.dims, ("int", "int_array")), (term.keepdim, ("bool",))):
                if not isinstance(n, str) or n == "all":
                    continue
                if term.form == "split" and want != ("bool",):
                    want = ("int",)
                if kinds.get(n) not in want:
                    self.err(
                        where,
                        f"{name}: shape rule {term.text!r}: {n} is a "
                        f"{kinds.get(n, 'unknown name')}, not {' or '.join(want)}",
                    )
        return rule

    def outputs_computed(
        self, params: list[Param], formulas: list[Formula], paths: list[tuple[Any, ...]]
    ) -> None:
        """Each output tensor is computed by exactly one formula, or is `unused` (no formula,
        its storage left as it is); an in-place op's tensor is always computed."""
        outputs = {p.name for p in params if p.is_output}
        if any(f.output not in outputs for f in formulas):
            return  # said at the formula's `output:`
        seen: dict[str, int] = {}
        for k, f in enumerate(formulas):
            if f.output in seen:
                self.err(
                    (*paths[k], "output"),
                    f"output {f.output!r} already has a formula (formula {seen[f.output] + 1})",
                )
            seen.setdefault(f.output, k)
        for i, p in enumerate(params):
            if p.unused and p.name in seen:
                self.err(("params", i, "unused"), f"{p.name} is unused but a formula computes it")
            elif p.is_output and not p.unused and p.name not in seen:
                self.err(
                    ("params", i, "name"),
                    f"output {p.name!r} has no formula: add one to `formulas:`, or say "
                    "`unused: true` if the op never writes it",
                )

    def index_of(self, i: int, p: dict[str, Any], raw: list[dict[str, Any]]) -> IndexOf | None:
        """A tensor's `values: {index_of: {param, dim, ignore, pad}}`: param another tensor, dim
        an int literal or an int parameter, ignore an int parameter, pad an int literal (not
        both)."""
        v = p.get("values")
        if not isinstance(v, dict):
            return None
        where = ("params", i, "values")
        name = p["name"]
        spec = v.get("index_of")
        if p["kind"] != "tensor" or set(v) != {"index_of"} or not isinstance(spec, dict):
            self.err(
                where, f"{name}: a tensor's values: is {{index_of: {{param, dim, ignore, pad}}}}"
            )
            return None
        unknown = set(spec) - {"param", "dim", "ignore", "pad"}
        if unknown:
            self.err(where, f"{name}: index_of has no {', '.join(sorted(unknown))}")
        kinds = {q.get("name"): q.get("kind") for q in raw if q is not p}
        src, dim, ignore = spec.get("param"), spec.get("dim"), spec.get("ignore")
        pad = spec.get("pad")
        ok = True
        if kinds.get(src) != "tensor":
            self.err(
                (*where, "index_of", "param"),
                f"{name}: index_of.param {src!r} is not another tensor parameter",
            )
            ok = False
        if isinstance(dim, bool) or not (isinstance(dim, int) or kinds.get(dim) == "int"):
            self.err(
                (*where, "index_of", "dim"),
                f"{name}: index_of.dim {dim!r} is not an int literal or an int parameter",
            )
            ok = False
        if ignore is not None and kinds.get(ignore) != "int":
            self.err(
                (*where, "index_of", "ignore"),
                f"{name}: index_of.ignore {ignore!r} is not an int parameter",
            )
            ok = False
        if pad is not None and (isinstance(pad, bool) or not isinstance(pad, int)):
            self.err(
                (*where, "index_of", "pad"), f"{name}: index_of.pad {pad!r} is not an int literal"
            )
            ok = False
        elif pad is not None and ignore is not None:
            self.err(
                (*where, "index_of", "pad"),
                f"{name}: index_of takes an ignore index or a pad value, not both",
            )
            ok = False
        return IndexOf(src, dim, ignore, pad) if ok else None

    def along(self, i: int, p: dict[str, Any], raw: list[dict[str, Any]]) -> Along | None:
        """A tensor input's `along: {of, dim}`: `of` an earlier tensor, `dim` an int literal of
        0 or more; the tensor has no shape rule (its shape is free, its element count is what
        the check `numel_along` tests)."""
        v = p.get("along")
        if v is None:
            return None
        where = ("params", i, "along")
        name = p["name"]
        earlier = {q.get("name"): q.get("kind") for q in raw[:i]}
        of, dim = v.get("of"), v.get("dim")
        problems = []
        if p["kind"] != "tensor" or p.get("role", "input") != "input":
            problems.append("only a tensor input is laid along a dim")
        if "shape" in p:
            problems.append("a tensor laid along a dim has no shape rule (its shape is free)")
        if earlier.get(of) != "tensor":
            problems.append(f"along.of {of!r} is not a tensor parameter before it")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
            problems.append(f"along.dim {dim!r} is not an int literal of 0 or more")
        for problem in problems:
            self.err(where, f"{name}: {problem}")
        return None if problems else Along(of, dim)

    def param_values(
        self, i: int, p: dict[str, Any]
    ) -> tuple[Any, tuple[Any, ...], tuple[float, float] | None]:
        """A parameter's default, values and range, each of its kind's type: an int's are
        integers, a float's numbers (made floats), an array's default a list of its items."""
        name, kind = p["name"], p["kind"]
        default, rng = p.get("default"), p.get("range")
        values = () if isinstance(p.get("values"), dict) else tuple(p.get("values", []))
        where = ("params", i)
        if kind not in NUMBER_KINDS and rng is not None:
            self.err((*where, "range"), f"{name}: only an int or a float has a range")
            rng = None
        if values and kind not in ("string", *NUMBER_KINDS):
            self.err((*where, "values"), f"{name}: only a string, int or float lists values")
        if kind in NUMBER_KINDS:
            for j, v in enumerate(values):
                if why := number_problem(kind, v):
                    self.err((*where, "values", j), f"{name}: values[{j}] {why}")
            if default is not None and (why := number_problem(kind, default)):
                self.err((*where, "default"), f"{name}: default {why}")
            if kind == "float":
                values = tuple(float(v) if not isinstance(v, bool) else v for v in values)
                if isinstance(default, int) and not isinstance(default, bool):
                    default = float(default)
            if rng is not None:
                lo, hi = rng
                if any(number_problem(kind, x) for x in rng) or lo > hi:
                    self.err((*where, "range"), f"{name}: range is [lo, hi] with lo <= hi")
                    rng = None
                else:
                    outside = [v for v in (default, *values) if v is not None and not lo <= v <= hi]
                    if outside:
                        self.err(
                            (*where, "range"),
                            f"{name}: {outside[0]!r} (its default or a value) is outside "
                            f"range [{lo}, {hi}]",
                        )
                    rng = (lo, hi)
        elif kind in ARRAY_KINDS and default is not None:
            item = kind.removesuffix("_array")
            bad = not isinstance(default, list) or any(
                (item == "bool" and not isinstance(v, bool))
                or (item != "bool" and number_problem(item, v))
                for v in default
            )
            if bad:
                self.err(
                    (*where, "default"),
                    f"{name}: the default of a {kind} is a list of {item}s, not {default!r}",
                )
            elif item == "float":
                default = [float(v) for v in default]
        elif isinstance(default, list):
            self.err((*where, "default"), f"{name}: only an array's default is a list")
        return default, values, rng

    def nulls(
        self, params: list[Param], checks: list[Check], formulas: list[Formula] | None
    ) -> None:
        """A parameter's `if_null` agrees with the checks and the formula: a null that is accepted
        (default, absent) is named by no not_null check, a null that is an error by one, and
        the formula and value checks never read an absent parameter."""
        null_checked = {n for c in checks if c.kind == "not_null" for n in c.params}
        exprs = [c.violated_if for c in checks]
        for formula in formulas or ():
            exprs += walk.Formula.of(formula).expressions()
        read = {n for e in exprs if e is not None for n in e.names}
        for i, p in enumerate(params):
            where = ("params", i, "if_null")
            if p.nullable and p.name in null_checked:
                self.err(
                    where,
                    f"{p.name}: if_null: {p.null} says a null is accepted, but a "
                    f"not_null check rejects it",
                )
            if p.null == "error" and p.name not in null_checked:
                self.err(
                    where,
                    f"{p.name}: if_null: error needs a not_null check naming it (its "
                    f"status and its place in the check order)",
                )
            if p.null == "absent" and p.name in read:
                self.err(
                    where,
                    f"{p.name}: if_null: absent, but the formula or a value check "
                    f"reads it (use if_null: default with a documented default)",
                )

    def dtype_sets(
        self, raw: dict[str, Any], prods: list[str]
    ) -> dict[str, dict[str, tuple[str, ...]]]:
        sets: dict[str, dict[str, tuple[str, ...]]] = {}
        for name, table in raw.items():
            entry: dict[str, tuple[str, ...]] = {}
            for key, names in table.items():
                if key == "source":
                    continue
                if key != "default" and key not in prods:
                    self.err(
                        ("dtype_sets", name, key),
                        f"dtype set {name!r}: {key!r} is not a product of this op ({', '.join(prods)})",
                    )
                good = [
                    self.dtype_name(("dtype_sets", name, key, j), n) for j, n in enumerate(names)
                ]
                entry[key] = tuple(g for g in good if g)
            if "default" not in entry and any(p not in entry for p in prods):
                missing = [p for p in prods if p not in entry]
                self.err(
                    ("dtype_sets", name),
                    f"dtype set {name!r} has no entry for {', '.join(missing)} and no default",
                )
            sets[name] = entry
        return sets

    def term(self, path: tuple[Any, ...], text: str, by_name: dict[str, Param]) -> DtypeTerm | None:
        m = TERM_PROMOTE.match(text)
        if m:
            for n in m.groups():
                if n not in by_name or not by_name[n].is_tensor:
                    self.err(path, f"promote() takes tensor parameters, {n!r} is not one")
                    return None
            return DtypeTerm(promote=(m.group(1), m.group(2)))
        if text in by_name:
            return DtypeTerm(param=text)
        try:
            return DtypeTerm(dtype=dt.get(text).name)
        except dt.DtypeError:
            self.err(path, f"unknown parameter or dtype {text!r}")
            return None

    def check(
        self, i: int, c: dict[str, Any], by_name: dict[str, Param], sets: dict[str, Any]
    ) -> Check:
        """The i-th check; its kind's class reads and checks the fields (conformance.spec.checks.kinds)."""
        return CHECK_KINDS[c["kind"]].parse(self, i, c, by_name, sets)

    def formula(
        self, raw: dict[str, Any], by_name: dict[str, Param], base: tuple[Any, ...] = ("formula",)
    ) -> Formula:
        out = raw["output"]
        if out not in by_name or not by_name[out].is_output:
            self.err((*base, "output"), f"formula output {out!r} is not an output tensor parameter")
        known = [p.name for p in by_name.values() if p.is_read]
        strings = [p.name for p in by_name.values() if p.kind == "string"]
        lets = []
        for i, item in enumerate(raw.get("let", [])):
            path = (*base, "let", i)
            if item["name"] in known:
                self.err((*path, "name"), f"let name {item['name']!r} shadows a parameter")
            elif (
                not str(item["name"]).isidentifier()
                or item["name"] in FUNCTIONS
                or item["name"] in CONSTANTS
            ):
                self.err(
                    (*path, "name"),
                    f"let name {item['name']!r} must be a new identifier (not a function or constant)",
                )
            e = self.expr((*path, "value"), item["value"], known, strings)
            lets.append(
                Let(
                    item["id"],
                    item["name"],
                    e,
                    item["source"],
                    item.get("summary", ""),
                    self.doc.line(path),
                )
            )  # type: ignore[arg-type]
            known.append(item["name"])
        branches = []
        n = len(raw["branches"])
        for i, b in enumerate(raw["branches"]):
            path = (*base, "branches", i)
            when = b["when"]
            cond: Expr | None = None
            if when == "otherwise":
                if i != n - 1:
                    self.err((*path, "when"), "only the last branch may be 'otherwise'")
            else:
                if i == n - 1:
                    self.err((*path, "when"), "the last branch must be 'when: otherwise'")
                cond = self.expr((*path, "when"), when, known, strings)
            val = self.expr((*path, "value"), b["value"], known, strings)
            branches.append(
                Branch(b["id"], cond, val, b["source"], b.get("summary", ""), self.doc.line(path))
            )  # type: ignore[arg-type]
        exprs = [x.value for x in lets] + [e for b in branches for e in (b.when, b.value)]
        irs = [e.ir for e in exprs if e is not None]
        if any(ir.splits(x) for x in irs) and any(ir.reductions(x) for x in irs):
            self.err(base, "a formula cannot both split tensors in halves and reduce over dims")
        relations = []
        outputs = [p.name for p in by_name.values() if p.is_output and not p.unused]
        for i, r in enumerate(raw.get("relation", [])):
            path = (*base, "relation", i)
            names = [*known, *outputs]
            forms = [k for k in ("holds", "equals", "within") if k in r]
            if len(forms) != 1:
                self.err(path, "a relation has exactly one of holds, equals, within")
                continue
            exprs = {}
            for k in ("holds", "equals", "where"):
                if k in r:
                    exprs[k] = self.expr((*path, k), str(r[k]), names, strings)
            within = None
            if "within" in r:
                lo, hi = (self.expr((*path, "within", j), str(v), names, strings)
                          for j, v in enumerate(r["within"]))  # fmt: skip
                within = (lo, hi) if lo is not None and hi is not None else None
            if None in exprs.values() or ("within" in r and within is None):
                continue
            relations.append(
                Relation(
                    r["id"],
                    exprs.get("holds"),
                    r["source"],
                    r.get("summary", ""),
                    self.doc.line(path),
                    equals=exprs.get("equals"),
                    within=within,
                    where=exprs.get("where"),
                )
            )
        random_when = None
        if "random_when" in raw:
            if not relations:
                self.err((*base, "random_when"), "random_when needs a `relation:` list")
            attrs = [p.name for p in by_name.values() if not p.is_tensor]
            random_when = self.expr((*base, "random_when"), str(raw["random_when"]), attrs, strings)
        return Formula(
            out,
            tuple(lets),
            tuple(branches),
            raw.get("source", ""),
            tuple(relations),
            random_when,
        )

    def special(self, i: int, s: dict[str, Any], by_name: dict[str, Param], formula: Formula):
        path = ("special_points", i)
        p = by_name.get(s["param"])
        if p is None or not p.is_tensor or not p.is_read:
            self.err((*path, "param"), f"special point param {s['param']!r} is not an input tensor")
            return None
        attrs = [q.name for q in by_name.values() if not q.is_tensor] + [
            x.name for x in formula.lets
        ]
        strings = [q.name for q in by_name.values() if q.kind == "string"]
        e = self.expr((*path, "value"), s["value"], attrs, strings)
        for k in s.get("with", {}):
            if k not in by_name or by_name[k].is_tensor:
                self.err(
                    (*path, "with"),
                    f"special point sets {k!r}, which is not a scalar, bool or string parameter",
                )
        if e is None:
            return None
        return SpecialPoint(
            s["id"],
            s["param"],
            e,
            dict(s.get("with", {})),
            s.get("summary", ""),
            s.get("source", ""),
            self.doc.line(path),
        )

    def deviation(
        self,
        i: int,
        d: dict[str, Any],
        ids: dict[str, tuple[Any, ...]],
        by_name: dict[str, Param],
        formula: Formula,
        prods: list[str],
    ) -> Deviation | None:
        """The i-th deviation, checked for the form of DEVIATION-FORM (README, "deviations")."""
        path = ("deviations", i)
        clause = d.get("clause")
        where = ids.get(clause) if clause else None
        if clause and where is None:
            self.err((*path, "clause"), f"deviation refers to unknown clause {clause!r}")
        if "cases" in d:
            self.err(
                (*path, "cases"),
                "deviation `cases:` (case-id globs) was removed: globs "
                "miss imported and hand-written cases; say what differs with `differs` "
                "(status | values | nonfinite) and `formula` or `bound`, and narrow with "
                "`dtypes`, `products` or `when`",
            )
        differs = d.get("differs")
        if d.get("backends") and differs is None:
            self.err(
                (*path, "backends"),
                "a deviation that names backends gates their verdicts "
                "and needs `differs: status | values | nonfinite` (what it excuses)",
            )
        if differs is not None and not clause:
            self.err((*path, "differs"), "`differs` needs the `clause` the difference concerns")
        kind = where[0] if where else None  # checks, formula, special_points, properties
        if differs == "status" and where is not None and kind != "checks":
            self.err(
                (*path, "clause"),
                f"differs: status needs a check as clause ({clause!r} is not one)",
            )
        if differs in ("values", "nonfinite") and kind == "checks":
            self.err(
                (*path, "clause"),
                f"differs: {differs} needs a formula branch or let, a "
                f"special point or a property as clause ({clause!r} is a check)",
            )
        actual_status = None
        if "actual_status" in d:
            if differs != "status":
                self.err((*path, "actual_status"), "actual_status applies to differs: status")
            actual_status = self.status((*path, "actual_status"), d["actual_status"])
        has_formula, has_bound = "formula" in d, "bound" in d
        if differs == "values" and has_formula == has_bound:
            self.err(
                (*path, "differs"),
                "differs: values needs exactly one of `formula` (the "
                "library's version of the clause's branch) or `bound` (rel / ulp / abs)",
            )
        if (has_formula or has_bound) and differs != "values":
            key = "formula" if has_formula else "bound"
            self.err((*path, key), f"`{key}` applies to differs: values")
        dev_formula = (
            self.deviation_formula(path, d, where, by_name, formula) if has_formula else None
        )
        bound: dict[str, float] = {}
        for key, value in (d.get("bound") or {}).items():
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok or not math.isfinite(value) or value <= 0:
                self.err(
                    (*path, "bound", key), f"bound {key} must be a finite number > 0, not {value!r}"
                )
            else:
                bound[key] = float(value)
        for j, p in enumerate(d.get("products", [])):
            if p not in prods:
                self.err(
                    (*path, "products", j),
                    f"product {p!r} is not a product of this op ({', '.join(prods)})",
                )
        cond = None
        if "dtypes" in d:
            try:
                cond = dtypecond.parse(d["dtypes"], list(by_name))
            except dtypecond.DtypeConditionError as exc:
                self.err((*path, "dtypes"), str(exc))
        when = None
        if "when" in d:
            attrs = [p.name for p in by_name.values() if not p.is_tensor]
            strings = [p.name for p in by_name.values() if p.kind == "string"]
            when = self.expr((*path, "when"), d["when"], attrs, strings)
        return Deviation(
            d["id"],
            d["summary"],
            d["source"],
            clause,
            d.get("actual", ""),
            tuple(d.get("backends", [])),
            self.doc.line(path),
            differs,
            actual_status,
            dev_formula,
            bound,
            cond,
            tuple(d.get("products", [])),
            when,
        )

    def deviation_formula(
        self,
        path: tuple[Any, ...],
        d: dict[str, Any],
        where: tuple[Any, ...] | None,
        by_name: dict[str, Param],
        formula: Formula,
    ) -> DeviationFormula | None:
        """A deviation's `formula`: compiled like the branch (or let) it replaces."""
        raw = d["formula"]
        if where is None or where[:2] not in (("formula", "branches"), ("formula", "let")):
            self.err((*path, "formula"), "`formula` needs a formula branch or let as clause")
            return None
        known = [p.name for p in by_name.values() if p.is_read]
        strings = [p.name for p in by_name.values() if p.kind == "string"]
        index = where[2]
        if where[1] == "let":
            if "when" in raw:
                self.err((*path, "formula", "when"), "a let has no condition: give `value` only")
            known += [x.name for x in formula.lets[:index]]
        else:
            known += [x.name for x in formula.lets]
            last = index == len(formula.branches) - 1
            if last and raw.get("when", "otherwise") != "otherwise":
                self.err((*path, "formula", "when"), "the last branch stays `when: otherwise`")
        when = value = None
        if raw.get("when") not in (None, "otherwise"):
            when = self.expr((*path, "formula", "when"), raw["when"], known, strings)
        if "value" in raw:
            value = self.expr((*path, "formula", "value"), str(raw["value"]), known, strings)
        return DeviationFormula(when, value)

    def prop(self, i: int, p: dict[str, Any], by_name: dict[str, Param]):
        for j, n in enumerate(p.get("params", [])):
            if n not in by_name or not by_name[n].is_tensor:
                self.err(("properties", i, "params", j), f"unknown tensor parameter {n!r}")
        return Property(
            p["id"],
            p["kind"],
            tuple(p.get("params", [])),
            p["source"],
            p.get("summary", ""),
            self.doc.line(("properties", i)),
        )

    def tolerance(
        self, raw: dict[str, Any], by_name: dict[str, Param] | None = None
    ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, dict[str, float]]]]:
        """Per-dtype overrides, and per output (a key naming an output tensor) that output's
        own per-dtype overrides; each field finite and in its range (compare.FIELD_RANGES)."""
        outputs = {n for n, p in (by_name or {}).items() if p.is_output}
        per_output = {}
        for key, table in raw.items():
            if key in outputs:
                if not all(isinstance(v, dict) for v in table.values()):
                    self.err(("tolerance", key), f"tolerance of output {key}: {{DTYPE: {{...}}}}")
                    continue
                per_output[key] = self._policies(table, ("tolerance", key))
        rest = {k: v for k, v in raw.items() if k not in outputs}
        return self._policies(rest, ("tolerance",)), per_output

    def _policies(self, raw: dict[str, Any], base: tuple[Any, ...]) -> dict[str, dict[str, float]]:
        out = {}
        for key, pol in raw.items():
            name = self.dtype_name((*base, key), key)
            if not isinstance(pol, dict):
                continue
            bad = False
            for field_name, value in pol.items():
                if why := field_problem(str(field_name), value):
                    self.err((*base, key, field_name), why)
                    bad = True
            if name and not bad:
                out[name] = {k: float(v) for k, v in pol.items()}
        return out

    def judged_dtypes(self, data: dict[str, Any]) -> None:
        """Every dtype a dtype table allows must be one the reference can judge: it has a
        comparison policy (specs/tolerances.yaml, or this spec's `tolerance:`), so STRING,
        UNDEFINED, INT4, FLOAT8_E5M2, ... are refused here, naming their line."""
        outputs = {q.get("name") for q in data.get("params") or [] if q.get("role") == "output"}
        overrides = {k: v for k, v in (data.get("tolerance") or {}).items() if k not in outputs}
        tables: list[tuple[tuple[Any, ...], Any]] = []
        for set_name, table in (data.get("dtype_sets") or {}).items():
            for key, names in table.items():
                if key != "source" and isinstance(names, list):
                    tables += [(("dtype_sets", set_name, key, j), n) for j, n in enumerate(names)]
        for i, c in enumerate(data.get("checks") or []):
            if c.get("kind") == "dtype_in" and isinstance(c.get("dtypes"), list):
                tables += [(("checks", i, "dtypes", j), n) for j, n in enumerate(c["dtypes"])]
        for path, n in tables:
            try:
                d = dt.get(str(n))
            except dt.DtypeError:
                continue  # reported as an unknown dtype already
            if not _judged(d.name, overrides):
                self.err(
                    path,
                    f"dtype {d.name} cannot be judged: the reference has no "
                    "tolerance policy for it (specs/tolerances.yaml)",
                )


def _formula_sections(data: dict[str, Any]) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """The formula mappings of a spec and their YAML paths: `formulas:` (a list, one per
    computed output) or `formula:` (one; the schema requires exactly one of the two)."""
    if "formulas" in data:
        raw = list(data["formulas"])
        return raw, [("formulas", k) for k in range(len(raw))]
    return [data["formula"]], [("formula",)]


def _judged(dtype: str, overrides: dict[str, Any]) -> bool:
    """Whether outputs of `dtype` can be compared: numpy holds it and a policy covers it."""
    if dt.get(dtype).opaque:
        return False
    try:
        policy_for(dtype, overrides)
    except (ValueError, TypeError, AttributeError):
        try:
            policy_for(dtype)
        except (ValueError, TypeError):
            return False
    return True


def lint_tolerances() -> list[Problem]:
    """The problems of specs/tolerances.yaml (every field finite and in its range)."""
    try:
        doc = tolerance_table()
    except YamlError as exc:
        return [Problem(exc.file, exc.line, exc.message)]
    return [Problem(doc.file, doc.line(path), why) for path, why in table_problems(doc)]


def _schema_message(e: jsonschema.ValidationError) -> str:
    if e.validator == "additionalProperties":
        return e.message.replace("Additional properties are not allowed", "unknown field(s)")
    if e.validator == "required":
        return e.message.replace("is a required property", "is missing")
    return e.message


def lint_file(path: str | Path, text: str | None = None) -> tuple[OpSpec | None, list[Problem]]:
    """Parse and check one spec; returns the spec (None if any problem) and the problems."""
    try:
        doc = load_yaml(path, text)
    except YamlError as exc:
        return None, [Problem(exc.file, exc.line, exc.message)]
    except RecursionError:
        return None, [Problem(str(path), 1, "document nests too deeply")]
    linter = Linter(doc)
    try:
        spec = linter.build()
    except RecursionError:
        return None, [Problem(str(path), 1, "spec nests too deeply")]
    if spec is not None:
        # the text parsed, not the file read again (it may have changed, or be a FIFO by now)
        spec.sha256 = hashlib.sha256(doc.source.encode("utf-8")).hexdigest()
        for v in spec.variants:
            v.sha256 = spec.sha256
    return spec, linter.problems
