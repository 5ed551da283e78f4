"""Importing an ATK file as case directories (`aclnn-conform cases import-atk`).

Each ATK case becomes one call of the spec's op: inputs mapped through the spec's `atk:` section,
parameters the file does not give set to their spec defaults, the output tensor given the dtype
of the spec's promotion rule and the broadcast shape of the inputs. The spec's checks decide the
expected status (the reference engine's phase 1), so a case the spec rejects is written as a
negative case and reported with the clause that rejects it. Tensor values are drawn chunk by chunk
straight into the .npy files (conformance.vendor.atk.values), with a generator seeded by (seed, case id,
parameter); a case with a tensor of more than `max_elements` elements is skipped before anything
is allocated, and what the spec would say of it is still reported.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...acl import dtypes as dt
from ...acl.call import (
    ArrayArg,
    Call,
    ScalarArg,
    TensorArg,
    arg_problem,
    contiguous_strides,
    number_problem,
)
from ...cases.casedir import FORMAT, TOOL_VERSION, make_case_dir, value_json
from ...cases.casedir import MAX_ELEMENTS as READER_MAX_ELEMENTS
from ...cases.plan import number_default
from ...files import safeio
from ...spec import atk_forms
from ...spec.checks.base import attribute_env, null_default
from ...spec.elements import element_shape
from ...spec.interpret import branch_hits, formula_domain, lets_used, validate
from ...spec.model import Check, DtypeTerm, OpSpec
from ...spec.shapes import ShapeError, rule_order, shape_of
from ...spec.split import splits
from . import values as av
from .files import NON_PARAM, AtkCase, AtkError, AtkInput, AtkMapping

DEFAULT_MAX_ELEMENTS = 1 << 24
BRANCH_CHUNK = 1 << 18
KINDS = {"tensor": ("tensor",), "scalar": ("scalar", "attr"), "bool": ("attr", "scalar"),
         "string": ("attr",), "int": ("attr", "scalar"), "float": ("attr", "scalar"),
         "int_array": ("attr",), "float_array": ("attr",), "bool_array": ("attr",)}  # fmt: skip


@dataclass
class Imported:
    """What became of one ATK case: accepted (status 0), rejected (by `clause`) or skipped."""

    atk_id: str
    case_id: str
    outcome: str  # accepted | rejected | skipped
    status: int | None = None
    clause: str = ""  # the deciding clause (rejected; `empty_success` for an accepted empty call)
    message: str = ""
    reason: str = ""  # skipped: why
    would_be: str = ""  # skipped for size: what the spec says of the call
    dtypes: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, list[int]] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)  # parameter -> form or value
    clauses: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    file: str
    file_sha256: str
    spec: str
    op: str
    product: str
    seed: int
    max_elements: int
    mapping: str  # where the ATK -> spec mapping comes from
    output_rule: str
    cases: list[Imported] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for c in self.cases if c.outcome == outcome)


# -- building the call -------------------------------------------------------------------------
def _rng(seed: int, case_id: str, param: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(case_id.encode()), zlib.crc32(param.encode())])


def _light(dtype: str, shape: tuple[int, ...], fmt: str = "ND") -> TensorArg:
    """A tensor with its dtype and shape but one storage element (zero strides): all the
    checks look at."""
    d = dt.get(dtype)
    return TensorArg(d.name, tuple(shape), (0,) * len(shape), 0, np.zeros(1, d.np), fmt)


def _term_dtype(term: DtypeTerm, dtypes: dict[str, str]) -> str | None:
    if term.dtype:
        return term.dtype
    if term.param:
        return dtypes.get(term.param)
    a, b = (dtypes.get(n) for n in term.promote or ())
    return dt.tables().promote(a, b) if a and b else None


def output_rule(spec: OpSpec, out: str) -> tuple[Check | None, tuple[DtypeTerm, ...]]:
    """The terms whose dtype the output takes: the other side of a same_dtype check on it, or the
    sources of a castable check into it; none: the promotion of every tensor input."""
    for c in spec.checks:
        if c.kind == "same_dtype" and any(t.param == out for t in c.terms):
            others = tuple(t for t in c.terms if t.param != out)
            if others:
                return c, others[:1]
    for c in spec.checks:
        if c.kind == "castable" and c.to is not None and c.to.param == out:
            return c, c.terms
    return None, ()


def describe_rule(spec: OpSpec, out: str) -> str:
    """How the importer derives an output the file leaves out: its dtype, and its shape (the
    output's own shape rule where it has one, else the inputs' broadcast)."""
    check, terms = output_rule(spec, out)
    param = next((p for p in spec.params if p.name == out), None)
    rule = getattr(param, "shape", None)
    shape = (
        f"shape: its rule {rule}" if rule is not None else "shape: broadcast of the tensor inputs"
    )
    if check is None:
        ins = ", ".join(p.name for p in spec.tensor_inputs)
        return f"{out}: promotion of the tensor inputs ({ins}); {shape}"
    return f"{out}: dtype of {', '.join(str(t) for t in terms)} (clause {check.id}); {shape}"


def derive_output(spec: OpSpec, out: str, dtypes: dict[str, str]) -> str:
    _, terms = output_rule(spec, out)
    if not terms:
        terms = tuple(DtypeTerm(param=p.name) for p in spec.tensor_inputs if p.name in dtypes)
    got: str | None = None
    for t in terms:
        d = _term_dtype(t, dtypes)
        got = d if got is None or d is None else dt.tables().promote(got, d)
        if got is None:
            break
    if got is None:  # no promotion: the first input's dtype (the spec then says what is wrong)
        got = next(iter(dtypes.values()), "FLOAT")
    return got


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in np.broadcast_shapes(*shapes)) if shapes else ()
    except ValueError:
        return shapes[0]


@dataclass
class Planned:
    case: AtkCase
    case_id: str
    args: dict[str, Any]  # the call's arguments, tensors light
    forms: dict[str, AtkInput]  # tensor input parameter -> its ATK input
    item: Imported
    format: str | None = None  # the storage format of the tensors (atk.formats), when given


def _param_for(spec: OpSpec, m: AtkMapping, inp: AtkInput, case: AtkCase) -> str:
    if m.declared:
        target = m.inputs.get(inp.name)
        if target is None:
            raise AtkError(
                f"ATK input {inp.name!r} (case {case.id}) is not in the atk.inputs "
                f"mapping of {spec.name} ({m.where}); it maps "
                f"{', '.join(m.inputs) or 'nothing'}"
            )
        return target
    if inp.name not in spec.param_names:
        raise AtkError(
            f"ATK input {inp.name!r} (case {case.id}) is not a parameter of {spec.name} "
            f"({', '.join(spec.param_names)}) and the spec has no atk: section mapping "
            f"it; add atk.inputs to {spec.path}"
        )
    return inp.name


def _take(
    spec: OpSpec, m: AtkMapping, case: AtkCase, plan: Planned, inp: AtkInput, seed: int, name: str
) -> str:
    """Put ATK input `inp` into the plan's call as parameter `name`; returns why the case is
    skipped ('' if not)."""
    p = spec.param(name)
    where = f"ATK input {inp.name!r} (case {case.id})"
    if p.is_output and not p.is_inout:  # an in/out tensor's input value comes from the file
        raise AtkError(f"{where} maps to {name!r}, an output of {spec.name}; map it in atk.outputs")
    if inp.type not in KINDS[p.kind]:
        raise AtkError(f"{where} is a {inp.type} but {spec.name} parameter {name!r} is a {p.kind}")
    if name in plan.args:
        raise AtkError(f"{where} maps to {spec.name} parameter {name!r}, already given")
    rng, item = _rng(seed, plan.case_id, name), plan.item
    item.values[name] = inp.form.describe()
    try:
        if p.kind == "tensor":
            why = av.unrepresentable(inp.form, dt.get(inp.dtype))
            if why:
                return f"{name}: {why}"
            plan.args[name] = _light(inp.dtype, inp.shape or (), inp.format)
            plan.forms[name] = inp
        elif p.kind == "scalar":
            d = dt.get(inp.dtype or p.default_dtype or "FLOAT")
            v = av.scalar_value(inp.form, d, rng)
            plan.args[name] = ScalarArg(d.name, v)
            item.values[name] = f"{atk_forms.show(v)} ({inp.form.describe()})"
        elif p.kind in ("int", "float"):  # int64_t / double by value
            d = dt.get("INT64" if p.kind == "int" else "DOUBLE")
            v = av.scalar_value(inp.form, d, rng)
            plan.args[name] = int(v) if p.kind == "int" else float(v)
        elif p.kind == "bool":
            plan.args[name] = av.bool_value(inp.form, rng)
            if not (inp.form.kind == "const" and isinstance(inp.form.value, bool)):
                item.values[name] = f"{plan.args[name]} (from {inp.form.describe()}: not zero)"
        elif p.is_number:
            d = dt.get("INT64" if p.kind == "int" else "DOUBLE")
            v = av.scalar_value(inp.form, d, rng)
            if p.kind == "int" and inp.form.kind != "const":
                item.values[name] = f"{v} ({inp.form.describe()})"
            plan.args[name] = int(v) if p.kind == "int" else float(v)
        elif p.is_array:
            plan.args[name] = _array_value(p.kind, inp.raw, where)
            item.values[name] = str(list(plan.args[name].items))
        else:
            plan.args[name] = av.string_value(inp.form, rng)
    except av.Unrepresentable as exc:
        return f"{name}: {exc}"
    except atk_forms.FormError as exc:
        raise AtkError(f"{where}: {exc}") from None
    return ""


def _array_value(kind: str, raw: Any, where: str) -> ArrayArg:
    """An int/float/bool array attribute: ATK writes the list itself as range_values (a single
    number is a list of one)."""
    items = raw if isinstance(raw, list) else [raw]
    item = kind.removesuffix("_array")
    out = []
    for v in items:
        if item == "bool" and isinstance(v, bool | int) and not isinstance(v, float):
            out.append(bool(v))
        elif item != "bool" and not number_problem(item, v):
            out.append(float(v) if item == "float" else v)
        else:
            raise av.Unrepresentable(f"{v!r} is not an item of a {kind} ({items!r})")
    arr = ArrayArg(kind, tuple(out))
    if why := arg_problem(kind, where, arr):
        raise av.Unrepresentable(why)
    return arr


def _executor_input(m: AtkMapping, case: AtkCase, plan: Planned, inp: AtkInput, seed: int) -> bool:
    """An ATK input only the executor reads (atk.formats): noted in the plan, True; an
    executor-only attribute the spec's section does not handle is an error."""
    if m.formats is not None and inp.name == m.formats.input:
        try:
            plan.format = av.string_value(inp.form, _rng(seed, plan.case_id, inp.name))
        except atk_forms.FormError as exc:
            raise AtkError(
                f"ATK input {inp.name!r} (case {case.id}): the storage format: {exc}"
            ) from None
        plan.item.values[f"({inp.name})"] = f"{plan.format} (storage format: atk.formats)"
        return True
    if inp.type == "attr" and inp.atk_dtype.strip().lower() == NON_PARAM:
        raise AtkError(
            f"ATK input {inp.name!r} (case {case.id}) is an attribute only the "
            f"executor reads (dtype {NON_PARAM}); say what the executor does with it "
            f"in the spec's atk section ({m.where}), e.g. atk.formats"
        )
    return False


