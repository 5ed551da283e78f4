"""The vendor's TTK test kit (hicann/ops-test-kit): its ACLNN case rows (CSV or .xlsx) as case
directories, and the file names of its "manual data" folders (inputs and goldens as raw .bin).

A TTK row names the API and gives, as Python literals, the view shapes and dtypes of the tensors
in the C signature's order (`None`: an absent optional tensor; one dtype stands for all), the
scalars' dtypes in order (`scalar_dtypes`), everything else by its C name (`attributes`), and
value ranges of the input tensors (`input_data_ranges`). Cells are read with
`ast.literal_eval`: nothing in a file is executed. The expected status comes from the spec's
checks (as for ATK files); a row the spec has no operator for, or whose cells do not fit the
spec, is refused with its reason; columns this importer does not map are named per row. With
manual-data folders (TTK's `--manual-data-dirs`), a row's inputs are read from its folder
instead of drawn; a sidecar beside the CSV written by `cases export-ttk` restores our case ids,
clauses and seeds, so that import-ttk(export-ttk(cases)) gives the same cases.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import ArrayArg, Call, ScalarArg, TensorArg, arg_problem, contiguous_strides
from ..cases.casedir import write_case
from ..cases.generate import Case
from ..cases.layouts import output_tensor
from ..files import safeio
from ..spec.interpret import validate
from ..spec.model import OpSpec
from ..spec.registry import Registry, UnknownOp

MAPPED = ("testcase_name", "api_name", "tensor_view_shapes", "tensor_dtypes", "scalar_dtypes",
          "attributes", "input_data_ranges", "output_tensor_indexes")  # fmt: skip
# columns whose default value changes nothing (an ND format, no tolerance asked for)
HARMLESS = {"tensor_formats": ("ND",), "precision_tolerances": (), "absolute_precision": ()}
MAX_CSV_BYTES = 16 << 20
MAX_CELL = 1 << 16  # characters of one cell read as a literal
MAX_ROWS = 100_000
MAX_ELEMENTS = 1 << 24
MANUAL_DATA = "manual_data"  # export-ttk: OUT/manual_data/<case folder>/*.bin
SIDECAR = ".aclnn-conform.json"  # export-ttk: OUT/<csv stem>.aclnn-conform.json
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
_CASE_NAME = re.compile(r"[^A-Za-z0-9_.=,+-]+")
# TTK's manual-data file names (docs/Manual_Data_Prepare_and_Replay.md, section 4)
_DATA_FILE = re.compile(
    r"^(input|scalar|golden)_(0|[1-9][0-9]*)_([A-Za-z0-9][A-Za-z0-9_.-]*?)"
    r"(?:__shape_(scalar|[0-9]+(?:x[0-9]+)*))?\.(bin|npy|pt)$"
)
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


def case_directory_name(testcase_name: str) -> str:
    """The folder TTK keeps a case's manual data in: the name itself when it holds only
    `[A-Za-z0-9_.-]` and at most 120 characters, else the sanitised name and the first 12 hex
    digits of the full name's SHA-256 (TTK's rule, docs/Manual_Data_Prepare_and_Replay.md 3.3).
    Never a path: no separator, never '.' or '..'."""
    safe = _SAFE_NAME.sub("_", testcase_name).strip("._") or "case"
    if safe == testcase_name and len(safe) <= 120:
        return safe
    digest = hashlib.sha256(testcase_name.encode("utf-8")).hexdigest()[:12]
    return f"{safe[:96]}-{digest}"


def shape_token(shape: tuple[int, ...]) -> str:
    """A golden's shape in its file name: dimensions joined by x, `scalar` for ()."""
    return "x".join(str(int(n)) for n in shape) if shape else "scalar"


def data_file_name(
    role: str, index: int, dtype: str | None, shape: tuple[int, ...] | None = None
) -> str:
    """`input_<i>_<dtype>.bin`, `scalar_<i>_<dtype>.bin`, `golden_<i>_<dtype>__shape_<AxB>.bin`;
    dtype None: the zero-byte marker `<role>_<i>_none.bin` of an absent tensor."""
    if dtype is None:
        return f"{role}_{index}_none.bin"
    tail = f"__shape_{shape_token(shape)}" if role == "golden" and shape is not None else ""
    return f"{role}_{index}_{dtype}{tail}.bin"


