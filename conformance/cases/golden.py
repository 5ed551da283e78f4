"""A case directory's stored golden: `golden.json` plus the expected values beside `case.json`.

`cases export --golden` writes what the oracle said of a case (its status, and for each output
either the exact values before the final rounding, float64 in the view's C order, or the whole
expected storage) together with the comparison policy that judges each output, so that a host
without this package's reference can judge the case: `run --cases DIR --golden stored` reads it
back instead of evaluating the oracle. Files are checked as strictly as the case's own storages.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import Outcome, TensorArg
from ..files import safeio
from ..spec.tolerances import Policy
from .casedir import (
    FORMAT,
    MAX_CASE_JSON,
    CaseFileError,
    _Budget,
    _load_storage,
    save_array,
    sha256_file,
)

GOLDEN_FILE = "golden.json"
POLICY_FIELDS = ("rel", "max_ratio", "mere", "mare", "small_threshold", "small_atol", "max_ulp")


@dataclass
class StoredGolden:
    """What a case directory's golden.json says: the oracle's outcome and each output's policy
    ({"dtype": tolerance dtype, rel, max_ratio, ...})."""

    outcome: Outcome
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    oracle: str = ""
    oracle_version: str = ""


def policy_dict(tol_dtype: str, policy: Policy) -> dict[str, Any]:
    """A comparison policy as golden.json stores it (and the record's comparisons show it)."""
    return {"dtype": tol_dtype, **dataclasses.asdict(policy)}


def policy_from(stored: dict[str, Any]) -> Policy:
    """The Policy a stored policy dict describes."""
    names = {f.name for f in dataclasses.fields(Policy)}
    return Policy(**{k: v for k, v in stored.items() if k in names})


def has_golden(d: Path) -> bool:
    return (Path(d) / GOLDEN_FILE).is_file()


def write_golden(d: Path, golden: StoredGolden) -> Path:
    """Write golden.json and its arrays into case directory `d` (beside case.json).
    `golden.outcome.golden[name]` is a float64 array of the view's elements (C order);
    `golden.outcome.outputs[name]` a whole expected storage, used when there is no golden."""
    d = Path(d)
    want = golden.outcome
    outputs: dict[str, Any] = {}
    for name, policy in golden.policies.items():
        entry: dict[str, Any] = {"policy": policy}
        g = want.golden.get(name)
        if g is not None:
            path = d / f"golden_{name}.npy"
            save_array(path, np.ascontiguousarray(np.asarray(g, dtype=np.float64).reshape(-1)))
            entry.update(values=path.name, sha256=sha256_file(path))
        elif name in want.outputs:
            path = d / f"expected_{name}.npy"
            entry.update(storage=path.name, encoding=save_array(path, want.outputs[name]))
            entry["sha256"] = sha256_file(path)
        outputs[name] = entry
    meta = {
        "format": FORMAT,
        "status": int(want.status),
        "message": want.message,
        "clause": want.clause,
        "nothing_written": bool(want.nothing_written),
        "oracle": golden.oracle,
        "oracle_version": golden.oracle_version,
        "outputs": outputs,
    }
    text = (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode("utf-8")
    safeio.write_file(d / GOLDEN_FILE, lambda f: f.write(text))
    return d / GOLDEN_FILE


def read_golden(d: Path, call_args: dict[str, Any], max_bytes: int | None = None) -> StoredGolden:
    """The stored golden of case directory `d` whose arguments are `call_args`; CaseFileError
    naming the file and field when it is missing, malformed, or does not fit the case."""
    d = Path(d)
    gj = d / GOLDEN_FILE
    if not gj.exists() and not gj.is_symlink():
        raise CaseFileError(
            f"{gj}: no stored golden (--golden stored): write it with 'aclnn-conform cases "
            "export --golden', or run without --golden stored"
        )
    if gj.is_symlink():
        raise CaseFileError(f"{gj}: golden.json is a symlink")
    try:
        meta = json.loads(safeio.read_bytes(gj, MAX_CASE_JSON, follow_symlinks=False))
    except OSError as exc:
        raise CaseFileError(f"{gj}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CaseFileError(f"{gj}: cannot read: not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CaseFileError(f"{gj}: not a format-{FORMAT} golden file")
    try:
        status = meta["status"]
        if isinstance(status, bool) or not isinstance(status, int):
            raise CaseFileError(f"{gj}: status must be an integer")
        raw = meta.get("outputs") or {}
        if not isinstance(raw, dict):
            raise CaseFileError(f"{gj}: outputs must be a mapping of output names")
        budget = _Budget(max_bytes)
        outputs: dict[str, np.ndarray] = {}
        goldens: dict[str, np.ndarray] = {}
        policies: dict[str, dict[str, Any]] = {}
        for name, entry in raw.items():
            where = f"{gj}: outputs.{name}"
            t = call_args.get(name)
            if not isinstance(t, TensorArg) or not isinstance(entry, dict):
                raise CaseFileError(f"{where}: the case has no output tensor {name!r}")
            policies[name] = _policy(entry.get("policy"), where)
            if "values" in entry:
                info = dt.get("DOUBLE")
                path = _member(d, entry["values"], where)
                data = _load_storage(path, info, "native", entry.get("sha256"), where, budget)
                if data.size != t.numel:
                    raise CaseFileError(
                        f"{where}: {path.name} holds {data.size} values; the view of {name} "
                        f"has {t.numel}"
                    )
                goldens[name] = np.asarray(data).reshape(t.shape)
            elif "storage" in entry:
                info = dt.get(t.dtype)
                path = _member(d, entry["storage"], where)
                enc = entry.get("encoding", "native")
                data = _load_storage(path, info, enc, entry.get("sha256"), where, budget)
                if data.size != t.storage.size:
                    raise CaseFileError(
                        f"{where}: {path.name} holds {data.size} elements; the storage of "
                        f"{name} has {t.storage.size}"
                    )
                outputs[name] = np.array(data)
        want = Outcome(
            status,
            outputs,
            str(meta.get("message") or ""),
            meta.get("clause"),
            bool(meta.get("nothing_written", False)),
            goldens,
        )
        return StoredGolden(
            want, policies, str(meta.get("oracle", "")), str(meta.get("oracle_version", ""))
        )
    except CaseFileError:
        raise
    except KeyError as exc:
        raise CaseFileError(f"{gj}: malformed: missing field {exc}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise CaseFileError(f"{gj}: malformed: {type(exc).__name__}: {exc}") from None


def _member(d: Path, name: Any, where: str) -> Path:
    if not isinstance(name, str) or "/" in name or name in ("", ".", ".."):
        raise CaseFileError(f"{where}: {name!r} must be a plain file in the case directory")
    path = d / name
    if path.is_symlink():
        raise CaseFileError(f"{where}: {name} is a symlink")
    return path


def _policy(raw: Any, where: str) -> dict[str, Any]:
    """A stored comparison policy: the tolerance dtype and finite, non-negative numbers."""
    if not isinstance(raw, dict) or not isinstance(raw.get("dtype"), str):
        raise CaseFileError(f"{where}: policy must be a mapping with a dtype")
    out: dict[str, Any] = {"dtype": raw["dtype"], "exact": bool(raw.get("exact", False))}
    for k in POLICY_FIELDS:
        v = raw.get(k)
        if v is None and k == "max_ulp":
            out[k] = None
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise CaseFileError(f"{where}: policy.{k} must be a finite number >= 0, not {v!r}")
        out[k] = float(v)
    return out