def _replace(spec: OpSpec, m: AtkMapping, case: AtkCase, plan: Planned) -> None:
    """The executor's substitutions (atk.replace): the tensors it passes instead of the file's."""
    for r in m.replace.values():
        dtype = r.dtype
        if r.dtype_of:
            src = plan.args.get(r.dtype_of)
            if not isinstance(src, TensorArg):
                raise AtkError(
                    f"case {case.id}: atk.replace.{r.param} takes the dtype of "
                    f"{r.dtype_of!r}, which the case does not give ({m.where})"
                )
            dtype = src.dtype
        form = atk_forms.parse_form(r.value)
        info = dt.get(dtype)
        shape = tuple(r.shape)
        plan.args[r.param] = _light(info.name, shape)
        plan.forms[r.param] = AtkInput(
            r.param, "tensor", info.name, info.name, shape, form, r.value
        )
        note = f"replaced by the executor: {form.describe()}, shape {list(shape)}, {info.name}"
        plan.item.values[r.param] = note + (f" ({r.source})" if r.source else "")


def _complete(spec: OpSpec, m: AtkMapping, case: AtkCase, plan: Planned) -> None:
    """The parameters the ATK case does not give: outputs (from the file's `outputs`, else the
    spec's promotion rule and the broadcast shape) and spec defaults."""
    args, item = plan.args, plan.item
    given = {}
    for o in case.outputs:
        target = m.outputs.get(o.name, o.name)
        if target in spec.param_names and spec.param(target).is_output and o.type == "tensor":
            given[target] = o
    dtypes = {n: a.dtype for n, a in args.items() if isinstance(a, TensorArg)}
    shapes = [a.shape for a in args.values() if isinstance(a, TensorArg)]
    # outputs last: a shape rule reads the attributes (a loss's reduction) given or defaulted
    for p in sorted(spec.params, key=lambda q: q.is_output):
        if p.name in args:
            continue
        if p.is_output:
            o = given.get(p.name)
            if o is not None:
                args[p.name] = _light(o.dtype, o.shape or (), o.format)
            else:  # a ruled output's shape is set below, once every parameter is known
                args[p.name] = _light(derive_output(spec, p.name, dtypes), _broadcast(shapes))
        elif p.default is not None and p.kind == "scalar":
            args[p.name] = ScalarArg(dt.get(p.default_dtype or "FLOAT").name, p.default)
            item.values[p.name] = f"{p.default} (spec default)"
        elif p.default is not None and p.kind in ("bool", "string"):
            args[p.name] = p.default if p.kind == "string" else bool(p.default)
            item.values[p.name] = f"{p.default} (spec default)"
        elif p.is_number or (p.is_array and p.default is not None):
            args[p.name] = null_default(p) if p.is_array else number_default(p)
            item.values[p.name] = f"{p.default} (spec default)"
        elif p.nullable and p.is_tensor:  # an optional tensor the file leaves out
            args[p.name] = None
            item.values[p.name] = f"null (if_null: {p.null})"
        else:
            raise AtkError(
                f"case {case.id} gives no value for {spec.name} parameter {p.name!r}, "
                f"which has no default; map an ATK input to it in atk.inputs"
            )
    for p in rule_order(spec.outputs):  # an output with a shape rule: the shape it gives
        if p.name in given or not isinstance(args.get(p.name), TensorArg):
            continue
        have = {n: tuple(a.shape) for n, a in args.items() if isinstance(a, TensorArg)}
        try:
            shape = shape_of(p.shape, have, attribute_env(spec, Call(spec.op, "", args)))
        except ShapeError:
            continue  # a rule the inputs cannot meet: the check rejecting them decides
        args[p.name] = _light(args[p.name].dtype, shape)
    ordered = {p.name: args[p.name] for p in spec.params}
    args.clear()
    args.update(ordered)


