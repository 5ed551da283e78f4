"""The one record of a judged case: `Result`, written as one JSON line of a results file.

Every record is built through this class (the judge, the runner's error records, the
expectations' skips) and read back through it (`from_json`), so the fields a record can hold are
said once, typed, here. The JSON line is the results format of every earlier version: a field
that was never set is left out of the line (a case that stopped before the backend ran has no
`actual_status`), a field set to none is written as null (`actual_status` of a backend that
raised), keys are sorted. A line from an older or newer version reads: keys this version does
not know are kept in `extra` and written back unchanged, missing ones stay unset.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class Result:
    """One case's record (see the module docstring). Unset fields are None."""

    id: str
    verdict: str
    reason: str | None = None  # why the verdict ('' for a pass)
    # what the case is (the runner writes these before it judges)
    op: str | None = None  # the spec's name
    aclnn_op: str | None = None
    product: str | None = None
    kind: str | None = None  # positive | negative
    dtypes: dict[str, str] | None = None  # tensor parameter -> dtype name
    dtype_tag: str | None = None  # short dtypes in parameter order, as in case ids
    layouts: dict[str, dict[str, Any]] | None = None  # tensor -> shape, strides, offset, storage
    out_dtype: str | None = None  # the first output's dtype (the report's column)
    outputs: list[str] | None = None  # the output parameters, in spec order
    clauses: list[str] | None = None  # op/clause ids the case exercises
    expected_status: int | None = None
    seed: int | None = None
    binding: str | None = None  # what expectations select by (aten::<op>)
    # who judged it
    backend: str | None = None
    backend_version: str | None = None
    oracle: str | None = None
    oracle_version: str | None = None
    spec_sha256: str | None = None
    tool_version: str | None = None
    expectations_sha256: str | None = None
    # what happened
    oracle_status: int | None = None
    actual_status: int | None = None  # null: the backend raised (no status)
    message: str | None = None  # the backend's own words
    raised: bool | None = None
    status_match: bool | None = None
    differs: str | None = None  # status | values | nonfinite
    tolerance_dtype: str | None = None  # the dtype whose tolerance policy applied
    comparisons: dict[str, dict[str, Any]] | None = None  # output -> stats, worst, policy, ...
    stats: dict[str, Any] | None = None  # the last output's statistics
    worst: list[dict[str, Any]] | None = None  # the last output's worst elements
    durations: dict[str, float] | None = None  # oracle, backend, compare, total (seconds)
    # how the expectations decided it
    verdict_before_expectation: str | None = None
    expectation: dict[str, Any] | None = None  # match, kind, reason, deviation, where, ...
    replay: str | None = None  # the command that judges this case again
    keep_outputs_error: str | None = None
    # keys this version does not know (a newer or hand-made file), written back as they were
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    # fields set to none on purpose (written as null), as against never set (left out)
    nulls: set[str] = field(default_factory=set, repr=False, compare=False)

    def set(self, key: str, value: Any) -> None:
        """Set field `key` (an unknown key goes to `extra`); None is recorded as null."""
        if key in _FIELD_SET:
            setattr(self, key, value)
            if value is None:
                self.nulls.add(key)
            else:
                self.nulls.discard(key)
        else:
            self.extra[key] = value

    def update(self, values: dict[str, Any] | None = None, /, **more: Any) -> None:
        for k, v in {**(values or {}), **more}.items():
            self.set(k, v)

    def to_dict(self) -> dict[str, Any]:
        """The record as the JSON object of its line (set fields, nulls, extra keys)."""
        out = dict(self.extra)
        for name in _FIELDS:
            value = getattr(self, name)
            if value is not None or name in self.nulls:
                out[name] = value
        return out

    def to_json(self) -> str:
        """The record's line (without the newline): sorted keys, ASCII, as every version wrote."""
        return json.dumps(self.to_dict(), sort_keys=True, default=str)

    @classmethod
    def from_json(cls, data: str | bytes | dict[str, Any]) -> Result:
        """A record from its line or its parsed object. It needs `id` and `verdict`
        (ValueError otherwise); other fields are taken as they are, unknown keys kept."""
        obj = json.loads(data) if isinstance(data, str | bytes) else data
        if not (isinstance(obj, dict) and "id" in obj and "verdict" in obj):
            raise ValueError("not a result record (needs 'id' and 'verdict')")
        rec = cls(id=obj["id"], verdict=obj["verdict"])
        for k, v in obj.items():
            if k not in ("id", "verdict"):
                rec.set(k, v)
        return rec


_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Result) if f.name not in ("extra", "nulls"))
_FIELD_SET = frozenset(_FIELDS)
FIELDS = _FIELDS  # the record's keys, in declaration order


def as_dict(rec: Result | dict[str, Any]) -> dict[str, Any]:
    """A record as its JSON object, whichever form it has."""
    return rec.to_dict() if isinstance(rec, Result) else rec


def as_result(rec: Result | dict[str, Any]) -> Result:
    """A record as a Result, whichever form it has (a parsed JSON object is read with
    `from_json`): the readers take records from memory as well as from a results file."""
    return rec if isinstance(rec, Result) else Result.from_json(rec)