def ttk_dtype(name: str) -> str:
    """Our dtype name as TTK writes it (the numpy / ml_dtypes name: float32, bfloat16, ...)."""
    info = dt.get(name)
    if info.opaque:
        raise ValueError(f"{name}: no numpy name, TTK cannot hold it")
    return info.numpy_name


def _literal(text: str, column: str) -> Any:
    text = (text or "").strip()
    if not text:
        return None
    if len(text) > MAX_CELL:
        raise ValueError(
            f"{column}: a cell of {len(text)} characters (at most {MAX_CELL} are read)"
        )
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ValueError(
            f"{column}: not a Python literal: {text[:60]!r} ({type(exc).__name__})"
        ) from None


def read_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line, row) for each row of a TTK CSV or .xlsx file (its first sheet); TtkError for a
    file that is not one, naming the file and line."""
    if path.suffix.lower() == ".xlsx":
        return _check_header(path, *_read_xlsx(path))
    try:
        text = safeio.read_bytes(path, MAX_CSV_BYTES).decode("utf-8-sig")
    except OSError as exc:
        raise TtkError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TtkError(f"{path}: not UTF-8 text: {exc}") from None
    reader = csv.DictReader(text.splitlines())
    rows = []
    try:
        names = reader.fieldnames
        for r in reader:
            if len(rows) >= MAX_ROWS:
                raise TtkError(f"{path}: more than {MAX_ROWS} rows; split the file")
            rows.append((reader.line_num, {k: v for k, v in r.items() if k is not None}))
    except csv.Error as exc:
        raise TtkError(f"{path}:{reader.line_num + 1}: not a readable CSV row: {exc}") from None
    return _check_header(path, list(names or ()), rows)


def _check_header(
    path: Path, names: list[str], rows: list[tuple[int, dict[str, str]]]
) -> list[tuple[int, dict[str, str]]]:
    if "api_name" not in names:
        raise TtkError(f"{path}:1: not a TTK ACLNN case file: no api_name column")
    return rows


def _read_xlsx(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and rows of the first sheet, cells as text (openpyxl, an optional extra)."""
    try:
        import openpyxl
    except ImportError:
        raise TtkError(
            f"{path}: reading .xlsx needs openpyxl, an optional extra (pip install "
            "'aclnn-conformance[xlsx]' or pip install openpyxl), or save the sheet as CSV"
        ) from None
    try:
        safeio.check_regular(path, MAX_CSV_BYTES)
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except OSError as exc:
        raise TtkError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except Exception as exc:  # a damaged or foreign file: openpyxl raises many kinds
        raise TtkError(f"{path}: not a readable .xlsx workbook: {type(exc).__name__}") from None
    try:
        sheet = book.worksheets[0]
        lines = sheet.iter_rows(values_only=True)
        names = [_cell(v) for v in next(lines, ())]
        rows = []
        for n, values in enumerate(lines, start=2):
            cells = [_cell(v) for v in values]
            if not any(cells):
                continue
            if len(rows) >= MAX_ROWS:
                raise TtkError(f"{path}: more than {MAX_ROWS} rows; split the sheet")
            rows.append((n, {k: c for k, c in zip(names, cells, strict=False) if k}))
        return names, rows
    except TtkError:
        raise
    except Exception as exc:
        raise TtkError(f"{path}: not a readable .xlsx sheet: {type(exc).__name__}") from None
    finally:
        book.close()


def _cell(v: Any) -> str:
    return "" if v is None else str(v)


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