def plan_case(spec: OpSpec, m: AtkMapping, case: AtkCase, seed: int, case_id: str) -> Planned:
    """The call an ATK case makes (tensors light: dtype and shape only), or why it is skipped
    (`plan.item.reason`): the file's inputs mapped, the executor's rewrites applied (atk.replace,
    atk.formats), the rest from the spec. A mapping problem raises AtkError."""
    plan = Planned(case, case_id, {}, {}, Imported(case.id, case_id, "skipped"))
    plan.item.reason = case.unsupported
    for inp in case.inputs:
        if plan.item.reason:
            return plan
        if _executor_input(m, case, plan, inp, seed):
            continue
        name = _param_for(spec, m, inp, case)
        if name in m.replace:
            continue  # the executor passes its own tensor (_replace)
        plan.item.reason = _take(spec, m, case, plan, inp, seed, name)
    if plan.item.reason:
        return plan
    _replace(spec, m, case, plan)
    _complete(spec, m, case, plan)
    if plan.format is not None:
        wanted = m.formats.params if m.formats is not None and m.formats.params else None
        for n, a in plan.args.items():
            if isinstance(a, TensorArg) and (wanted is None or n in wanted):
                a.format = plan.format
    for n, a in plan.args.items():
        if isinstance(a, TensorArg):
            plan.item.dtypes[n], plan.item.shapes[n] = a.dtype, list(a.shape)
    return plan


