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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import (
    MAX_ARRAY_LEN,
    ArrayArg,
    Call,
    ScalarArg,
    TensorArg,
    contiguous_strides,
    number_problem,
)
from ..files import safeio
from ..spec.model import ARRAY_KINDS, LIST_KINDS
from .generate import Case

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
    with safeio.open_regular(path, follow_symlinks=False) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_array(path: Path, data: np.ndarray) -> str:
    """Save a 1-D storage as .npy ("bits" encoding for dtypes numpy lacks); returns the encoding."""
    encoding = "native" if str(data.dtype) in _NATIVE else "bits"
    if encoding == "bits":
        data = data.view(_BITS[data.dtype.itemsize])
    data = np.ascontiguousarray(data)
    safeio.write_file(path, lambda f: np.save(f, data, allow_pickle=False))
    return encoding


def case_dir(root: Path, case_id: str) -> Path:
    return root.joinpath(*case_id.split("/"))


def make_case_dir(root: Path, case_id: str) -> Path:
    """root/<case-id>/, created level by level: a symlink planted under root is refused."""
    return safeio.make_dirs(root, case_id.split("/"))


def write_case(root: Path, case: Case, spec_sha256: str = "") -> Path:
    """Write `case` under root/<case-id>/; returns that directory."""
    d = make_case_dir(Path(root), case.id)
    args: dict[str, Any] = {}
    for name, a in case.call.args.items():
        if a is None:
            args[name] = {"kind": "null"}
        elif isinstance(a, TensorArg):
            args[name] = _tensor_json(d, name, a)
        elif isinstance(a, ArrayArg):
            args[name] = {"kind": a.kind, "values": _array_json(d, name, a)}
        else:
            args[name] = value_json(a)
    meta = {
        "format": FORMAT,
        "id": case.id,
        "op": case.op,
        "product": case.product,
        "kind": case.kind,
        "clauses": list(case.clauses),
        "expected_status": case.expected_status,
        "seed": case.seed,
        "spec_sha256": spec_sha256,
        "tool_version": TOOL_VERSION,
        "args": args,
    }
    text = (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode("utf-8")
    safeio.write_file(d / "case.json", lambda f: f.write(text))
    return d


def value_json(a: Any) -> dict[str, Any]:
    """The case.json entry of an argument that has no storage file: null, a scalar, a bool, an
    int, a float, a string or an int/float/bool array (docs/case-directories.md)."""
    if a is None:
        return {"kind": "null"}
    if isinstance(a, ScalarArg):
        return {"kind": "scalar", "dtype": a.dtype, "value": _jsonable_number(a.value)}
    if isinstance(a, bool):
        return {"kind": "bool", "value": a}
    if isinstance(a, int):
        return {"kind": "int", "value": a}
    if isinstance(a, float):
        return {"kind": "float", "value": _jsonable_number(a)}
    if isinstance(a, ArrayArg) and a.kind in ARRAY_KINDS:
        return {"kind": a.kind, "values": [_jsonable_number(v) for v in a.items]}
    if isinstance(a, ArrayArg) and a.kind == "scalar_list":
        return {"kind": a.kind, "values": [value_json(x) | {} for x in a.items]}
    if isinstance(a, str):
        return {"kind": "string", "value": a}
    raise TypeError(f"{type(a).__name__} has storage or no case-file form")


def _tensor_json(d: Path, name: str, a: TensorArg) -> dict[str, Any]:
    """A tensor's JSON; its storage goes to d/<name>.npy."""
    path = d / f"{name}.npy"
    encoding = save_array(path, a.storage)
    return {
        "kind": "tensor",
        "dtype": a.dtype,
        "shape": list(a.shape),
        "strides": list(a.strides),
        "offset": a.offset,
        "format": a.format,
        "storage": path.name,
        "encoding": encoding,
        "sha256": sha256_file(path),
    }


def _array_json(d: Path, name: str, a: ArrayArg) -> list[Any]:
    """An array's values (numbers, true/false), a scalar list's {dtype, value} items, a tensor
    list's tensors (item i's storage in d/<name>.<i>.npy)."""
    if a.kind == "tensor_list":
        return [_tensor_json(d, f"{name}.{i}", t) for i, t in enumerate(a.items)]
    return value_json(a)["values"]


MAX_DEPTH = 64  # directory levels under --cases; a case id has a handful


def find_cases(root: Path, warn: Callable[[str], None] | None = None) -> list[Path]:
    """Every directory under root holding an entry named case.json (symlinks are not followed),
    in sorted depth-first order. A folder deeper than MAX_DEPTH levels or one that cannot be listed is
    skipped, with a line to `warn`: a hostile tree costs a warning, never the run."""
    root = Path(root)
    found: list[Path] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        d, depth = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if warn is not None:
                warn(f"{d}: skipped, cannot be listed: {exc.strerror or exc}")
            continue
        subdirs = []
        for e in entries:
            if e.name == "case.json":  # whatever it is: reading it says what is wrong
                found.append(d)
                continue
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                subdirs.append(Path(e.path))
        if subdirs and depth >= MAX_DEPTH:
            if warn is not None:
                warn(
                    f"{d}: skipped what lies below it: deeper than {MAX_DEPTH} folder levels "
                    "under the cases folder"
                )
            continue
        stack.extend((s, depth + 1) for s in reversed(subdirs))
    return found


def read_meta(d: Path, root: Path | None = None) -> dict[str, Any]:
    """The mapping in d/case.json, read safely: a regular file (not a symlink, not outside
    root) of at most MAX_CASE_JSON bytes, valid UTF-8 JSON; CaseFileError otherwise."""
    d = Path(d)
    cj = d / "case.json"
    base = (root or d).resolve()
    if cj.is_symlink() or not cj.resolve().is_relative_to(base):
        raise CaseFileError(f"{cj}: case.json is a symlink or lies outside {base}")
    try:
        meta = json.loads(safeio.read_bytes(cj, MAX_CASE_JSON, follow_symlinks=False))
    except OSError as exc:
        raise CaseFileError(f"{cj}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseFileError(f"{cj}: cannot read: not valid JSON: {exc}") from None
    except RecursionError:
        raise CaseFileError(f"{cj}: not a case file: its JSON nests too deeply") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CaseFileError(f"{cj}: not a format-{FORMAT} case file")
    return meta


def read_case(d: Path, root: Path | None = None, max_bytes: int | None = None) -> Case:
    """Load and verify one case directory; raises CaseFileError with the reason. `max_bytes`
    (--max-case-bytes) bounds the sum of its storage files, checked on their sizes before any
    is hashed or mapped."""
    d = Path(d)
    cj = d / "case.json"
    base = (root or d).resolve()
    meta = read_meta(d, root)
    try:
        args_raw = meta["args"]
        if not isinstance(args_raw, dict):
            raise CaseFileError(f"{cj}: malformed: args must be a mapping of parameter names")
        budget = _Budget(max_bytes)
        args = {
            str(name): _read_arg(d, base, str(name), spec, budget)
            for name, spec in args_raw.items()
        }
        clauses = meta.get("clauses", [])
        if not isinstance(clauses, list) or not all(isinstance(c, str) for c in clauses):
            raise CaseFileError(f"{cj}: clauses must be a list of clause ids")
        op, product = _text(meta["op"], f"{cj}: op"), _text(meta["product"], f"{cj}: product")
        return Case(
            _text(meta["id"], f"{cj}: id"),
            op,
            product,
            _text(meta.get("kind", "positive"), f"{cj}: kind"),
            Call(op, product, args),
            tuple(clauses),
            _integer(meta.get("expected_status", 0), f"{cj}: expected_status"),
            _count(meta.get("seed", 0), f"{cj}: seed"),
        )
    except CaseFileError:
        raise
    except KeyError as exc:
        raise CaseFileError(f"{cj}: malformed: missing field {exc}") from None
    except (
        TypeError,
        ValueError,
        AttributeError,
        ArithmeticError,
        RecursionError,
        MemoryError,
    ) as exc:
        raise CaseFileError(f"{cj}: malformed: {type(exc).__name__}: {exc}") from None


class _Budget:
    """The bytes of storage files a case may still hold (None: no limit)."""

    def __init__(self, limit: int | None):
        self.limit, self.used = limit, 0

    def take(self, n: int, where: str, name: str) -> None:
        self.used += n
        if self.limit is not None and self.used > self.limit:
            raise CaseFileError(
                f"{where}: storage {name} is {safeio.size_text(n)}; the case's storages need "
                f"{safeio.size_text(self.used)}, above --max-case-bytes "
                f"{safeio.size_text(self.limit)}; raise it if this machine has the memory"
            )


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise CaseFileError(f"{where}: must be a string, not {_show(v)}")
    return v


def _integer(v: Any, where: str) -> int:
    """An integer written as one (true, 0.9 or 3.0 are not)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise CaseFileError(f"{where}: must be an integer, not {_show(v)}")
    return v


def _count(v: Any, where: str) -> int:
    n = _integer(v, where)
    if n < 0:
        raise CaseFileError(f"{where}: must not be negative, not {n}")
    return n


MAX_RANK = 64


def _dims(v: Any, where: str) -> tuple[int, ...]:
    if not isinstance(v, list):
        raise CaseFileError(f"{where}: must be a list of non-negative integers, not {_show(v)}")
    if len(v) > MAX_RANK:
        raise CaseFileError(f"{where}: more than {MAX_RANK} dims")
    return tuple(_count(x, f"{where}[{i}]") for i, x in enumerate(v))


def _scalar(d: dt.DType, v: Any, where: str) -> Any:
    """A scalar's value, of a kind its dtype holds: a complex value only for a complex dtype,
    an integer for an integer dtype, true/false for BOOL (nothing is silently cut)."""
    value = _number(v, where)
    if isinstance(value, complex) and d.category != "complex":
        raise CaseFileError(f"{where}: a complex value for a {d.name} scalar")
    if d.category == "bool" and not isinstance(value, bool):
        raise CaseFileError(f"{where}: a BOOL scalar takes true or false, not {_show(v)}")
    if d.category == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        raise CaseFileError(f"{where}: a {d.name} scalar takes an integer, not {_show(v)}")
    if d.category in ("float", "complex") and isinstance(value, bool):
        raise CaseFileError(f"{where}: a {d.name} scalar takes a number, not {_show(v)}")
    return value


def _read_arg(d: Path, base: Path, name: str, spec: Any, budget: _Budget) -> Any:
    where = f"{d / 'case.json'}: args.{name}"
    if not isinstance(spec, dict):
        raise CaseFileError(f"{where}: must be a mapping with a kind")
    kind = spec["kind"]
    if kind == "null":
        return None
    if kind == "bool":
        if not isinstance(spec["value"], bool):
            raise CaseFileError(f"{where}: value must be true or false")
        return spec["value"]
    if kind == "string":
        return _text(spec["value"], f"{where}: value")
    if kind == "scalar":
        info = dt.get(_text(spec["dtype"], f"{where}: dtype"))
        return ScalarArg(info.name, _scalar(info, spec["value"], where))
    if kind in ("int", "float"):
        return _by_value(kind, spec["value"], f"{where}: value")
    if kind in ARRAY_KINDS or kind in LIST_KINDS:
        return _read_array(d, base, name, kind, spec["values"], where, budget)
    if kind != "tensor":
        raise CaseFileError(f"{where}: unknown kind {_show(kind)}")
    return _read_tensor(d, base, name, spec, where, budget)


def _by_value(kind: str, v: Any, where: str) -> int | float:
    """An int (an integer, no true/false, no 2.0) or a float (a number, or "nan"/"inf")."""
    if kind == "float" and isinstance(v, str):
        v = _number(v, where)
    if why := number_problem(kind, v):
        raise CaseFileError(
            f"{where}: an {kind} parameter {why}"
            if kind == "int"
            else f"{where}: a float parameter {why}"
        )
    return float(v) if kind == "float" else int(v)


def _read_array(
    d: Path, base: Path, name: str, kind: str, raw: Any, where: str, budget: _Budget
) -> ArrayArg:
    if not isinstance(raw, list):
        raise CaseFileError(f"{where}: values of a {kind} must be a list, not {_show(raw)}")
    if len(raw) > MAX_ARRAY_LEN:
        raise CaseFileError(
            f"{where}: a {kind} of {len(raw)} items; at most {MAX_ARRAY_LEN} are read"
        )
    at = [f"{where}: values[{i}]" for i in range(len(raw))]
    if kind == "tensor_list":
        items: list[Any] = []
        for i, t in enumerate(raw):
            if not isinstance(t, dict) or t.get("kind", "tensor") != "tensor":
                raise CaseFileError(f"{at[i]}: must be a tensor mapping")
            items.append(_read_tensor(d, base, f"{name}[{i}]", t, at[i], budget))
        return ArrayArg(kind, tuple(items))
    if kind == "scalar_list":
        out = []
        for i, x in enumerate(raw):
            if not isinstance(x, dict):
                raise CaseFileError(f"{at[i]}: must be {{dtype, value}}")
            info = dt.get(_text(x["dtype"], f"{at[i]}: dtype"))
            out.append(ScalarArg(info.name, _scalar(info, x["value"], at[i])))
        return ArrayArg(kind, tuple(out))
    if kind == "bool_array":
        if not all(isinstance(v, bool) for v in raw):
            bad = next(i for i, v in enumerate(raw) if not isinstance(v, bool))
            raise CaseFileError(
                f"{at[bad]}: a bool_array item is true or false, not {_show(raw[bad])}"
            )
        return ArrayArg(kind, tuple(raw))
    item = kind.removesuffix("_array")
    return ArrayArg(kind, tuple(_by_value(item, v, at[i]) for i, v in enumerate(raw)))


def _read_tensor(
    d: Path, base: Path, name: str, spec: dict[str, Any], where: str, budget: _Budget
) -> TensorArg:
    info = dt.get(_text(spec["dtype"], f"{where}: dtype"))
    shape = _dims(spec["shape"], f"{where}: shape")
    raw_strides = spec.get("strides")
    strides = _dims(raw_strides, f"{where}: strides") if raw_strides is not None else ()
    if not strides:
        strides = contiguous_strides(shape)
    offset = _count(spec.get("offset", 0), f"{where}: offset")
    fmt = _text(spec.get("format", "ND"), f"{where}: format")
    encoding = spec.get("encoding", "native")
    if encoding not in ("native", "bits"):
        raise CaseFileError(f"{where}: encoding must be 'native' or 'bits', not {_show(encoding)}")
    digest = spec.get("sha256")
    if digest is not None and not isinstance(digest, str):
        raise CaseFileError(f"{where}: sha256 must be a hex string")
    storage = _text(spec["storage"], f"{where}: storage")
    path = d / storage
    if path.is_symlink() or not path.resolve().is_relative_to(base) or path.parent != d:
        raise CaseFileError(
            f"{where}: storage {storage!r} must be a plain file in the case directory"
        )
    data = _load_storage(path, info, encoding, digest, where, budget)
    t = TensorArg(info.name, shape, strides, offset, data, fmt)
    try:
        t.validate(name)
    except ValueError as exc:
        raise CaseFileError(f"{where}: {exc}") from None
    return t


def _storage_dtype(info: dt.DType, encoding: str, where: str) -> np.dtype:
    """The dtype the .npy of a tensor of dtype `info` must hold in `encoding`."""
    if encoding == "bits":
        return np.dtype(_BITS[info.np.itemsize])
    if str(info.np) not in _NATIVE:
        raise CaseFileError(
            f"{where}: dtype {info.name} has no native .npy form: its storage "
            'must be saved as raw bits ("encoding": "bits")'
        )
    return np.dtype(info.np)


def _load_storage(
    path: Path, info: dt.DType, encoding: str, digest: str | None, where: str, budget: _Budget
) -> np.ndarray:
    """A storage file checked in order of cost: a regular file (stat), its size against the
    budget, its .npy header against the size, then its checksum, then mapped read-only."""
    want = _storage_dtype(info, encoding, where)
    try:
        st = safeio.check_regular(path, follow_symlinks=False)
    except FileNotFoundError:
        raise CaseFileError(f"{where}: storage file {path.name} is missing") from None
    except OSError as exc:
        raise CaseFileError(f"{where}: storage {path.name}: {exc.strerror or exc}") from None
    budget.take(st.st_size, where, path.name)
    try:
        with safeio.open_regular(path, st.st_size, follow_symlinks=False) as f:
            count, start = _npy_header(f, path.name, want, st.st_size, where)
            if digest is not None:
                f.seek(0)
                h = hashlib.sha256()
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
                if h.hexdigest() != digest:
                    raise CaseFileError(f"{where}: checksum mismatch for {path.name}")
            if count == 0:
                data = np.empty(0, dtype=want)
            else:
                data = np.memmap(f, dtype=want, mode="r", offset=start, shape=(count,))
                data = data.view(np.ndarray)
    except OSError as exc:
        raise CaseFileError(f"{where}: cannot read {path.name}: {exc.strerror or exc}") from None
    return data.view(info.np) if encoding == "bits" else data


def _npy_header(f: Any, name: str, want: np.dtype, size: int, where: str) -> tuple[int, int]:
    """(elements, data offset) of a .npy file: a 1-D array of dtype `want` whose data fills
    the rest of the file exactly; CaseFileError before anything of that size is allocated."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
        if version == (1, 0):
            shape, _fortran, dtype = fmt.read_array_header_1_0(f, max_header_size=10_000)
        elif version == (2, 0):
            shape, _fortran, dtype = fmt.read_array_header_2_0(f, max_header_size=10_000)
        else:
            raise CaseFileError(f"{where}: cannot load {name}: .npy format version {version}")
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError) as exc:
        raise CaseFileError(
            f"{where}: cannot load {name}: not a .npy file: {one_line(exc)}"
        ) from None
    if len(shape) != 1:
        raise CaseFileError(
            f"{where}: storage must be a 1-D array of at most {MAX_ELEMENTS} elements"
        )
    count = int(shape[0])
    if dtype != want:
        held = dtype.str if dtype.hasobject or dtype.fields else dtype
        raise CaseFileError(f"{where}: {name} holds {held}, the tensor needs {want}")
    if count > MAX_ELEMENTS:
        raise CaseFileError(
            f"{where}: the header of {name} declares {count} elements; a "
            f"storage holds at most {MAX_ELEMENTS}"
        )
    start = f.tell()
    if start + count * want.itemsize != size:
        raise CaseFileError(
            f"{where}: {name} is {size} bytes, but its header declares {count} "
            f"elements of {want} after a {start}-byte header "
            f"({start + count * want.itemsize} bytes)"
        )
    return count, start


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."
