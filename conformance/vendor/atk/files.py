"""The vendor's ATK test files (`atk_aclnn<Op>.json` in hicann/ops-nn): reading them, and
mapping their inputs onto a spec's parameters.

An ATK file is a JSON list of cases. Each case names the op (`aclnn_name`, with or without the
`aclnn` prefix) and lists its `inputs`: `{name, type, dtype, shape, range_values, required, ...}`
with `type` one of `tensor`, `scalar` (an aclScalar) or `attr` (a bool, string or number passed by
value). The names are the vendor executor's, not the C API's: the spec's optional `atk:` section
maps them (`atk.inputs: {<ATK name>: <spec parameter>}`); without that section the ATK names must
be the spec's parameter names. An input without a name (a torch function's positional argument)
is named by its position, "0", "1", ... Outputs are rarely given (`outputs`, same entries); the importer
(conformance.vendor.atk.importer) derives them from the spec.

What the vendor's executor (executor_aclnn<Op>.py) does to the call before it makes it is data in
the same section, never code: `formats` names an executor-only ATK attribute whose value is the
storage format of the call's tensors (the executor's get_format), and `replace` gives the tensors
the executor substitutes for the file's (init_by_input_data), by shape, value and dtype.

Value forms live in conformance.vendor.atk.values; writing case directories in conformance.vendor.atk.importer.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...acl import dtypes as dt
from ...files import safeio
from ...spec.atk_forms import NULL_RANGE, Form, FormError, is_null, parse_form, text_values
from ...spec.atk_section import FormatRule, Replacement, parse_rules, section_problems
from ...spec.model import OpSpec
from ...spec.registry import Registry, UnknownOp
from ...spec.yamlpos import YamlError
from ...spec.yamlpos import load as load_yaml

MAX_FILE_BYTES = 64 << 20

# ATK dtype names -> aclDataType names (anything else goes through conformance.acl.dtypes' names).
ATK_DTYPES = {
    "fp16": "FLOAT16", "float16": "FLOAT16", "half": "FLOAT16",
    "fp32": "FLOAT", "float32": "FLOAT", "float": "FLOAT",
    "fp64": "DOUBLE", "float64": "DOUBLE", "double": "DOUBLE",
    "bf16": "BF16", "bfloat16": "BF16",
    "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "int": "INT64",
    "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
    "int8_t": "INT8", "int16_t": "INT16", "int32_t": "INT32", "int64_t": "INT64",
    "bool": "BOOL", "attr_bool": "BOOL",
    "complex64": "COMPLEX64", "complex128": "COMPLEX128",
}  # fmt: skip
SIMPLE_TYPES = ("tensor", "scalar", "attr")
NON_PARAM = "non_param"  # the dtype ATK gives an attribute only its executor reads


class AtkError(ValueError):
    """A problem the user can fix: a malformed ATK file, an input the spec's mapping lacks, an
    op that cannot be told. The CLI prints it as one line (exit code 2)."""


@dataclass(frozen=True)
class AtkInput:
    name: str
    type: str  # tensor | scalar | attr
    dtype: str  # aclDataType name ('' for attributes whose dtype does not matter)
    atk_dtype: str  # as the file writes it
    shape: tuple[int, ...] | None
    form: Form
    raw: Any  # range_values as the file writes it
    format: str = "ND"


@dataclass(frozen=True)
class AtkCase:
    index: int  # position in the file
    id: str  # the case's `id` (the position when it has none)
    aclnn_name: str
    inputs: tuple[AtkInput, ...]
    outputs: tuple[AtkInput, ...] = ()
    unsupported: str = ""  # why the importer cannot express this case ('' when it can)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class AtkMapping:
    """A spec's `atk:` section: ATK names -> spec parameters, and the executor's rewrites."""

    op: str
    source: str
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    declared: bool = True  # False: the spec has no atk section (ATK names = parameter names)
    where: str = ""  # file:line of the section, for messages
    formats: FormatRule | None = None
    replace: dict[str, Replacement] = field(default_factory=dict)


def _where(path: Path, case: Any, idx: int, name: str = "") -> str:
    cid = case.get("id", idx) if isinstance(case, dict) else idx
    return f"{path}: case {cid}" + (f", input {name!r}" if name else "")


def _dtype(raw: Any, where: str) -> str:
    key = str(raw).strip()
    name = ATK_DTYPES.get(key.lower())
    if name:
        return name
    try:
        return dt.get(key).name
    except dt.DtypeError:
        raise AtkError(f"{where}: unknown dtype {raw!r}") from None


def _shape(raw: Any, where: str) -> tuple[int, ...]:
    if not isinstance(raw, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in raw
    ):
        raise AtkError(f"{where}: shape must be a list of integers, not {raw!r}")
    if any(x < 0 for x in raw):
        raise AtkError(f"{where}: shape {raw} has a negative dimension")
    return tuple(raw)


def _input(
    path: Path, case: dict, idx: int, raw: Any, output: bool = False, position: int | None = None
) -> AtkInput | str:
    """One input (or output) entry; a string says why the case cannot be imported (a well-formed
    input the importer does not support). An output's range_values may be null."""
    if isinstance(raw, list):
        return "a grouped input (tensor list or attribute list) is not supported"
    if not isinstance(raw, dict):
        raise AtkError(f"{_where(path, case, idx)}: an input must be an object, not {raw!r}")
    name = raw.get("name")
    if name is None and position is not None:
        name = str(position)  # a positional argument (a torch function's input): "0", "1", ...
    if not isinstance(name, str) or not name:
        raise AtkError(f"{_where(path, case, idx)}: input #{position} has no name")
    where = _where(path, case, idx, name)
    for key in ("type",) if output else ("type", "range_values"):
        if key not in raw:
            raise AtkError(f"{where}: '{key}' is missing")
    kind = str(raw["type"])
    if kind not in SIMPLE_TYPES:
        return f"input {name!r} of type {kind!r} is not supported (only tensor, scalar, attr)"
    try:
        rv = raw.get("range_values")
        form = Form("const", value=math.nan) if output and rv is None else parse_form(rv)
    except FormError as exc:
        raise AtkError(f"{where}: range_values: {exc}") from None
    atk_dtype = str(raw.get("dtype", ""))
    if kind == "tensor":
        shape: tuple[int, ...] | None = _shape(raw.get("shape"), where)
        dtype = _dtype(atk_dtype, where)
    else:
        shape = None
        dtype = (
            _dtype(atk_dtype, where) if kind == "scalar" else ATK_DTYPES.get(atk_dtype.lower(), "")
        )
    if is_null(form):
        return f"input {name!r}: {NULL_RANGE}"
    if kind != "attr" and text_values(form):  # e.g. "default" for an optional tensor
        return f"input {name!r}: range_values {text_values(form)[0]!r} is not a number"
    return AtkInput(
        name,
        kind,
        dtype,
        atk_dtype,
        shape,
        form,
        raw.get("range_values"),
        str(raw.get("format") or "ND"),
    )


