"""Where results came from: backend, backend version, oracle, seed, spec hashes, tool version,
and the expectations in force (by content hash: they decide verdicts too).

`merge` and `run --resume` join records of several runs into one results file whose meta then
speaks for all of them. Both refuse runs that differ in provenance (a `ProvenanceError`, one
line naming the field, the two values and the two files) unless forced, in which case the mix is
recorded in the meta as `"mixed": {"backend": ["reference", "torch"], ...}`.

A file's provenance is read from its records first (they are what was actually run: a meta can
be stale, or overwritten by a resumed run) and from its `.meta.json` only for a field no record
carries. Spec hashes are compared like with like: records carry the hash of their op's spec, the
meta a hash of the whole registry. A field known on one side only is not a difference.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import safeio
from . import results as res
from .result import Result

#: Fields compared as plain values (each record and meta carries them under these names).
SCALARS = ("backend", "backend_version", "oracle", "seed", "tool_version",
           "expectations_sha256")  # fmt: skip
#: Every field a conflict can name (`spec_sha256`: per op, or of the whole registry).
FIELDS = (*SCALARS, "spec_sha256")

Values = tuple[Any, ...]


class ProvenanceError(ValueError):
    """Runs of different provenance would be joined; the message is one line for the user."""


@dataclass(frozen=True)
class Provenance:
    """What one run (or results file) was made with. Each field holds the distinct values seen,
    sorted (normally one; several for a file that already mixes runs; none when unknown)."""

    backend: Values = ()
    backend_version: Values = ()
    oracle: Values = ()
    seed: Values = ()
    tool_version: Values = ()
    # the expectations file and the spec deviations in force ("none": --no-expectations)
    expectations_sha256: Values = ()
    spec_sha256: Values = ()  # hash of the whole registry (meta)
    op_spec_sha256: dict[str, Values] = field(default_factory=dict)  # op -> spec hash (records)
    origin: dict[str, str] = field(default_factory=dict)  # field -> "records", "meta" or "run"

    def values(self, name: str) -> Values:
        return getattr(self, name)


@dataclass(frozen=True)
class Conflict:
    """`field` differs: `value_a` on one side, `value_b` on the other (a list when that side
    already holds several). `where`: `op NAME` or `registry` for spec hashes, else ''."""

    field: str
    value_a: Any
    value_b: Any
    where: str = ""


# -- reading --------------------------------------------------------------------------------


def _norm(value: Any) -> Any:
    """A hashable form of a JSON value (forged or odd files must not crash the comparison)."""
    if isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _sorted(values: Iterable[Any]) -> Values:
    def key(v: Any) -> tuple:
        if isinstance(v, int | float) and not isinstance(v, bool):
            return (0, v, "")
        return (1, 0, f"{type(v).__name__}:{v}")

    return tuple(sorted(set(values), key=key))


def _meta_values(meta: Mapping[str, Any], name: str) -> Values:
    mixed = meta.get("mixed")
    if isinstance(mixed, Mapping) and isinstance(mixed.get(name), list):
        return _sorted(_norm(v) for v in mixed[name] if v is not None)
    value = meta.get(name)
    if value is None:
        return ()
    if name == "spec_sha256" and isinstance(value, str) and value.startswith("mixed: "):
        return _sorted(v.strip() for v in value[len("mixed: ") :].split(",") if v.strip())
    return (_norm(value),)


def read_meta(results: str | Path) -> dict[str, Any]:
    """The `.meta.json` beside a results file; {} when absent or unreadable."""
    path = Path(str(results) + ".meta.json")
    with contextlib.suppress(OSError, ValueError, RecursionError):
        meta = json.loads(safeio.read_bytes(path, res.MAX_META_BYTES))
        if isinstance(meta, dict):
            return meta
    return {}


def from_parts(records: Iterable[Result], meta: Mapping[str, Any]) -> Provenance:
    """The provenance of records and their meta (records first, the meta for what they lack)."""
    seen: dict[str, set] = {name: set() for name in SCALARS}
    per_op: dict[str, set] = {}
    for rec in records:
        for name in SCALARS:
            value = getattr(rec, name)
            if value is not None:
                seen[name].add(_norm(value))
        op, sha = rec.op, rec.spec_sha256
        if isinstance(op, str) and sha is not None:
            per_op.setdefault(op, set()).add(_norm(sha))
    kw: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name in SCALARS:
        if seen[name]:
            kw[name], origin[name] = _sorted(seen[name]), "records"
        elif meta_values := _meta_values(meta, name):
            kw[name], origin[name] = meta_values, "meta"
    if registry := _meta_values(meta, "spec_sha256"):
        kw["spec_sha256"], origin["spec_sha256"] = registry, "meta"
    kw["op_spec_sha256"] = {op: _sorted(v) for op, v in sorted(per_op.items())}
    return Provenance(**kw, origin=origin)


def from_results(results: str | Path) -> Provenance:
    """The provenance of a results file (its records and its `.meta.json`)."""
    return from_parts(res.Stream(results), read_meta(results))


def from_run(now: Mapping[str, Any]) -> Provenance:
    """The provenance of a run about to start, from a meta-like dict: backend, backend_version,
    oracle, seed, tool_version (None or absent: unknown), spec_sha256 (the registry hash, or a
    mapping op -> spec hash), op_spec_sha256 (a mapping op -> spec hash)."""
    kw: dict[str, Any] = {}
    for name in SCALARS:
        if now.get(name) is not None:
            kw[name] = (_norm(now[name]),)
    per_op: dict[str, Values] = {}
    for key in ("spec_sha256", "op_spec_sha256"):
        value = now.get(key)
        if isinstance(value, Mapping):
            per_op.update({str(op): (_norm(h),) for op, h in value.items() if h is not None})
        elif value is not None and key == "spec_sha256":
            kw["spec_sha256"] = (_norm(value),)
    return Provenance(**kw, op_spec_sha256=per_op, origin={n: "run" for n in kw})


# -- comparing ------------------------------------------------------------------------------


def _one(values: Values) -> Any:
    return values[0] if len(values) == 1 else list(values)


def conflicts(a: Provenance, b: Provenance) -> list[Conflict]:
    """Every field in which a and b differ (a field unknown on either side is skipped): the
    scalars, then per-op spec hashes of the ops both hold, then the registry hashes."""
    out = []
    for name in SCALARS:
        va, vb = a.values(name), b.values(name)
        if va and vb and set(va) != set(vb):
            out.append(Conflict(name, _one(va), _one(vb)))
    for op in sorted(set(a.op_spec_sha256) & set(b.op_spec_sha256)):
        va, vb = a.op_spec_sha256[op], b.op_spec_sha256[op]
        if va and vb and set(va) != set(vb):
            out.append(Conflict("spec_sha256", _one(va), _one(vb), f"op {op}"))
    if a.spec_sha256 and b.spec_sha256 and set(a.spec_sha256) != set(b.spec_sha256):
        out.append(Conflict("spec_sha256", _one(a.spec_sha256), _one(b.spec_sha256), "registry"))
    return out


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "mixed [" + ", ".join(repr(v) for v in value) + "]"
    return repr(value)


_WHAT = {
    "backend": "one backend",
    "backend_version": "one backend version",
    "oracle": "one oracle",
    "seed": "one seed",
    "tool_version": "one aclnn-conform version",
    "expectations_sha256": "one set of expectations",
    "spec_sha256": "one version of the specs",
}
_RESUME_OPTION = {"backend": "--backend", "oracle": "--oracle", "seed": "--seed"}


def describe(
    conflict: Conflict, file_a: str | Path, file_b: str | Path, command: str = "merge"
) -> str:
    """One line for the user: FILE_B differs from FILE_A in FIELD: B vs A (what to do).
    `command` is `merge` or `--resume` (then file_a is the results file, file_b the new run)."""
    c = conflict
    where = ""
    if c.where.startswith("op "):
        where = f" of {c.where}"
    elif c.where == "registry":
        where = " of the whole spec registry"
    head = (
        f"{command}: {file_b} differs from {file_a} in {c.field}{where}: "
        f"{_show(c.value_b)} vs {_show(c.value_a)}"
    )
    if command == "merge":
        hint = f"merge only runs of {_WHAT.get(c.field, 'one kind')}"
    elif c.field in _RESUME_OPTION and not isinstance(c.value_a, list):
        hint = f"resume with {_RESUME_OPTION[c.field]} {c.value_a} or run without --resume"
    elif c.field == "expectations_sha256":
        hint = (
            "the expectations decided the recorded verdicts: resume with the same "
            "expectations file (or --no-expectations as before) or run without --resume"
        )
    else:
        hint = "run without --resume to start the results file afresh"
    return f"{head} ({hint}, or pass --force to record the mix)"


# -- mixing ---------------------------------------------------------------------------------


def mix(provenances: Iterable[Provenance]) -> dict[str, Any]:
    """The `mixed` record of a meta: each field with more than one value among the inputs, with
    all of them (`op_spec_sha256`: per op); {} when they agree."""
    provs = list(provenances)
    out: dict[str, Any] = {}
    for name in (*SCALARS, "spec_sha256"):
        values = _sorted(v for p in provs for v in p.values(name))
        if len(values) > 1:
            out[name] = list(values)
    per_op: dict[str, list] = {}
    for op in sorted({op for p in provs for op in p.op_spec_sha256}):
        values = _sorted(v for p in provs for v in p.op_spec_sha256.get(op, ()))
        if len(values) > 1:
            per_op[op] = list(values)
    if per_op:
        out["op_spec_sha256"] = per_op
    return out


def describe_mix(mixed: Mapping[str, Any]) -> str:
    """`backend 'reference', 'torch'; seed 0, 5` (for the warning line of a forced mix)."""
    parts = []
    for name, values in mixed.items():
        if isinstance(values, Mapping):
            for op, hashes in values.items():
                parts.append(f"spec_sha256 of op {op} " + ", ".join(map(repr, hashes)))
        else:
            parts.append(f"{name} " + ", ".join(map(repr, values)))
    return "; ".join(parts)


def label_merged(
    meta: dict[str, Any], records: Iterable[Result], metas: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """Make a merged meta speak for the merged records (not for the first input): each scalar
    field set to its one value in the records (for a field no record carries: in the input
    metas), removed where there are several, which `mixed` then lists, with the spec hashes
    that differ (registry: across the metas; per op: across the records). Returns `mixed`."""
    held = from_parts(records, {})
    given = [from_parts((), m) for m in metas]
    mixed: dict[str, Any] = {}
    for name in SCALARS:
        values = held.values(name) or _sorted(v for p in given for v in p.values(name))
        if len(values) == 1:
            meta[name] = values[0]
        elif len(values) > 1:
            meta.pop(name, None)
            mixed[name] = list(values)
    registry = _sorted(v for p in given for v in p.spec_sha256)
    if len(registry) > 1:
        mixed["spec_sha256"] = list(registry)
    per_op = {op: list(v) for op, v in held.op_spec_sha256.items() if len(v) > 1}
    if per_op:
        mixed["op_spec_sha256"] = per_op
    meta.pop("mixed", None)
    if mixed:
        meta["mixed"] = mixed
    return mixed or None


def check_merge(paths: Sequence[str | Path], force: bool) -> dict[str, Any] | None:
    """Refuse (ProvenanceError) results files of different provenance unless `force`. Returns
    how the inputs (all their records, before later files replace earlier ones) mix, as in a
    `mixed` record, or None when they agree."""
    provs = [from_results(p) for p in paths]
    for j in range(1, len(provs)):
        for i in range(j):
            found = conflicts(provs[i], provs[j])
            if found and not force:
                raise ProvenanceError(describe(found[0], paths[i], paths[j], "merge"))
    return mix(provs) or None


def check_resume(results: Path, now: dict, force: bool) -> dict | None:
    """Before `run --resume` appends to `results`: refuse (ProvenanceError) when the new run
    differs from the records already there, unless `force`. `now` is the new run's meta-like
    dict (see `from_run`). Returns the `mixed` record to store in the new meta, or None when
    the file and the run agree (and the file was not already mixed)."""
    results = Path(results)
    if not results.exists():
        return None
    before, after = from_results(results), from_run(now)
    found = conflicts(before, after)
    if found and not force:
        raise ProvenanceError(describe(found[0], results, "this run", "--resume"))
    return mix([before, after]) or None