def plan_row(
    spec: OpSpec,
    row: dict[str, str],
    product: str,
    seed: int,
    data: dict[int, np.ndarray | None] | None = None,
) -> tuple[dict, list]:
    """The call's arguments a row describes, and the columns it uses that are not mapped.
    `data`: the row's manual-data inputs by TTK input slot (the tensors that are not pure
    outputs, in order), used instead of drawn values."""
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
    outs = _literal(row.get("output_tensor_indexes", ""), "output_tensor_indexes")
    if outs is not None:
        want = [i for i, p in enumerate(tensors) if p.is_output]
        if isinstance(outs, int):
            outs = (outs,)
        if not isinstance(outs, tuple | list) or sorted(outs) != want:
            raise ValueError(
                f"output_tensor_indexes {outs!r}: {spec.op}'s outputs are tensors {tuple(want)}"
            )
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
        if p.is_output:  # as a generated case's: NaN (a sentinel for integers) shows no write
            args[p.name] = output_tensor(d, shape, "contiguous")
            continue
        if data is not None:
            values = _manual_input(data, k, p.name, d, shape)
        else:
            values = _draw(rng, d, shape, ranges[k] if 0 <= k < len(ranges) else None)
        args[p.name] = TensorArg(d, shape, contiguous_strides(shape), 0, values)
    if data is not None:
        for k, p in enumerate(inputs):
            if args.get(p.name) is None and data.get(k, 0) is not None:
                raise ValueError(
                    f"input_{k} ({p.name}): data given for a tensor the row says is None"
                )
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
        if p.kind in ("bool", "string", "int", "float") or p.is_array:
            value = attrs.get(p.c_name or p.name, attrs.get(p.name, p.default))
            if value is None:
                raise ValueError(f"{p.name}: no value (give it in attributes)")
            if p.is_array:
                if not isinstance(value, list | tuple):
                    raise ValueError(f"attributes: {p.name} is a {p.kind}: give a list")
                value = ArrayArg(p.kind, tuple(value))
            elif p.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if why := arg_problem(p.kind, p.name, value):
                raise ValueError(f"attributes: {why}")
            args[p.name] = value
        elif p.is_list:
            raise ValueError(f"{p.name}: a TTK row cannot give a {p.kind}")
    return {p.name: args.get(p.name) for p in spec.params}, unsupported


def _manual_input(
    data: dict[int, np.ndarray | None], k: int, name: str, dtype: str, shape: tuple[int, ...]
) -> np.ndarray:
    if k not in data:
        raise ValueError(f"manual data: no input_{k} file for {name}")
    raw = data[k]
    if raw is None:
        raise ValueError(f"manual data: input_{k} is a None marker but {name} has a shape")
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    want = dt.get(dtype).np
    if raw.dtype != want:
        raise ValueError(f"manual data: input_{k} holds {raw.dtype}, {name} is {ttk_dtype(dtype)}")
    if raw.size != n:
        raise ValueError(
            f"manual data: input_{k} holds {raw.size} elements, {name} of shape {shape} needs {n}"
        )
    return raw


def read_manual_data(folder: Path) -> dict[int, np.ndarray | None]:
    """The inputs of one case's manual-data folder by slot (None: a `_none` marker). Only raw
    .bin files are read; a file TTK would not write (another name, a link, a folder) is an
    error, as in TTK."""
    found: dict[int, np.ndarray | None] = {}
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise ValueError(f"manual data {folder}: cannot list: {exc.strerror or exc}") from None
    for path in entries:
        m = _DATA_FILE.match(path.name)
        if m is None or path.is_symlink() or not path.is_file():
            raise ValueError(f"manual data {folder}: unexpected entry {path.name!r}")
        role, index, dtype, _, ext = m.groups()
        if ext != "bin":
            raise ValueError(
                f"manual data {path}: only .bin data is read here (TTK --dump-format bin)"
            )
        if role != "input":
            continue  # scalars come from attributes; goldens are TTK's to compare
        i = int(index)
        if dtype == "none":
            if path.stat().st_size:
                raise ValueError(f"manual data {path}: a None marker must be empty")
            found[i] = None
            continue
        try:
            info = dt.get(TTK_DTYPES.get(dtype, dtype))
            raw = safeio.read_bytes(path, MAX_ELEMENTS * 16)
        except ValueError:
            raise ValueError(f"manual data {path}: unknown dtype {dtype!r}") from None
        except OSError as exc:
            raise ValueError(f"manual data {path}: cannot read: {exc.strerror or exc}") from None
        if len(raw) % info.np.itemsize:
            raise ValueError(f"manual data {path}: {len(raw)} bytes is not whole {dtype} elements")
        found[i] = np.frombuffer(raw, dtype=info.np).copy()
    if found and sorted(found) != list(range(len(found))):
        raise ValueError(f"manual data {folder}: input slots {sorted(found)} are not 0..n-1")
    return found


