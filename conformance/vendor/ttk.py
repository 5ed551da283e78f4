"""The vendor's TTK test kit (hicann/ops-test-kit): its ACLNN case rows (CSV) as case directories.

A TTK row names the API and gives, as Python literals, the view shapes and dtypes of the tensors
in the C signature's order (`None`: an absent optional tensor; one dtype stands for all), the
scalars' dtypes in order (`scalar_dtypes`), everything else by its C name (`attributes`), and
value ranges of the input tensors (`input_data_ranges`). Cells are read with
`ast.literal_eval`: nothing in a file is executed. The expected status comes from the spec's
checks (as for ATK files); a row the spec has no operator for, or whose cells do not fit the
spec, is refused with its reason; columns this importer does not map are named per row.
"""

from __future__ import annotations

import ast
import csv
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import Call, ScalarArg, TensorArg, contiguous_strides
from ..cases.casedir import write_case
from ..cases.generate import Case
from ..files import safeio
from ..spec.interpret import validate
from ..spec.model import OpSpec
from ..spec.registry import Registry, UnknownOp

MAPPED = ("testcase_name", "api_name", "tensor_view_shapes", "tensor_dtypes", "scalar_dtypes",
          "attributes", "input_data_ranges", "output_tensor_indexes")  # fmt: skip
# columns whose default value changes nothing (an ND format, no tolerance asked for)
HARMLESS = {"tensor_formats": ("ND",), "precision_tolerances": (), "absolute_precision": ()}
MAX_CSV_BYTES = 16 << 20
MAX_ELEMENTS = 1 << 24
TTK_DTYPES = {"float64": "DOUBLE", "float": "FLOAT", "half": "FLOAT16", "complex64": "COMPLEX64"}


class TtkError(ValueError):
    """A TTK file that cannot be read at all (the message names the file and line)."""


@dataclass
class RowResult:
    """The fate of one row: imported (accepted or rejected by a clause) or refused (reason)."""

    line: int
    name: str
    api: str
    outcome: str = "refused"  # accepted | rejected | refused
    reason: str = ""
    case_id: str = ""
    status: int | None = None
    clause: str = ""
    unsupported: list[str] = field(default_factory=list)


def _literal(text: str, column: str) -> Any:
    text = (text or "").strip()
    if not text:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ValueError(
            f"{column}: not a Python literal: {text[:60]!r} ({type(exc).__name__})"
        ) from None


