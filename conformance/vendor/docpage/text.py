"""Plain-text doc pages (copied from the vendor's web site): headings are lines of their own,
parameters are `name(type, 计算输入): ...` lines, product notes `- P1、P2: 数据类型支持...` lines
under the parameter they refine, and the status codes `返回161001(ACLNN_...): ...` text."""

from __future__ import annotations

import re

from .page import (
    DocPage,
    DocParam,
    Interface,
    StatusRow,
    auto_cast_extras,
    castable_target,
    match_product,
    norm_c_type,
    override_statements,
    product_list,
    prototypes,
    rank_bounds,
    role_of,
    status_params,
    stray_names,
    supported_list,
)

PRODUCT_HEADINGS = ("支持的产品型号", "产品支持情况")
END_HEADINGS = (
    "接口原型",
    "函数原型",
    "功能描述",
    "功能说明",
    "约束与限制",
    "约束说明",
    "调用示例",
)
_PARAM = re.compile(
    r"^\s*(?:[•·\-*]\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*[(（]([^,，()（）]*?)\s*[,，]\s*([^)）]*?)\s*[)）]\s*[:：]\s*(.*)$"
)
_PRODUCT_NOTE = re.compile(r"^\s*[-•·*]\s*([^:：()（）]+?)\s*[:：]\s*(.*)$")
_CODE = re.compile(r"(\d{6})\s*[(（]\s*(ACLNN_[A-Z_]+)\s*[)）]\s*[:：]?")
_ITEM = re.compile(r"(?:^|(?<=[\s:：。;；]))\d{1,2}[.．、]\s*(?=\D)")


def parse_text(path: str, text: str) -> DocPage:
    lines = text.split("\n")
    interfaces = prototypes(text)
    heads = {i.op for i in interfaces} | {i.op + "GetWorkspaceSize" for i in interfaces}
    title = next((ln.strip() for ln in lines if re.fullmatch(r"\s*aclnn\w+\s*", ln)), "")
    page = DocPage(path, "text", title, (), {}, interfaces=interfaces)
    _products(page, lines)
    for itf in interfaces:
        start, end = _section(lines, itf.op + "GetWorkspaceSize", heads)
        itf.section_line = start + 1
        _params(page, itf, lines, start, end)
        itf.status_rows = _status(page, lines, start, end, itf)
        if itf.status_rows is None:
            page.notes.append(
                (
                    itf.section_line,
                    f"{itf.op}: no status-code table readable (返回值 "
                    "shows none); status codes not compared",
                )
            )
    page.formula = _formula(lines, heads)
    return page


def _bare(line: str) -> str:
    return re.sub(r"^[\s•·*-]+", "", line)


def _is_heading(line: str, heads: set[str]) -> bool:
    s = line.strip()
    return s in heads or s in END_HEADINGS or s in PRODUCT_HEADINGS


def _section(lines: list[str], head: str, heads: set[str]) -> tuple[int, int]:
    start = next((i for i, ln in enumerate(lines) if ln.strip() == head), None)
    if start is None:
        return 0, len(lines)
    end = next(
        (j for j in range(start + 1, len(lines)) if _is_heading(lines[j], heads)), len(lines)
    )
    return start, end


def _products(page: DocPage, lines: list[str]) -> None:
    start = next((i for i, ln in enumerate(lines) if ln.strip() in PRODUCT_HEADINGS), None)
    if start is None:
        page.notes.append((1, "no product section (支持的产品型号) found"))
        return
    page.products_line = start + 1
    ids: list[str] = []
    for j in range(start + 1, len(lines)):
        s = lines[j].strip()
        if s in END_HEADINGS:
            break
        name = re.sub(r"^[-•·*]\s*", "", s)
        if not name:
            continue
        pid, planned = match_product(name.split("：")[0].split(":")[0])
        if pid is None:
            page.notes.append((j + 1, f"product {name!r} is not in specs/products.yaml"))
        elif planned:
            page.notes.append((j + 1, f"{pid} is a planned product (products.yaml); not compared"))
        elif "不支持" in name:
            page.unsupported += (pid,)
        elif pid not in ids:
            ids.append(pid)
            page.product_lines[pid] = j + 1
    page.products = tuple(ids)


def _params(page: DocPage, itf: Interface, lines: list[str], start: int, end: int) -> None:
    names = [p.name for p in itf.params]
    seen: set[str] = set()
    cur: DocParam | None = None
    for j in range(start, end):
        s = lines[j]
        if _bare(s).startswith("返回值"):
            break
        m = _PARAM.match(s)
        if m and m.group(1) in names:
            if m.group(1) in seen:  # a repeated description: keep the first
                cur = None
                continue
            seen.add(m.group(1))
            cur = itf.param(m.group(1))
            assert cur is not None
            _describe(page, cur, norm_c_type(m.group(2)), role_of(m.group(3)), m.group(4), j + 1)
            continue
        n = _PRODUCT_NOTE.match(s)
        if n and cur is not None:
            ids, unknown = product_list(n.group(1))
            if ids and not unknown:
                cur.overrides += override_statements(n.group(2), names, tuple(ids), j + 1)
                for o in cur.overrides:
                    o.params = o.params or (cur.name,)
                continue
        if cur is not None and s.strip():
            cur.text += " " + s.strip()
            _scan(cur)


def _describe(page: DocPage, p: DocParam, desc_type: str, role: str, text: str, line: int) -> None:
    p.desc_type, p.role, p.text, p.desc_line = desc_type, role, text.strip(), line
    _scan(p)
    base = re.sub(r"\bconst\b|\s", "", p.c_type)
    if desc_type and re.sub(r"\bconst\b|\s", "", desc_type) != base:
        page.notes.append(
            (
                line,
                f"{p.name}: the description says {desc_type}, the prototype "
                f"{p.c_type}; the prototype is compared",
            )
        )


def _scan(p: DocParam) -> None:
    p.base = supported_list(p.text) if p.base is None else p.base
    p.extras = p.extras or auto_cast_extras(p.text)
    p.castable_to = p.castable_to or castable_target(p.text)
    if p.max_rank is None:
        p.min_rank, p.max_rank = rank_bounds(p.text)


def _status(
    page: DocPage, lines: list[str], start: int, end: int, itf: Interface
) -> list[StatusRow] | None:
    ret = next((j for j in range(start, end) if _bare(lines[j]).startswith("返回值")), None)
    if ret is None:
        return None
    names = [p.name for p in itf.params]
    rows: list[StatusRow] = []
    for j in range(ret, end):
        hits = list(_CODE.finditer(lines[j]))
        for k, m in enumerate(hits):
            body = lines[j][m.end() : hits[k + 1].start() if k + 1 < len(hits) else None]
            body = re.sub(r"\s*返回\s*$", "", body)
            items = [t.strip() for t in _ITEM.split(body) if t.strip()] or [body.strip()]
            for item in items:
                rows.append(
                    StatusRow(int(m.group(1)), m.group(2), item, j + 1, status_params(item, names))
                )
    for r in rows:
        for w in stray_names(r.text, names):
            page.notes.append((r.line, f"status row {r.code} names {w}, which is no parameter"))
    return rows or None


def _formula(lines: list[str], heads: set[str]) -> list[str]:
    start = next((i for i, ln in enumerate(lines) if "计算公式" in ln), None)
    if start is None:
        return []
    out = []
    for j in range(start, min(start + 12, len(lines))):
        if j > start and _is_heading(lines[j], heads):
            break
        if lines[j].strip():
            out.append(lines[j].strip())
    return out
