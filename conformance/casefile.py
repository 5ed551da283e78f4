"""Case directories: `<case-id>/case.json` plus one `<param>.npy` per tensor storage.

The format is public (README, "Case directories"): a harness in any language can write or read
it. Storages of dtypes numpy lacks (BF16, FP8) are saved as their raw bits (`"encoding":
"bits"`, unsigned integers of the same width). Each .npy is checksummed in case.json; a case
that fails to parse or verify raises CaseFileError, which the runner records as an `error`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from conformance import dtypes as dt
from conformance.call import Call, ScalarArg, TensorArg
from conformance.generate import Case

FORMAT = 1
TOOL_VERSION = "0.1.0"
MAX_CASE_JSON = 1_000_000
MAX_ELEMENTS = 1 << 31
_NATIVE = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "bool", "complex64", "complex128"}  # fmt: skip
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class CaseFileError(ValueError):
    pass


def _jsonable_number(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, complex):
        return {"re": _jsonable_number(v.real), "im": _jsonable_number(v.imag)}
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, np.generic):
        return _jsonable_number(v.item())
    return v


def _number(v: Any, where: str) -> Any:
    if isinstance(v, bool | int | float):
        return v
    if isinstance(v, str) and v in ("nan", "inf", "-inf"):
        return float(v)
    if isinstance(v, dict) and set(v) == {"re", "im"}:
        return complex(_number(v["re"], where), _number(v["im"], where))
    raise CaseFileError(f"{where}: not a number: {v!r}")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_array(path: Path, data: np.ndarray) -> str:
    """Save a 1-D storage as .npy ("bits" encoding for dtypes numpy lacks); returns the encoding."""
    encoding = "native" if str(data.dtype) in _NATIVE else "bits"
    if encoding == "bits":
        data = data.view(_BITS[data.dtype.itemsize])
    with open(path, "wb") as f:
        np.save(f, np.ascontiguousarray(data), allow_pickle=False)
    return encoding


def _load(path: Path) -> np.ndarray:
    """A storage file as a read-only array mapped from the file (a large case's tensors are
    paged in as they are read, never copied); an empty one read normally (mmap needs bytes)."""
    try:
        data = np.load(path, allow_pickle=False, mmap_mode="r")
    except ValueError:
        return np.load(path, allow_pickle=False)
    if isinstance(data, np.memmap):
        data = data.view(np.ndarray)
    return data


def case_dir(root: Path, case_id: str) -> Path:
    return root.joinpath(*case_id.split("/"))


def write_case(root: Path, case: Case, spec_sha256: str = "") -> Path:
    """Write `case` under root/<case-id>/; returns that directory."""
    d = case_dir(Path(root), case.id)
    d.mkdir(parents=True, exist_ok=True)
    args: dict[str, Any] = {}
    for name, a in case.call.args.items():
        if a is None:
            args[name] = {"kind": "null"}
        elif isinstance(a, TensorArg):
            path = d / f"{name}.npy"
            encoding = save_array(path, a.storage)
            args[name] = {"kind": "tensor", "dtype": a.dtype, "shape": list(a.shape),
                          "strides": list(a.strides), "offset": a.offset, "format": a.format,
                          "storage": path.name, "encoding": encoding, "sha256": sha256_file(path)}  # fmt: skip
        elif isinstance(a, ScalarArg):
            args[name] = {"kind": "scalar", "dtype": a.dtype, "value": _jsonable_number(a.value)}
        elif isinstance(a, bool):
            args[name] = {"kind": "bool", "value": a}
        else:
            args[name] = {"kind": "string", "value": a}
    meta = {"format": FORMAT, "id": case.id, "op": case.op, "product": case.product,
            "kind": case.kind, "clauses": list(case.clauses),
            "expected_status": case.expected_status, "seed": case.seed,
            "spec_sha256": spec_sha256, "tool_version": TOOL_VERSION, "args": args}  # fmt: skip
    (d / "case.json").write_text(
        json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return d


def find_cases(root: Path) -> list[Path]:
    """Every directory under root holding a case.json (symlinks are not followed)."""
    root = Path(root)
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        if "case.json" in filenames:
            found.append(Path(dirpath))
    return found


def read_case(d: Path, root: Path | None = None) -> Case:
    """Load and verify one case directory; raises CaseFileError with the reason."""
    d = Path(d)
    cj = d / "case.json"
    base = (root or d).resolve()
    if cj.is_symlink() or not cj.resolve().is_relative_to(base):
        raise CaseFileError(f"{cj}: case.json is a symlink or lies outside {base}")
    try:
        if cj.stat().st_size > MAX_CASE_JSON:
            raise CaseFileError(f"{cj}: larger than {MAX_CASE_JSON} bytes")
        meta = json.loads(cj.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseFileError(f"{cj}: cannot read: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CaseFileError(f"{cj}: not a format-{FORMAT} case file")
    try:
        args = {name: _read_arg(d, base, name, spec) for name, spec in meta["args"].items()}
        return Case(str(meta["id"]), str(meta["op"]), str(meta["product"]),
                    str(meta.get("kind", "positive")), Call(str(meta["op"]), str(meta["product"]), args),
                    tuple(meta.get("clauses", [])), int(meta.get("expected_status", 0)),
                    int(meta.get("seed", 0)))  # fmt: skip
    except CaseFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CaseFileError(f"{cj}: malformed: {type(exc).__name__}: {exc}") from None


def _read_arg(d: Path, base: Path, name: str, spec: dict[str, Any]) -> Any:
    where = f"{d / 'case.json'}: args.{name}"
    kind = spec["kind"]
    if kind == "null":
        return None
    if kind == "bool":
        if not isinstance(spec["value"], bool):
            raise CaseFileError(f"{where}: value must be true or false")
        return spec["value"]
    if kind == "string":
        return str(spec["value"])
    if kind == "scalar":
        dt.get(spec["dtype"])
        return ScalarArg(dt.get(spec["dtype"]).name, _number(spec["value"], where))
    if kind != "tensor":
        raise CaseFileError(f"{where}: unknown kind {kind!r}")
    info = dt.get(spec["dtype"])
    path = d / str(spec["storage"])
    if path.is_symlink() or not path.resolve().is_relative_to(base) or path.parent != d:
        raise CaseFileError(
            f"{where}: storage {spec['storage']!r} must be a plain file in the case directory"
        )
    if not path.is_file():
        raise CaseFileError(f"{where}: storage file {path.name} is missing")
    try:
        digest = sha256_file(path) if "sha256" in spec else None
    except OSError as exc:
        raise CaseFileError(f"{where}: cannot read {path.name}: {exc.strerror or exc}") from None
    if digest is not None and digest != spec["sha256"]:
        raise CaseFileError(f"{where}: checksum mismatch for {path.name}")
    try:
        data = _load(path)
    except (OSError, ValueError) as exc:
        raise CaseFileError(f"{where}: cannot load {path.name}: {exc}") from None
    if data.ndim != 1 or data.size > MAX_ELEMENTS:
        raise CaseFileError(
            f"{where}: storage must be a 1-D array of at most {MAX_ELEMENTS} elements"
        )
    if spec.get("encoding", "native") == "bits":
        data = data.view(info.np)
    elif data.dtype != info.np:
        raise CaseFileError(
            f"{where}: {path.name} holds {data.dtype}, dtype {info.name} needs {info.np}"
        )
    shape = tuple(int(x) for x in spec["shape"])
    strides = tuple(int(x) for x in spec.get("strides") or ())
    if not strides:
        from conformance.call import contiguous_strides

        strides = contiguous_strides(shape)
    t = TensorArg(info.name, shape, strides, int(spec.get("offset", 0)), data,
                  str(spec.get("format", "ND")))  # fmt: skip
    try:
        t.validate(name)
    except ValueError as exc:
        raise CaseFileError(f"{where}: {exc}") from None
    return t
