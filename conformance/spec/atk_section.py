"""A spec's `atk:` section beyond the name mapping: the rewrites the vendor's ATK executor makes
to the call (conformance.vendor.atk.files reads the section; the linter checks it with section_problems).

    atk:
      inputs: {x: self, format: ...}        # ATK name -> parameter (conformance.vendor.atk.files)
      formats: {input: format, source: ...} # the executor-only attribute `format` is the storage
                                            # format of every tensor (or of `params: [...]`)
      replace:                              # tensors the executor passes instead of the file's
        buffer: {shape: [1], value: 1, dtype_of: self, source: ...}

Both are data: the importer applies them to every case of the file, so no op needs Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..acl import dtypes as dt
from .atk_forms import FormError, parse_form


@dataclass(frozen=True)
class FormatRule:
    """`atk.formats`: the ATK attribute `input` (read by the executor only) is the storage format
    of the tensors `params` (every tensor of the call when empty)."""

    input: str
    params: tuple[str, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class Replacement:
    """`atk.replace.<param>`: the tensor the executor passes instead of the file's: `shape`,
    every element `value`, dtype `dtype` or that of the call's tensor `dtype_of`."""

    param: str
    shape: tuple[int, ...]
    value: Any
    dtype: str = ""
    dtype_of: str = ""
    source: str = ""


def parse_rules(raw: dict[str, Any]) -> tuple[FormatRule | None, dict[str, Replacement]]:
    """The `formats` and `replace` of a section section_problems found nothing wrong with."""
    fr = raw.get("formats")
    formats = (
        FormatRule(str(fr["input"]), tuple(fr.get("params") or ()), str(fr.get("source", "")))
        if isinstance(fr, dict)
        else None
    )
    replace = {
        str(k): Replacement(
            str(k),
            tuple(v["shape"]),
            v["value"],
            str(v.get("dtype", "")),
            str(v.get("dtype_of", "")),
            str(v.get("source", "")),
        )
        for k, v in (raw.get("replace") or {}).items()
    }
    return formats, replace


def section_problems(
    raw: dict[str, Any], params: dict[str, tuple[str, bool]]
) -> list[tuple[tuple, str]]:
    """What a (schema-valid) `atk:` section names that the spec lacks, as (path inside the
    section, message) pairs. params: parameter name -> (kind, is an output)."""
    out: list[tuple[tuple, str]] = []
    names = ", ".join(params)

    def tensor(p: Any, output: bool | None = None) -> bool:
        k = params.get(str(p))
        return k is not None and k[0] == "tensor" and (output is None or k[1] == output)

    for section in ("inputs", "outputs"):
        for atk_name, param in (raw.get(section) or {}).items():
            if param not in params:
                out.append(
                    (
                        (section, atk_name),
                        f"atk {section}: {atk_name!r} maps to {param!r}, "
                        f"which is no parameter ({names})",
                    )
                )
    fr = raw.get("formats")
    if isinstance(fr, dict):
        if str(fr.get("input")) in {str(k) for k in raw.get("inputs") or {}}:
            out.append(
                (
                    ("formats", "input"),
                    f"atk formats: {fr.get('input')!r} is read by the "
                    "executor only; it cannot also map to a parameter in atk.inputs",
                )
            )
        for p in fr.get("params") or ():
            if not tensor(p):
                out.append((("formats", "params"), f"atk formats: {p!r} is no tensor parameter"))
    for param, r in (raw.get("replace") or {}).items():
        if not tensor(param, output=False):
            out.append((("replace", param), f"atk replace: {param!r} is no tensor input ({names})"))
            continue
        if not isinstance(r, dict):
            continue
        if ("dtype" in r) == ("dtype_of" in r):
            out.append((("replace", param), "atk replace: give one of dtype and dtype_of"))
        if "dtype_of" in r and not tensor(r["dtype_of"]):
            out.append(
                (
                    ("replace", param, "dtype_of"),
                    f"atk replace: dtype_of {r['dtype_of']!r} is no tensor parameter",
                )
            )
        if "dtype" in r:
            try:
                dt.get(str(r["dtype"]))
            except dt.DtypeError:
                out.append(
                    (("replace", param, "dtype"), f"atk replace: unknown dtype {r['dtype']!r}")
                )
        try:
            form = parse_form(r.get("value"))
            if form.kind != "const" or isinstance(form.value, str):
                raise FormError("not one number")
        except FormError:
            out.append(
                (
                    ("replace", param, "value"),
                    f"atk replace: value {r.get('value')!r} is "
                    "not one number (a number, true/false, nan, inf or -inf)",
                )
            )
    return out
