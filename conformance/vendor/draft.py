"""A spec skeleton (YAML text) from a vendor doc page: `aclnn-conform specs draft DOC`.

What the page states is written out (op, products, parameters in C-signature order with roles
and C types, dtype tables per product, ranks, the rows of the status-code table as checks, each
with a `source:`); what needs a human is a `TODO` marker: the order of the checks (the doc's
table is not the library's order), the formula, scalar defaults, value rules. The result loads
as YAML; it passes `specs lint` once the TODOs are resolved.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..spec.tables import products as known_products
from .docpage.page import DocPage, DocParam, Interface, StatusRow, op_key

TODO = "TODO"


def snake(op: str) -> str:
    base = op[5:] if op.startswith("aclnn") else op
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()


def _q(v: object) -> str:
    """A YAML scalar: plain for simple names, JSON-quoted (valid YAML) otherwise."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    s = str(v)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", s) and s.lower() not in ("true", "false", "null"):
        return s
    return json.dumps(s, ensure_ascii=False)


def _flow(d: dict[str, object]) -> str:
    parts = []
    for k, v in d.items():
        if isinstance(v, list | tuple):
            parts.append(f"{k}: [{', '.join(_q(x) for x in v)}]")
        else:
            parts.append(f"{k}: {_q(v)}")
    return "{" + ", ".join(parts) + "}"


def pick(page: DocPage, op: str | None) -> Interface:
    """The interface to draft: `op`, else the first that is not an in-place variant."""
    if op:
        found = page.interface(op)
        if found is None:
            ops = ", ".join(i.op for i in page.interfaces)
            raise ValueError(f"{page.path} documents {ops}, not {op}")
        return found
    return next((i for i in page.interfaces if "Inplace" not in i.op), page.interfaces[0])


def draft(page: DocPage, op: str | None = None) -> tuple[str, int]:
    """(YAML text, number of TODO markers in it)."""
    itf = pick(page, op)
    ref = page.name
    prods = [p for p in known_products() if p in page.products]
    out = [
        f"# {itf.op}: drafted by `aclnn-conform specs draft` from {ref}.",
        "# Resolve every marker below, then check the file with `aclnn-conform specs lint FILE`.",
        "format: 1",
        f"op: {itf.op}",
        f"name: {snake(itf.op)}",
        f"summary: {TODO}",
        "source:",
        f"  {'doc' if page.format == 'markdown' else 'seed'}: {_q(_doc_ref(page))}",
        f"products: [{', '.join(prods)}]",
    ]
    if page.unsupported:
        out.append(f"# the page says not supported: {', '.join(page.unsupported)}")
    out += ["", "params:  # C signature order (the GetWorkspaceSize prototype)"]
    out += [f"  - {_param(p)}" for p in itf.params]
    sets, set_of = _dtype_sets(itf, prods)
    if sets:
        out += ["", "dtype_sets:"]
        for name, (members, table) in sets.items():
            out.append(f"  {name}:")
            where = f"{ref} 参数说明 {'/'.join(members)} dtype lists"
            out.append(f"    source: {_q(where)}")
            out += [f"    {k}: [{', '.join(v)}]" for k, v in table.items()]
    out += ["", "checks:  # TODO: order them as the library checks them (the first violation wins)"]
    for c in _checks(page, itf, set_of):
        out.append(f"  - {_flow(c)}")
    output = next((p.name for p in itf.params if p.role == "output" and p.kind == "tensor"), TODO)
    where = f"{TODO}: {ref} 计算公式"
    out += ["", "formula:", f"  output: {output}", f"  source: {_q(where)}"]
    if page.formula:
        out.append("  # the page's formula, as written:")
        out += [f"  #   {line}" for line in page.formula]
    out += ["  branches:", f"    - {{id: {TODO}, when: otherwise, value: {TODO}, source: {TODO}}}"]
    out += _inplace(page, itf)
    text = "\n".join(out) + "\n"
    return text, text.count(TODO)


def _doc_ref(page: DocPage) -> str:
    parts = Path(page.path).parts
    if page.format == "markdown" and len(parts) >= 4 and parts[-2] == "docs":
        return "/".join(parts[-4:])
    return page.name


def _param(p: DocParam) -> str:
    d: dict[str, object] = {"name": p.name, "kind": p.kind or TODO}
    if p.kind == "tensor":
        d["role"] = p.role or TODO
    d["c_type"] = p.c_type
    if p.kind in ("scalar", "bool", "int", "float"):
        d["default"] = TODO
    if p.kind == "scalar" and p.castable_to:
        d["default_dtype"] = p.castable_to
    values = re.findall(r'"([A-Za-z0-9_]+)"', p.text) if p.kind == "string" else []
    if values:
        d["default"] = values[0]
        d["values"] = list(dict.fromkeys(values))
    line = _flow(d)
    if not p.kind:
        line += f"  # TODO: the spec format has no kind for C type {p.c_type}"
    return line