def read_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line, row) for each row of a TTK CSV file; TtkError for a file that is not one."""
    try:
        text = safeio.read_bytes(path, MAX_CSV_BYTES).decode("utf-8-sig")
    except OSError as exc:
        raise TtkError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TtkError(f"{path}: not UTF-8 text: {exc}") from None
    reader = csv.DictReader(text.splitlines())
    if not reader.fieldnames or "api_name" not in reader.fieldnames:
        raise TtkError(f"{path}:1: not a TTK ACLNN case file: no api_name column")
    return [(reader.line_num, dict(r)) for r in reader]


def _dtype(name: Any, where: str) -> str:
    if not isinstance(name, str):
        raise ValueError(f"{where}: a dtype name, not {name!r}")
    try:
        return dt.get(TTK_DTYPES.get(name, name)).name
    except ValueError:
        raise ValueError(f"{where}: unknown dtype {name!r}") from None


def _draw(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], rng_: Any) -> np.ndarray:
    info = dt.get(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    lo, hi = (-1.0, 1.0) if info.is_float else (-5, 5)
    if isinstance(rng_, (list, tuple)) and len(rng_) == 2:
        lo, hi = rng_
    elif isinstance(rng_, (list, tuple)) and len(rng_) == 1:
        lo = hi = rng_[0]
    if info.category == "bool":
        if lo == hi:
            return np.full(n, bool(lo))
        return rng.integers(0, 2, n) > 0
    if info.is_float:
        return rng.uniform(float(lo), float(hi), n).astype(info.np)
    return rng.integers(int(lo), int(hi) + 1, n).astype(info.np)


def plan_row(spec: OpSpec, row: dict[str, str], product: str, seed: int) -> tuple[dict, list]:
    """The call's arguments a row describes, and the columns it uses that are not mapped."""
    shapes = _literal(row.get("tensor_view_shapes", ""), "tensor_view_shapes")
    dtypes = _literal(row.get("tensor_dtypes", ""), "tensor_dtypes")
    sdtypes = _literal(row.get("scalar_dtypes", ""), "scalar_dtypes") or ()
    attrs = _literal(row.get("attributes", ""), "attributes") or {}
    ranges = _literal(row.get("input_data_ranges", ""), "input_data_ranges") or ()
    if not isinstance(shapes, tuple | list) or not isinstance(dtypes, tuple | list) or not dtypes:
        raise ValueError("tensor_view_shapes and tensor_dtypes must be tuples")
    if not isinstance(attrs, dict):
        raise ValueError("attributes must be a dict of C names")
    unsupported = []
    for col, text in row.items():
        if col in MAPPED or col is None or not (text or "").strip():
            continue
        value = _literal(text, col)
        harmless = HARMLESS.get(col)
        if harmless is not None and (not value or set(_flat(value)) <= set(harmless) | {0}):
            continue
        unsupported.append(col)
    tensors = [p for p in spec.params if p.kind == "tensor"]
    scalars = [p for p in spec.params if p.kind == "scalar"]
    if len(shapes) != len(tensors):
        raise ValueError(
            f"tensor_view_shapes has {len(shapes)} tensors; {spec.op} takes {len(tensors)} "
            f"({', '.join(p.name for p in tensors)})"
        )
    if len(dtypes) not in (1, len(tensors)):
        raise ValueError(f"tensor_dtypes has {len(dtypes)} dtypes for {len(tensors)} tensors")
    rng = np.random.default_rng(
        int.from_bytes(hashlib.sha256(f"{seed}/{row.get('testcase_name')}".encode()).digest()[:8])
    )
    args: dict[str, Any] = {}
    inputs = [p for p in tensors if not p.is_output]
    for i, p in enumerate(tensors):
        shape = shapes[i]
        if shape is None:
            args[p.name] = None
            continue
        if isinstance(shape, tuple | list) and shape and isinstance(shape[0], tuple | list):
            raise ValueError(f"{p.name}: a tensor list (nested shapes); {spec.op} takes a tensor")
        shape = tuple(int(x) for x in shape)
        if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
            raise ValueError(f"{p.name}: more than {MAX_ELEMENTS} elements")
        d = _dtype(dtypes[i] if len(dtypes) > 1 else dtypes[0], f"tensor_dtypes[{i}]")
        k = inputs.index(p) if p in inputs else -1
        if p.is_output:
            data = np.zeros(int(np.prod(shape, dtype=np.int64)) if shape else 1, dt.get(d).np)
        else:
            data = _draw(rng, d, shape, ranges[k] if 0 <= k < len(ranges) else None)
        args[p.name] = TensorArg(d, shape, contiguous_strides(shape), 0, data)
    if len(sdtypes) > len(scalars):
        raise ValueError(f"scalar_dtypes has {len(sdtypes)} dtypes; {spec.op} takes {len(scalars)}")
    for i, p in enumerate(scalars):
        d = _dtype(sdtypes[i], f"scalar_dtypes[{i}]") if i < len(sdtypes) else p.default_dtype
        value = attrs.get(p.c_name or p.name, attrs.get(p.name, p.default))
        if value is None:
            raise ValueError(f"{p.name}: no value (give it in attributes)")
        args[p.name] = ScalarArg(str(d), value)
    names = {p.c_name or p.name for p in spec.params} | {p.name for p in spec.params}
    extra = sorted(set(attrs) - names)
    if extra:
        raise ValueError(
            f"attributes {', '.join(map(str, extra))}: {spec.op} has no such parameter"
        )
    for p in spec.params:
        if p.kind in ("bool", "string"):
            value = attrs.get(p.c_name or p.name, attrs.get(p.name, p.default))
            if value is None:
                raise ValueError(f"{p.name}: no value (give it in attributes)")
            args[p.name] = value
    return {p.name: args.get(p.name) for p in spec.params}, unsupported


def _flat(v: Any) -> list[Any]:
    if isinstance(v, tuple | list):
        return [x for y in v for x in _flat(y)]
    return [v]


def import_rows(
    registry: Registry, path: Path, out_dir: Path, product: str | None = None, seed: int = 0
) -> list[RowResult]:
    """Write a case directory for every row the specs can express; the list says each row's fate."""
    results = []
    for line, row in read_rows(path):
        name = (row.get("testcase_name") or f"line{line}").strip().replace("/", "_")
        api = (row.get("api_name") or "").strip()
        res = RowResult(line, name, api)
        results.append(res)
        try:
            spec = registry.get(api)
        except UnknownOp:
            res.reason = f"no spec for {api or '(empty api_name)'}"
            continue
        prod = product or spec.products[0]
        if prod not in spec.products:
            res.reason = f"{spec.name} has no product {prod}"
            continue
        try:
            args, res.unsupported = plan_row(spec, row, prod, seed)
        except ValueError as exc:
            res.reason = str(exc)
            continue
        if res.unsupported:
            res.reason = f"unsupported columns: {', '.join(res.unsupported)}"
            continue
        call = Call(spec.name, prod, args)
        verdict = validate(spec, call)
        res.status = verdict.status
        res.clause = verdict.check.id if verdict.check is not None and verdict.status else ""
        res.outcome = "accepted" if verdict.status == 0 else "rejected"
        res.case_id = f"{spec.name}/{prod}/ttk/{name}"
        kind = "positive" if verdict.status == 0 else "negative"
        clauses = (res.clause,) if res.clause else ()
        write_case(
            out_dir,
            Case(res.case_id, spec.name, prod, kind, call, clauses, verdict.status, seed),
            spec.sha256,
        )
    return results