# -- writing -----------------------------------------------------------------------------------
def _gather(
    arr: np.ndarray, shape: tuple[int, ...], out: tuple[int, ...], a: int, b: int
) -> np.ndarray:
    """Elements a..b (flat, row-major) of `arr` (shape `shape`) broadcast to shape `out`."""
    if tuple(shape) == tuple(out):
        return np.asarray(arr[a:b])
    if not shape:
        return np.full(b - a, arr[0])
    idx = np.unravel_index(np.arange(a, b), out)
    k = len(out) - len(shape)
    sub = [np.zeros(b - a, np.intp) if n == 1 else idx[k + i] for i, n in enumerate(shape)]
    return np.asarray(arr[np.ravel_multi_index(sub, shape)])


def credited(spec: OpSpec, plan: Planned, files: dict[str, Path]) -> list[str]:
    """The lets and formula branches an accepted call takes, read back chunk by chunk: a
    storage of the output's shape is read a chunk at a time from its file (never mapped: a
    mapped file's pages count in the importer's memory as they are read, 6 GB for one vendor
    case); a broadcast one, smaller, is mapped."""
    if any(splits(spec.for_output(f.output)) for f in spec.formulas):
        return _credited_whole(spec, plan, files)
    # every output's formula walks the domain of the first: its shape, or where a shape rule
    # reduces it (a loss's mean), the broadcast of the inputs
    whole = Call(spec.name, "", dict(plan.args))
    oshape = formula_domain(spec, whole)[0]
    # each input as the formula reads it (elements.placed: a per-row gradient or a gather's
    # index with the row's dim kept as 1): the shape its flat storage broadcasts from
    placed = {
        k: tuple(v.shape)
        for k, v in element_shape(spec, whole, attribute_env(spec, whole))[1].items()
    }
    n = int(np.prod(oshape, dtype=np.int64)) if oshape else 1
    stores = {
        k: (
            av.StorageReader(f, dt.get(plan.args[k].dtype))
            if tuple(plan.args[k].shape) == tuple(oshape)
            else av.read_npy(f, dt.get(plan.args[k].dtype))
        )
        for k, f in files.items()
        if k in placed  # a tensor the formula does not read (a null-able one given) decides nothing
    }
    hits: set[str] = set()
    for a in range(0, n, BRANCH_CHUNK):
        b = min(n, a + BRANCH_CHUNK)
        args = dict(plan.args)
        for k, arr in stores.items():
            t = plan.args[k]
            vals = (
                arr.get(a, b)
                if isinstance(arr, av.StorageReader)
                else _gather(arr, placed.get(k, tuple(t.shape)), oshape, a, b)
            )
            args[k] = TensorArg(t.dtype, (b - a,), (1,), 0, vals)
        for f in spec.formulas:
            args[f.output] = _light(plan.args[f.output].dtype, (b - a,))
        hits.update(branch_hits(spec, Call(spec.name, "", args), flat=True))
    ordered = [br.id for f in spec.formulas for br in f.branches if br.id in hits]
    return lets_used(spec, ordered) + ordered