def read_sidecar(csv_path: Path) -> dict[str, dict[str, Any]]:
    """What `cases export-ttk` wrote beside its CSV: per testcase_name our case id, product,
    clauses and seed ({} when there is none). Only plain JSON data is read."""
    path = csv_path.with_name(csv_path.stem + SIDECAR)
    if not path.exists():
        return {}
    try:
        doc = json.loads(safeio.read_bytes(path, MAX_CSV_BYTES))
        cases = doc["cases"]
        if not isinstance(cases, dict) or not all(isinstance(v, dict) for v in cases.values()):
            raise TypeError("cases must map testcase names to objects")
        return cases
    except OSError as exc:
        raise TtkError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise TtkError(f"{path}: not an export-ttk sidecar: {type(exc).__name__}: {exc}") from None


def _case_id(spec: OpSpec, prod: str, name: str, line: int, meta: dict[str, Any]) -> str:
    """Our case id of a row: the sidecar's (checked: <op>/<product>/..., no empty, '.' or '..'
    segment), else `<op>/<product>/ttk/<name>` with the name made safe."""
    given = meta.get("id")
    if isinstance(given, str):
        parts = given.split("/")
        if (
            len(parts) >= 3
            and parts[:2] == [spec.name, prod]
            and all(p not in ("", ".", "..") and "\x00" not in p and "\\" not in p for p in parts)
        ):
            return given
        raise ValueError(f"sidecar id {given[:80]!r} is not a case id of {spec.name}/{prod}")
    safe = _CASE_NAME.sub("_", name).strip("._") or f"line{line}"
    return f"{spec.name}/{prod}/ttk/{safe}"


def _flat(v: Any) -> list[Any]:
    if isinstance(v, tuple | list):
        return [x for y in v for x in _flat(y)]
    return [v]


def import_rows(
    registry: Registry,
    path: Path,
    out_dir: Path,
    product: str | None = None,
    seed: int = 0,
    manual_dirs: tuple[Path, ...] = (),
) -> list[RowResult]:
    """Write a case directory for every row the specs can express; the list says each row's
    fate. `manual_dirs`: TTK manual-data roots searched in order for each row's inputs (the
    first holding the row's folder is authoritative, as in TTK's replay)."""
    results = []
    sidecar = read_sidecar(path)
    for line, row in read_rows(path):
        raw = (row.get("testcase_name") or "").strip()
        name = raw or f"line{line}"
        api = (row.get("api_name") or "").strip()
        res = RowResult(line, name[:120], api[:120])
        results.append(res)
        try:
            spec = registry.get(api)
        except UnknownOp:
            res.reason = f"no spec for {api[:120] or '(empty api_name)'}"
            continue
        meta = sidecar.get(raw, {})
        prod = product or meta.get("product") or spec.products[0]
        if prod not in spec.products:
            res.reason = f"{spec.name} has no product {str(prod)[:40]}"
            continue
        row_seed = meta.get("seed", seed)
        row_seed = row_seed if isinstance(row_seed, int) and row_seed >= 0 else seed
        try:
            data = None
            if manual_dirs:
                folder = next(
                    (d / case_directory_name(name) for d in manual_dirs
                     if (d / case_directory_name(name)).is_dir()),
                    None,
                )  # fmt: skip
                if folder is None:
                    raise ValueError(
                        f"no manual data folder {case_directory_name(name)} under "
                        f"{', '.join(map(str, manual_dirs))}"
                    )
                data = read_manual_data(folder)
            args, res.unsupported = plan_row(spec, row, prod, row_seed, data)
            case_id = _case_id(spec, prod, name, line, meta)
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
        res.case_id = case_id
        kind = "positive" if verdict.status == 0 else "negative"
        clauses: tuple[str, ...] = (res.clause,) if res.clause else ()
        kept = meta.get("clauses")
        if meta.get("expected_status") == verdict.status and isinstance(kept, list):
            clauses = tuple(str(c) for c in kept)
        write_case(
            out_dir,
            Case(res.case_id, spec.name, prod, kind, call, clauses, verdict.status, row_seed),
            spec.sha256,
        )
    return results