def _dtype_sets(itf: Interface, prods: list[str]) -> tuple[dict, dict[str, str]]:
    """Params with identical per-product lists share a set: {name: (members, table)}."""
    groups: dict[tuple, list[str]] = {}
    for p in itf.params:
        if p.dtypes:
            key = tuple(p.dtypes.get(pr, ()) for pr in prods)
            groups.setdefault(key, []).append(p.name)
    sets, set_of = {}, {}
    for key, members in groups.items():
        name = members[0] if len(members) == 1 else "tensor"
        while name in sets:
            name += "2"
        counts = {k: key.count(k) for k in key}
        default = max(key, key=lambda k: counts[k])  # first of the most common lists
        table = {"default": list(default)}
        table.update({pr: list(v) for pr, v in zip(prods, key, strict=True) if v != default})
        sets[name] = (members, table)
        set_of.update(dict.fromkeys(members, name))
    return sets, set_of


def _row_kind(r: StatusRow) -> str:
    t = r.text
    for kind, pat in (
        ("not_null", r"空指针"),
        ("dtype_in", r"数据类型.*(不在支持的范围|不支持)"),
        ("max_rank", r"维度大于|超过\s*\d+\s*维|大于\s*\d+\s*维"),
        ("shape", r"broadcast|广播|shape"),
        ("castable", r"可转换|转换"),
        ("same_dtype", r"数据类型不一致|一致"),
        ("promotable", r"推导"),
    ):
        if re.search(pat, t):
            return kind
    return "value"


def _cite(page: DocPage, r: StatusRow) -> str:
    return f"{page.name}:{r.line} 返回值 {r.code}"


def _checks(page: DocPage, itf: Interface, set_of: dict[str, str]) -> list[dict[str, object]]:
    ref, rows = page.name, itf.status_rows or []
    ptrs = [p.name for p in itf.params if "*" in p.c_type]
    cited = {
        k: "; ".join(_cite(page, r) for r in rows if _row_kind(r) == k)
        for k in (
            "not_null",
            "dtype_in",
            "max_rank",
            "shape",
            "castable",
            "same_dtype",
            "promotable",
        )
    }
    null = [n for r in rows if _row_kind(r) == "not_null" for n in r.params]
    checks: list[dict[str, object]] = [
        {
            "id": "null-ptr",
            "kind": "not_null",
            "params": list(dict.fromkeys(null)) or ptrs,
            "status": "ACLNN_ERR_PARAM_NULLPTR",
            "source": cited["not_null"] or f"{TODO}: {ref} has no status table; pointers assumed",
        }
    ]
    for p in itf.params:
        if p.name in set_of:
            src = f"{ref} 参数说明 {p.name} 数据类型" + (f"; {cited['dtype_in']}" if rows else "")
            checks.append(
                {
                    "id": f"dtype-{p.name}",
                    "kind": "dtype_in",
                    "params": [p.name],
                    "set": set_of[p.name],
                    "source": src,
                }
            )
    casts: dict[str, list[str]] = {}
    for p in itf.params:
        if p.castable_to and p.kind == "scalar":
            casts.setdefault(p.castable_to, []).append(p.name)
    for target, names in casts.items():
        src = f"{ref} 参数说明 {'/'.join(names)} 可转换为{target}"
        checks.append(
            {
                "id": "scalar-castable",
                "kind": "castable",
                "params": names,
                "to": target,
                "source": src,
            }
        )
    checks += _relations(page, itf, cited)
    ranks: dict[int, list[str]] = {}
    for p in itf.params:
        if p.max_rank is not None:
            ranks.setdefault(p.max_rank, []).append(p.name)
    for mx, names in ranks.items():
        src = f"{ref} 参数说明 {'/'.join(names)} 维度 (max {mx})"
        checks.append(
            {
                "id": "max-rank",
                "kind": "max_rank",
                "params": names,
                "max": mx,
                "source": src + (f"; {cited['max_rank']}" if cited["max_rank"] else ""),
            }
        )
    for p in itf.params:
        vals = re.findall(r'"([A-Za-z0-9_]+)"', p.text) if p.kind == "string" else []
        if vals:
            checks.append(
                {
                    "id": f"{p.name}-value",
                    "kind": "string_in",
                    "params": [p.name],
                    "values": list(dict.fromkeys(vals)),
                    "source": f"{ref} 参数说明 {p.name}",
                }
            )
    for i, r in enumerate(x for x in rows if _row_kind(x) == "value"):
        checks.append(
            {
                "id": f"value-{i + 1}",
                "kind": "value",
                "violated_if": TODO,
                "examples": [],
                "status": r.code,
                "summary": r.text,
                "source": _cite(page, r),
            }
        )
    empty = [p.name for p in itf.params if re.search(r"空[Tt]ensor", p.text)]
    if empty:
        checks.append(
            {
                "id": "empty",
                "kind": "empty_success",
                "params": empty,
                "source": f"{ref} 参数说明 {'/'.join(empty)} 支持空Tensor",
            }
        )
    return checks


