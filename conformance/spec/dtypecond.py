"""A condition on a call's dtypes, shared by spec deviations and expectation entries.

    dtypes: {gradOutput: [FLOAT16, BF16]}   # that parameter's dtype is one of these
    dtypes: {any: [BF16], mixed: true}      # some tensor is BF16; the input tensors differ
    dtypes: {all_in: [FLOAT, BF16]}         # every tensor is FLOAT or BF16
    dtypes: {inputs: [FLOAT16], outputs: [BF16]}   # every tensor read is FLOAT16, every output BF16

Every key given must hold. A parameter key names a tensor or a scalar (its declared dtype); a
parameter the call leaves null never fits. `any` and `all_in` look at every tensor, inputs and
outputs; `inputs` and `mixed` at the tensors the op reads (`mixed` true: not all of one dtype;
false: all of one), `outputs` at the tensors it writes.
Conditions name dtypes, never case ids, so a generated, an imported and a hand-written case with
the same dtypes are treated alike.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..acl import dtypes as dt

KEYS = ("any", "all_in", "inputs", "outputs", "mixed")


class DtypeConditionError(ValueError):
    """A malformed condition; the message says which key and what is wrong."""


@dataclass(frozen=True)
class DtypeCondition:
    params: dict[str, frozenset[str]] = field(default_factory=dict)
    any: frozenset[str] = frozenset()
    all_in: frozenset[str] = frozenset()
    mixed: bool | None = None
    inputs: frozenset[str] = frozenset()
    outputs: frozenset[str] = frozenset()

    def matches(self, dtypes: Mapping[str, Any], outputs: Collection[str] = ()) -> bool:
        """Whether a call whose parameters have `dtypes` (name -> dtype name; a tensor or a
        scalar) fits; `outputs`: the names of the output tensors (not read by `mixed`)."""
        names = {k: _name(v) for k, v in dtypes.items() if v is not None}
        for param, allowed in self.params.items():
            if names.get(param) not in allowed:
                return False
        values = set(names.values())
        if self.any and not values & self.any:
            return False
        if self.all_in and not values <= self.all_in:
            return False
        read = {d for k, d in names.items() if k not in outputs}
        written = {d for k, d in names.items() if k in outputs}
        if self.inputs and not (read and read <= self.inputs):
            return False
        if self.outputs and not (written and written <= self.outputs):
            return False
        return self.mixed is None or (len(read) > 1) == self.mixed

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: sorted(v) for k, v in sorted(self.params.items())}
        if self.any:
            out["any"] = sorted(self.any)
        if self.all_in:
            out["all_in"] = sorted(self.all_in)
        for key in ("inputs", "outputs"):
            if getattr(self, key):
                out[key] = sorted(getattr(self, key))
        if self.mixed is not None:
            out["mixed"] = self.mixed
        return out


def _name(value: Any) -> str:
    try:
        return dt.get(str(value)).name
    except dt.DtypeError:
        return str(value)


def _dtype_list(key: str, value: Any) -> frozenset[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise DtypeConditionError(f"dtypes.{key} must be a non-empty list of dtype names")
    out = set()
    for v in value:
        try:
            out.add(dt.get(str(v)).name)
        except dt.DtypeError:
            raise DtypeConditionError(
                f"dtypes.{key}: unknown dtype {v!r} (see specs/dtypes.yaml)"
            ) from None
    return frozenset(out)


def parse(raw: Any, params: Collection[str] | None = None) -> DtypeCondition:
    """The condition of a `dtypes:` mapping; `params`: the parameter names a key may use (None:
    any name, as in an expectations file, which is not tied to one spec)."""
    if not isinstance(raw, dict) or not raw:
        raise DtypeConditionError(
            "dtypes must be a mapping such as {self: [FLOAT16, BF16]} or {any: [BF16], mixed: true}"
        )
    per: dict[str, frozenset[str]] = {}
    lists: dict[str, frozenset[str]] = {}
    mixed = None
    for key, value in raw.items():
        key = str(key)
        if key == "mixed":
            if not isinstance(value, bool):
                raise DtypeConditionError("dtypes.mixed must be true or false")
            mixed = value
        elif key in KEYS:
            lists[key] = _dtype_list(key, value)
        elif params is not None and key not in params:
            raise DtypeConditionError(
                f"dtypes.{key}: no parameter of that name (keys: a parameter, or {', '.join(KEYS)})"
            )
        else:
            per[key] = _dtype_list(key, value)
    empty: frozenset[str] = frozenset()
    return DtypeCondition(
        per,
        lists.get("any", empty),
        lists.get("all_in", empty),
        mixed,
        lists.get("inputs", empty),
        lists.get("outputs", empty),
    )