def _credited_whole(spec: OpSpec, plan: Planned, files: dict[str, Path]) -> list[str]:
    """`credited` for a formula splitting tensors in halves (conformance/spec/split.py): the
    inputs are not of the output's shape, so the census reads them whole, in their own shapes
    (an ATK case the importer accepts is within --max-elements)."""
    args = dict(plan.args)
    for k, f in files.items():
        t = plan.args[k]
        vals = np.ascontiguousarray(av.read_npy(f, dt.get(t.dtype)))
        args[k] = TensorArg(t.dtype, tuple(t.shape), contiguous_strides(tuple(t.shape)), 0, vals)
    hits = set(branch_hits(spec, Call(spec.name, "", args)))
    ordered = [br.id for f in spec.formulas for br in f.branches if br.id in hits]
    return lets_used(spec, ordered) + ordered


def write_planned(
    spec: OpSpec,
    plan: Planned,
    root: Path,
    seed: int,
    product: str,
    kind: str,
    status: int,
    source: dict[str, Any],
) -> None:
    d = make_case_dir(root, plan.case_id)  # a symlink planted under root is refused
    args_json: dict[str, Any] = {}
    files: dict[str, Path] = {}
    for name, a in plan.args.items():
        if isinstance(a, TensorArg):
            info = dt.get(a.dtype)
            n = int(np.prod(a.shape, dtype=np.int64)) if a.shape else 1
            path = d / f"{name}.npy"
            if name in plan.forms:
                values = av.TensorValues(
                    plan.forms[name].form, info, n, _rng(seed, plan.case_id, name)
                )
                encoding, digest = av.write_npy(path, info, n, values.chunks())
                files[name] = path
                if values.drawn:
                    plan.item.values[name] += " -> " + "; ".join(values.drawn)
            else:
                encoding, digest = av.write_npy(path, info, n, av.fill_chunks(info, n))
            args_json[name] = {
                "kind": "tensor",
                "dtype": a.dtype,
                "shape": list(a.shape),
                "strides": list(contiguous_strides(a.shape)),
                "offset": 0,
                "format": a.format,
                "storage": path.name,
                "encoding": encoding,
                "sha256": digest,
            }
        else:
            args_json[name] = value_json(a)
    item = plan.item
    if kind == "positive" and not item.clauses:
        item.clauses = credited(spec, plan, files)
    meta = {
        "format": FORMAT,
        "id": plan.case_id,
        "op": spec.name,
        "product": product,
        "kind": kind,
        "clauses": item.clauses,
        "expected_status": status,
        "seed": seed,
        "spec_sha256": spec.sha256,
        "tool_version": TOOL_VERSION,
        "args": args_json,
        "atk": {**source, "id": plan.case.id},
    }
    text = json.dumps(meta, indent=1, sort_keys=True) + "\n"
    safeio.write_file(d / "case.json", lambda f: f.write(text.encode("utf-8")))