def _relations(page: DocPage, itf: Interface, cited: dict[str, str]) -> list[dict[str, object]]:
    """Dtype and shape rules between parameters, from the clauses of each description."""
    names = [p.name for p in itf.params]
    tensors = [p.name for p in itf.params if p.kind == "tensor"]
    found: dict[tuple, dict[str, object]] = {}
    for p in itf.params:
        for clause in re.split(r"[。；;\n]|，且|,且", p.text):
            words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", clause)
            others = [n for n in dict.fromkeys(words) if n in tensors and n != p.name]
            if not others:
                continue
            src = f"{page.name} 参数说明 {p.name}"
            pair = sorted({p.name, *others}, key=names.index)
            if "shape" in clause and re.search(r"broadcast|广播", clause):
                if p.role == "output":
                    ins = [n for n in others if n in tensors]
                    if len(ins) >= 2:
                        found[("sib", p.name)] = {
                            "id": f"{p.name}-shape",
                            "kind": "shape_is_broadcast",
                            "params": [p.name],
                            "of": ins,
                            "source": src,
                        }
                else:
                    found[("bc",)] = {
                        "id": "broadcastable",
                        "kind": "broadcastable",
                        "params": pair,
                        "source": src,
                    }
            elif "shape" in clause and re.search(r"相同|一致", clause):
                key = ("ss", frozenset(pair))
                found[key] = {
                    "id": "shape-equal",
                    "kind": "same_shape",
                    "params": pair,
                    "source": src,
                }
            if (
                "数据类型" in clause
                and re.search(r"推导.*可转换|可转换", clause)
                and p.role == "output"
            ):
                frm = f"promote({others[0]}, {others[1]})" if len(others) >= 2 else others[0]
                found[("cast", p.name)] = {
                    "id": f"cast-{p.name}",
                    "kind": "castable",
                    "params": [frm],
                    "to": p.name,
                    "source": src,
                }
            elif "推导" in clause and "一致" in clause and p.role == "output" and len(others) >= 2:
                frm = f"promote({others[0]}, {others[1]})"
                found[("isp", p.name)] = {
                    "id": f"{p.name}-is-promote",
                    "kind": "same_dtype",
                    "params": [p.name, frm],
                    "source": src,
                }
            elif "数据类型" in clause and "推导" in clause:
                found[("promo", frozenset(pair))] = {
                    "id": "promotable",
                    "kind": "promotable",
                    "params": pair,
                    "source": src,
                }
            elif "数据类型" in clause and "一致" in clause:
                found[("sd", frozenset(pair))] = {
                    "id": "dtype-same",
                    "kind": "same_dtype",
                    "params": pair,
                    "source": src,
                }
    ids: dict[str, int] = {}
    out = []
    for c in found.values():
        n = ids[str(c["id"])] = ids.get(str(c["id"]), 0) + 1
        if n > 1:
            c["id"] = f"{c['id']}-{n}"
        out.append(c)
    return out


def _inplace(page: DocPage, itf: Interface) -> list[str]:
    other = next(
        (i for i in page.interfaces if op_key(i.op) == op_key("aclnnInplace" + itf.op[5:])), None
    )
    if other is None:
        return []
    base = {p.name for p in itf.params}
    tensor = next((p.name for p in other.params if p.kind == "tensor" and p.name not in base), TODO)
    inp = tensor[:-3] if tensor.endswith("Ref") and tensor[:-3] in base else TODO
    output = next((p.name for p in itf.params if p.role == "output"), TODO)
    return [
        "",
        "inplace:",
        f"  op: {other.op}",
        f"  name: {snake(other.op)}",
        f"  tensor: {tensor}",
        f"  input: {inp}",
        f"  output: {output}",
        f"  source: {_q(page.name + ' 函数原型 ' + other.op + 'GetWorkspaceSize')}",
    ]