def read_atk(path: str | Path) -> list[AtkCase]:
    """Every case of an ATK file; AtkError (one line naming the file, case and input) when it is
    not one."""
    path = Path(path)
    try:
        data = json.loads(safeio.read_text(path, MAX_FILE_BYTES))  # regular, size checked first
    except FileNotFoundError:
        raise AtkError(f"{path}: no such file") from None
    except OSError as exc:
        raise AtkError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise AtkError(f"{path}: not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise AtkError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise AtkError(f"{path}: not an ATK file: its JSON nests too deeply") from None
    if not isinstance(data, list):
        raise AtkError(f"{path}: an ATK file is a JSON list of cases, not a {type(data).__name__}")
    if not data:
        raise AtkError(f"{path}: holds no case")
    cases, seen = [], set()
    for idx, c in enumerate(data):
        if not isinstance(c, dict):
            raise AtkError(f"{path}: case #{idx} is not an object")
        if not isinstance(c.get("inputs"), list):
            raise AtkError(f"{_where(path, c, idx)}: 'inputs' must be a list")
        cid = str(c.get("id", idx))
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", cid) or cid in seen:
            cid = f"{idx}"  # ids name directories: keep them plain and unique
        seen.add(cid)
        inputs: list[AtkInput] = []
        outputs: list[AtkInput] = []
        why: list[str] = []
        entries = [(r, False, k) for k, r in enumerate(c["inputs"])]
        entries += [(r, True, k) for k, r in enumerate(c.get("outputs") or [])]
        for raw, output, position in entries:
            got = _input(path, c, idx, raw, output, position)
            if isinstance(got, str):
                why.append(got)
            else:
                (outputs if output else inputs).append(got)
        names = [i.name for i in inputs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise AtkError(f"{_where(path, c, idx)}: input {dup[0]!r} is given twice")
        cases.append(
            AtkCase(
                idx,
                cid,
                str(c.get("aclnn_name") or c.get("name") or ""),
                tuple(inputs),
                tuple(outputs),
                why[0] if why else "",
            )
        )
    return cases


# -- the spec side -----------------------------------------------------------------------------
def op_key(name: str) -> str:
    k = name.strip().lower().replace("_", "")
    return k[5:] if k.startswith("aclnn") else k


@lru_cache(maxsize=256)
def _section(path: str, sha256: str) -> tuple[Any, int]:
    """A spec file's raw `atk:` section and its line (cached per file content)."""
    try:
        doc = load_yaml(path)
    except YamlError as exc:
        raise AtkError(str(exc)) from None
    raw = doc.data.get("atk") if isinstance(doc.data, dict) else None
    return raw, doc.line(("atk",))


def mapping_of(spec: OpSpec) -> AtkMapping:
    """The spec's `atk:` section (read from its file; its structure is checked by the schema,
    what it names by atk_section.section_problems, here and in the linter)."""
    raw, line = _section(spec.path, spec.sha256) if spec.path else (None, 1)
    where = f"{spec.path}:{line}"
    if not isinstance(raw, dict):
        return AtkMapping(spec.op, "", {}, {}, False, where)
    problems = section_problems(raw, {p.name: (p.kind, p.is_output) for p in spec.params})
    if problems:
        raise AtkError(f"{where}: {problems[0][1]}")
    inputs = {str(k): str(v) for k, v in (raw.get("inputs") or {}).items()}
    outputs = {str(k): str(v) for k, v in (raw.get("outputs") or {}).items()}
    formats, replace = parse_rules(raw)
    return AtkMapping(
        str(raw.get("op") or spec.op),
        str(raw.get("source", "")),
        inputs,
        outputs,
        True,
        where,
        formats,
        replace,
    )


def choose_spec(path: Path, cases: list[AtkCase], reg: Registry, op: str | None) -> OpSpec:
    """The spec an ATK file is imported as: --op; else the op the file's name says
    (`atk_aclnn<Op>.json`); else the `aclnn_name` its cases share."""
    if op:
        return reg.get(op)
    names = []
    m = re.fullmatch(r"atk_(.+)", path.stem)
    if m:
        names.append(m.group(1))
    case_names = sorted({c.aclnn_name for c in cases if c.aclnn_name})
    if len(case_names) == 1:
        names.append(case_names[0])
    for name in names:
        try:
            return reg.get(name)
        except UnknownOp:
            pass
        for s in reg:
            raw = _section(s.path, s.sha256)[0] if s.path and not s.inplace_of else None
            if isinstance(raw, dict) and op_key(str(raw.get("op", ""))) == op_key(name):
                return s
    said = " or ".join(repr(n) for n in names) if names else "nothing"
    raise AtkError(
        f"{path}: cannot tell which operator this file tests (its name and cases say "
        f"{said}, which no spec defines); give --op NAME"
    )