def case_id_for(spec: OpSpec, atk_id: str) -> str:
    return f"{spec.name}/atk/{atk_id.zfill(4) if atk_id.isdigit() else atk_id}"


def import_cases(
    spec: OpSpec,
    m: AtkMapping,
    cases: list[AtkCase],
    out_dir: Path,
    *,
    file: Path,
    product: str,
    seed: int = 0,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
) -> ImportResult:
    """Write every importable case of `cases` under out_dir; the result lists each case's fate."""
    raw = file.read_bytes()
    out = spec.outputs[0].name if spec.outputs else ""
    res = ImportResult(
        str(file),
        hashlib.sha256(raw).hexdigest(),
        spec.name,
        spec.op,
        product,
        seed,
        max_elements,
        m.where if m.declared else "identity (no atk: section)",
        describe_rule(spec, out) if out else "",
    )
    source = {"file": file.name, "mapping": dict(m.inputs) if m.declared else "identity"}
    try:  # every mapping problem before anything is written
        plans = [plan_case(spec, m, c, seed, case_id_for(spec, c.id)) for c in cases]
    except AtkError as exc:
        raise AtkError(f"{file}: {exc}") from None
    for plan in plans:
        item = plan.item
        res.cases.append(item)
        if item.reason:
            continue
        verdict = validate(spec, Call(spec.name, product, plan.args))
        item.status = verdict.status
        item.message = verdict.message
        item.clause = verdict.check.id if verdict.check is not None else ""
        said = "accepted" if verdict.status == 0 else f"rejected by {item.clause}"
        big = max(
            (
                (int(np.prod(a.shape, dtype=np.int64)), n)
                for n, a in plan.args.items()
                if isinstance(a, TensorArg)
            ),
            default=(0, ""),
        )
        if big[0] > READER_MAX_ELEMENTS:  # whatever --max-elements says: nothing is written
            item.reason = (
                f"over the case reader's limit: {big[1]} has {big[0]} elements, a case "
                f"directory holds at most {READER_MAX_ELEMENTS} per storage"
            )
            item.would_be = said
            continue
        if big[0] > max_elements:
            item.reason = f"over --max-elements {max_elements} ({big[1]} has {big[0]} elements)"
            item.would_be = said
            continue
        item.outcome = "accepted" if verdict.status == 0 else "rejected"
        if verdict.check is not None:
            item.clauses = [verdict.check.id]
        kind = "positive" if verdict.status == 0 else "negative"
        write_planned(spec, plan, out_dir, seed, product, kind, verdict.status, source)
    return res
