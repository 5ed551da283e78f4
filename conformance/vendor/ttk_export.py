"""Case directories as the vendor's TTK ACLNN cases (`cases export-ttk DIR -o OUT`): one CSV row per
case and one TTK "manual data" folder per case holding our inputs and our golden, so that TTK on
a device host replays our cases against our golden (`python3 -m ttk aclnn -i OUT/cases.csv
--manual-data-dirs OUT/manual_data`), with no Python of ours there.

The golden is the reference's (the case's stored golden.json when it has one, else evaluated
now), rounded once to the output's dtype (round to nearest even) and written as TTK's raw
`golden_<i>_<dtype>__shape_<AxB>.bin`. A sidecar `OUT/cases.aclnn-conform.json` (outside the
manual-data root, which TTK keeps free of sidecars) carries what a TTK row has no column for (our
case id, clauses, seed), so import-ttk gives the same cases back.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import ArrayArg, ScalarArg, TensorArg, contiguous_strides
from ..cases.casedir import CaseFileError, find_cases, read_case
from ..cases.generate import Case
from ..cases.golden import StoredGolden, has_golden, read_golden
from ..files import safeio
from ..run.backend import Backend
from ..run.golden import compute_golden
from ..spec.model import OpSpec
from ..spec.registry import Registry, UnknownOp
from .ttk import MANUAL_DATA, SIDECAR, case_directory_name, data_file_name, ttk_dtype

CSV_NAME = "cases.csv"
COLUMNS = ("testcase_name", "api_name", "tensor_view_shapes", "tensor_dtypes", "scalar_dtypes",
           "attributes", "output_tensor_indexes")  # fmt: skip


@dataclass
class Exported:
    """The fate of one case directory: exported (its TTK folder), or skipped with the reason."""

    case_dir: Path
    case_id: str = ""
    folder: str = ""
    reason: str = ""


class ExportError(ValueError):
    """An output folder that cannot be used (the message says which and why)."""


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _literal(v: Any) -> str:
    """A Python literal TTK reads back (ast.literal_eval) as the same value."""
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"the scalar value {v} has no Python literal")
    if isinstance(v, complex) and not (math.isfinite(v.real) and math.isfinite(v.imag)):
        raise ValueError(f"the scalar value {v} has no Python literal")
    return repr(v)


def _contiguous(name: str, t: TensorArg) -> None:
    n = int(np.prod(t.shape, dtype=np.int64)) if t.shape else 1
    if t.offset or tuple(t.strides) != contiguous_strides(t.shape) or t.storage.size != n:
        raise ValueError(
            f"{name}: a strided or offset view (TTK's tensor_view_strides/offsets are not "
            "written here)"
        )
    if t.format != "ND":
        raise ValueError(f"{name}: format {t.format} (only ND is exported)")


def row_of(spec: OpSpec, case: Case) -> tuple[dict[str, str], list[tuple[str, np.ndarray | None]]]:
    """A case's TTK row and its input files (name, storage; None: a None marker)."""
    args = case.call.args
    tensors = [p for p in spec.params if p.kind == "tensor"]
    shapes: list[Any] = []
    dtypes: list[str] = []
    files: list[tuple[str, np.ndarray | None]] = []
    k = 0
    for p in tensors:
        t = args.get(p.name)
        if t is None:
            shapes.append(None)
            dtypes.append("float32")  # TTK's dtype column needs an entry; the slot is None
            if p.is_output:
                raise ValueError(f"{p.name}: an absent output")
        else:
            _contiguous(p.name, t)
            shapes.append(tuple(int(n) for n in t.shape))
            dtypes.append(ttk_dtype(t.dtype))
        if not p.is_output:
            arr = None if t is None else np.array(t.storage, copy=True)
            files.append((data_file_name("input", k, None if t is None else dtypes[-1]), arr))
            k += 1
    scalars = [p for p in spec.params if p.kind == "scalar"]
    sdtypes: list[str] = []
    attrs: dict[str, Any] = {}
    for j, p in enumerate(scalars):
        a = args.get(p.name)
        if not isinstance(a, ScalarArg):
            raise ValueError(f"{p.name}: an absent scalar")
        value = _plain(a.value)
        _literal(value)
        sdtypes.append(ttk_dtype(a.dtype))
        attrs[p.c_name or p.name] = value
        info = dt.get(a.dtype)
        files.append(
            (data_file_name("scalar", j, sdtypes[-1]), np.asarray([value]).astype(info.np))
        )
    for p in spec.params:
        a = args.get(p.name)
        if p.kind in ("bool", "string", "int", "float") and a is not None:
            _literal(_plain(a))  # a non-finite float has no Python literal
            attrs[p.c_name or p.name] = _plain(a)
        elif p.is_array and isinstance(a, ArrayArg):  # an attribute list: [0, -1]
            attrs[p.c_name or p.name] = [_plain(v) for v in a.items]
        elif p.is_list:
            raise ValueError(f"{p.name}: a TTK row has no {p.kind}")
    row = {
        "testcase_name": case.id,
        "api_name": spec.op,
        "tensor_view_shapes": repr(tuple(shapes)),
        "tensor_dtypes": repr(tuple(dtypes)),
        "scalar_dtypes": repr(tuple(sdtypes)) if sdtypes else "",
        "attributes": repr(attrs) if attrs else "",
        "output_tensor_indexes": repr(tuple(i for i, p in enumerate(tensors) if p.is_output)),
    }
    return row, files


