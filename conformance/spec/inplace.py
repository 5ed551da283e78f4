"""In-place variants: the spec of aclnnInplaceX derived from the spec of aclnnX.

A spec's `inplace` section names the in-place API, the C name of its tensor (selfRef), and which
input it takes the place of and which output is written into it:

    inplace:
      op: aclnnInplaceX
      name: inplace_x
      tensor: selfRef      # the C name
      input: self          # the tensor read ...
      output: out          # ... and written: out's rules now apply to self
      source: ...
      bindings: {aten: {op: x_, args: [self, ...]}}
      c_type: "const aclTensor*"   # optional: the C type the in-place prototype gives the tensor
      dtype_sets: {float: {...}}   # optional: dtype sets the in-place API documents on its own
      first: [null-ptr, out-shape] # optional: checks the in-place API runs before the others

The variant keeps every rule of the out-of-place spec, with the output's name replaced by the
input's: the input becomes one `inout` tensor (role inout), so cases hand the backend one
tensor, and the result must land in that tensor's own storage, through its own view (strides and
offset kept, nothing outside the view touched). A rule that becomes vacuous when both sides are
the same tensor (self's dtype equal to, or castable to, self's; a dtype list no wider than the
one self was already checked against) is dropped with the deviations that name it. The work is done on the plain YAML data, before the spec is built, so the variant
is checked by the same linter as any spec.
"""

from __future__ import annotations

import copy
import re
from typing import Any

# Check kinds that relate two or more tensors: with one left they say nothing.
_PAIRWISE = {"same_dtype", "same_shape", "same_format", "broadcastable", "promotable"}


def _rename(value: Any, old: str, new: str) -> Any:
    """`value` with the parameter name `old` replaced by `new` (whole names, also inside a
    dtype term such as promote(a, out))."""
    if isinstance(value, str):
        return re.sub(rf"\b{re.escape(old)}\b", new, value)
    if isinstance(value, list):
        return list(dict.fromkeys(_rename(v, old, new) for v in value))  # drop duplicates
    return value


def _vacuous(check: dict[str, Any]) -> bool:
    params = check.get("params", [])
    kind = check.get("kind")
    if kind in _PAIRWISE:
        return len(params) < 2
    if kind == "castable":
        return check.get("to") in params and len(params) == 1
    if kind == "shape_is_broadcast":
        return list(check.get("of", [])) == list(params)
    return False


def _allowed(check: dict[str, Any], sets: dict[str, Any], product: str) -> set[str] | None:
    """The dtypes a dtype_in check allows on `product` (None: not a plain list check)."""
    if "dtypes" in check:
        return set(check["dtypes"])
    table = sets.get(check.get("set"))
    if not isinstance(table, dict):
        return None
    return set(table.get(product, table.get("default", [])))


def _repeats(check: dict[str, Any], earlier: list[dict[str, Any]], data: dict[str, Any]) -> bool:
    """A dtype_in check that no call can be the first to fail: an earlier dtype_in on the same
    parameters allows no more dtypes on any product (out's list on self, after self's own)."""
    if check.get("kind") != "dtype_in":
        return False
    sets = data.get("dtype_sets", {})
    for e in earlier:
        if e.get("kind") != "dtype_in" or not set(check["params"]) <= set(e["params"]):
            continue
        if all(
            (a := _allowed(e, sets, prod)) is not None
            and (b := _allowed(check, sets, prod)) is not None
            and a <= b
            for prod in data["products"]
        ):
            return True
    return False


def _renamed_deviation(dev: dict[str, Any], out: str, inp: str) -> dict[str, Any] | None:
    """A deviation of the variant: a `dtypes` condition on the output names the input instead
    (both named: the dtypes both allow; none: the deviation cannot apply and is dropped)."""
    cond = dev.get("dtypes")
    if not isinstance(cond, dict) or out not in cond:
        return dev
    cond = dict(cond)
    moved = cond.pop(out)
    if inp in cond and isinstance(moved, list) and isinstance(cond[inp], list):
        both = [x for x in cond[inp] if x in moved]
        if not both:
            return None
        cond[inp] = both
    else:
        cond[inp] = moved
    return {**dev, "dtypes": cond}


def derive(data: dict[str, Any]) -> dict[str, Any]:
    """The YAML data of the in-place variant of spec `data` (which has an `inplace` section)."""
    ip = data["inplace"]
    inp, out = ip["input"], ip["output"]
    v = copy.deepcopy(
        {k: x for k, x in data.items() if k not in ("inplace", "bindings", "aten", "atk")}
    )
    v["op"], v["name"] = ip["op"], ip["name"]
    v["summary"] = ip.get("summary") or (
        f"In-place {data['op']}: {ip['tensor']} is both {inp} and {out}; the result is written "
        f"into its own storage."
    )
    v["source"] = {**data["source"], "inplace": ip["source"]}
    if "products" in ip:
        v["products"] = list(ip["products"])
    for name, table in (ip.get("dtype_sets") or {}).items():  # the in-place API's own lists
        v.setdefault("dtype_sets", {})[name] = copy.deepcopy(table)
    params = []
    for p in v["params"]:
        if p["name"] == out:
            continue
        if p["name"] == inp:
            p = {
                **p,
                "role": "inout",
                "c_name": ip["tensor"],
                "c_type": ip.get("c_type", "aclTensor*"),
            }
        params.append(p)
    v["params"] = params
    checks, dropped = [], set()
    for c in v["checks"]:
        c = {k: _rename(x, out, inp) if k in ("params", "to", "of") else x for k, x in c.items()}
        if _vacuous(c) or _repeats(c, checks, v):
            dropped.add(c["id"])
        else:
            checks.append(c)
    first = [i for i in ip.get("first") or () if i not in dropped]
    by_id = {c["id"]: c for c in checks}
    v["checks"] = [by_id[i] for i in first if i in by_id] + [
        c for c in checks if c["id"] not in first
    ]
    for f in v["formulas"] if "formulas" in v else [v["formula"]]:  # out's formula is now inp's
        f["output"] = inp if f["output"] == out else f["output"]
    for prop in v.get("properties", []):
        if "params" in prop:
            prop["params"] = _rename(prop["params"], out, inp)
    v["deviations"] = [
        _renamed_deviation(d, out, inp)
        for d in v.get("deviations", [])
        if d.get("clause") not in dropped
    ]
    v["deviations"] = [d for d in v["deviations"] if d is not None]
    if not v["deviations"]:
        v.pop("deviations")
    b = copy.deepcopy(ip.get("bindings") or {})
    jax = (data.get("bindings") or {}).get("jax")
    if jax is not None and "jax" not in b:
        b["jax"] = {k: x for k, x in copy.deepcopy(jax).items() if k != "output"}
    if b:
        v["bindings"] = b
    if b.get("aten", {}).get("op"):
        v["aten"] = b["aten"]["op"]
    return v