def golden_files(spec: OpSpec, case: Case, golden: StoredGolden) -> list[tuple[str, np.ndarray]]:
    """The output goldens as TTK files: the float64 golden rounded once to the output's dtype,
    or the expected storage of an exact (integer, bool) output, in the output's view shape."""
    out = []
    want = golden.outcome
    for i, p in enumerate(spec.outputs):
        t = case.call.args.get(p.name)
        if not isinstance(t, TensorArg):
            continue
        info = dt.get(t.dtype)
        if t.is_empty:  # a zero-element golden keeps its dtype and shape (TTK 4.1)
            values = np.empty(tuple(t.shape), info.np)
            out.append((data_file_name("golden", i, ttk_dtype(t.dtype), tuple(t.shape)), values))
            continue
        if want.nothing_written:
            raise ValueError(f"{p.name}: the oracle writes nothing (no golden to compare)")
        if p.name in want.golden:
            values = dt.round_to(np.asarray(want.golden[p.name], dtype=np.float64), info)
        elif p.name in want.outputs:
            values = np.asarray(want.outputs[p.name]).reshape(-1)[: t.view().size]
        else:
            raise ValueError(f"{p.name}: the golden holds no values for it")
        values = np.ascontiguousarray(values, dtype=info.np).reshape(t.shape)
        out.append((data_file_name("golden", i, ttk_dtype(t.dtype), tuple(t.shape)), values))
    return out


def _new_folder(out: Path) -> None:
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink():
            raise ExportError(f"{out}: exists and is not a folder")
        if any(out.iterdir()):
            raise ExportError(f"{out}: exists and is not empty; give a new folder")
    out.mkdir(parents=True, exist_ok=True)


def export_ttk(
    registry: Registry, root: Path, out: Path, oracle: Backend, warn=None
) -> list[Exported]:
    """Write OUT/cases.csv, OUT/manual_data/<case folder>/*.bin and the sidecar for every
    positive case under `root`; a case that does not fit a TTK row is skipped with its reason."""
    _new_folder(out)
    done: list[Exported] = []
    rows: list[dict[str, str]] = []
    sidecar: dict[str, dict[str, Any]] = {}
    data_root = safeio.make_dirs(out, [MANUAL_DATA])
    for d in find_cases(root, warn):
        res = Exported(d)
        done.append(res)
        try:
            case = read_case(d, root)
            res.case_id = case.id
            spec = registry.get(case.op)
            if case.expected_status != 0:
                raise ValueError(
                    f"a negative case (expected status {case.expected_status}): a TTK row "
                    "carries no expected status"
                )
            row, files = row_of(spec, case)
            stored = read_golden(d, case.call.args) if has_golden(d) else None
            golden = stored or compute_golden(spec, case, oracle)
            if golden.outcome.status != 0:
                raise ValueError(f"the oracle returned status {golden.outcome.status}")
            files += golden_files(spec, case, golden)
        except (CaseFileError, ValueError, UnknownOp) as exc:
            res.reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            continue
        folder = case_directory_name(case.id)
        if folder in {r.folder for r in done if r.folder}:
            res.reason = f"its TTK folder {folder} is taken by another case"
            continue
        target = safeio.make_dirs(data_root, [folder])
        for name, arr in files:
            blob = b"" if arr is None else np.ascontiguousarray(arr).tobytes()
            safeio.write_file(target / name, lambda f, b=blob: f.write(b))
        res.folder = folder
        rows.append(row)
        sidecar[case.id] = {
            "id": case.id,
            "product": case.product,
            "clauses": list(case.clauses),
            "seed": case.seed,
            "expected_status": case.expected_status,
        }
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    text = buf.getvalue().encode("utf-8")
    safeio.write_file(out / CSV_NAME, lambda f: f.write(text))
    meta = json.dumps({"format": 1, "cases": sidecar}, indent=1, sort_keys=True).encode()
    safeio.write_file(out / (Path(CSV_NAME).stem + SIDECAR), lambda f: f.write(meta + b"\n"))
    return done
