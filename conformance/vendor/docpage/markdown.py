"""Markdown doc pages of hicann/ops-nn: `#` headings, products as `- <term>P</term>：支持` lines,
one `## aclnnXxxGetWorkspaceSize` section per interface holding an HTML parameter table
(参数名 / 输入/输出 / 使用说明 / 数据类型 / 维度(shape) ... columns), `<term>` product notes under
it, and an HTML status table (返回码 / 错误码 / 描述, with rowspans)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from .page import (
    DocPage,
    DocParam,
    Interface,
    StatusRow,
    auto_cast_extras,
    castable_target,
    dtype_tokens,
    match_product,
    norm_c_type,
    override_statements,
    product_list,
    prototypes,
    rank_bounds,
    role_of,
    status_params,
    stray_names,
)

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass
class Cell:
    text: str
    line: int
    header: bool = False
    rowspan: int = 1
    colspan: int = 1


@dataclass
class _Table:
    rows: list[list[Cell]] = field(default_factory=list)
    start: int = 0
    end: int = 0


class _Tables(HTMLParser):
    """Every <table> of a piece of HTML as rows of cells (text with <li>/<br> as new lines)."""

    def __init__(self, offset: int):
        super().__init__(convert_charrefs=True)
        self._base, self.tables, self._open = offset, [], []
        self._cell: Cell | None = None

    def _line(self) -> int:
        return self.getpos()[0] + self._base

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._open.append(_Table(start=self._line()))
        elif tag == "tr" and self._open:
            self._open[-1].rows.append([])
        elif tag in ("td", "th") and self._open and self._open[-1].rows:
            span = [
                int(a.get(k) or 1) if str(a.get(k) or 1).isdigit() else 1
                for k in ("rowspan", "colspan")
            ]
            self._cell = Cell("", self._line(), tag == "th", max(span[0], 1), max(span[1], 1))
            self._open[-1].rows[-1].append(self._cell)
        elif tag in ("li", "br", "p") and self._cell is not None:
            self._cell.text += "\n"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._cell = None
        elif tag == "table" and self._open:
            t = self._open.pop()
            t.end = self._line()
            self.tables.append(t)

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.text += data


def _grid(t: _Table) -> list[list[Cell]]:
    """Rows with rowspan/colspan expanded, so that column i is the i-th header's everywhere."""
    out: list[list[Cell]] = []
    carry: dict[int, tuple[Cell, int]] = {}
    for row in t.rows:
        cells: list[Cell] = []
        it = iter(row)
        col = 0
        while True:
            if col in carry:
                cell, left = carry.pop(col)
                if left > 1:
                    carry[col] = (cell, left - 1)
            else:
                cell = next(it, None)  # type: ignore[assignment]
                if cell is None:
                    break
                for k in range(cell.colspan):
                    if cell.rowspan > 1:
                        carry[col + k] = (cell, cell.rowspan - 1)
            cells.append(cell)
            col += 1
        out.append(cells)
    return out


def _clean(text: str) -> str:
    return re.sub(r"[ \t]+", " ", text.replace("`", "")).strip()


def parse_markdown(path: str, text: str) -> DocPage:
    lines = text.split("\n")
    heads = _headings(lines)
    title = next((t for lvl, t, _ in heads if lvl == 1), "")
    interfaces = prototypes(text)
    page = DocPage(path, "markdown", title, (), {}, interfaces=interfaces)
    _products(page, lines, heads)
    for itf in interfaces:
        start, end = _section(heads, itf.op + "GetWorkspaceSize", len(lines))
        itf.section_line = start + 1
        chunk = "\n".join(lines[start:end])
        parser = _Tables(start)
        parser.feed(chunk)
        parser.close()
        tables = sorted(parser.tables, key=lambda t: t.start)
        ptab = next((t for t in tables if _header(t, "参数名")), None)
        stab = next((t for t in tables if _header(t, "错误码") or _header(t, "返回码")), None)
        if ptab is None:
            page.notes.append((start + 1, f"{itf.op}: no parameter table (参数名) found"))
        else:
            _params(page, itf, ptab)
            _notes(itf, lines, start, end, tables)
        itf.status_rows = _status(page, stab, itf) if stab else None
        if stab is None:
            page.notes.append(
                (start + 1, f"{itf.op}: no status-code table found; status codes not compared")
            )
    page.formula = _formula(lines, heads)
    return page


def _headings(lines: list[str]) -> list[tuple[int, str, int]]:
    out, fence = [], False
    for i, ln in enumerate(lines):
        if ln.lstrip().startswith("```"):
            fence = not fence
            continue
        m = None if fence else _HEADING.match(ln)
        if m:
            out.append((len(m.group(1)), m.group(2), i))
    return out


def _section(heads: list[tuple[int, str, int]], title: str, n: int) -> tuple[int, int]:
    for k, (lvl, t, i) in enumerate(heads):
        if t == title:
            nxt = next((j for lv, _, j in heads[k + 1 :] if lv <= lvl), n)
            return i, nxt
    return 0, n


def _header(t: _Table, word: str) -> bool:
    return bool(t.rows) and any(word in c.text for c in t.rows[0])


def _products(page: DocPage, lines: list[str], heads: list[tuple[int, str, int]]) -> None:
    title = next((t for _, t, _ in heads if "产品支持" in t or "支持的产品" in t), None)
    if title is None:
        page.notes.append((1, "no product section (产品支持情况) found"))
        return
    start, end = _section(heads, title, len(lines))
    page.products_line = start + 1
    ids: list[str] = []
    for j in range(start + 1, end):
        m = re.match(r"^\s*[-*]\s*(.*?)\s*[:：]\s*(.*)$", lines[j])
        if not m or "<term>" not in lines[j]:
            continue
        pid, planned = match_product(m.group(1))
        status = m.group(2).strip()
        if pid is None:
            page.notes.append((j + 1, f"product {_clean(m.group(1))!r} is not in products.yaml"))
        elif planned:
            if not status.startswith("不支持"):
                page.notes.append(
                    (j + 1, f"{pid} is a planned product (products.yaml); not compared")
                )
        elif status.startswith("不支持"):
            page.unsupported += (pid,)
        else:
            if status != "支持":
                page.notes.append((j + 1, f"{pid}: supported with a condition: {status}"))
            if pid not in ids:
                ids.append(pid)
                page.product_lines[pid] = j + 1
    page.products = tuple(ids)


def _params(page: DocPage, itf: Interface, t: _Table) -> None:
    grid = _grid(t)
    head = [_clean(c.text) for c in grid[0]]

    def col(*words: str) -> int | None:
        return next((i for i, h in enumerate(head) if any(w in h for w in words)), None)

    c_name, c_role, c_dtype = col("参数名"), col("输入/输出"), col("数据类型")
    c_rank = col("维度")
    texts = [i for i in (col("描述"), col("使用说明")) if i is not None]
    for row in grid[1:]:
        if c_name is None or c_name >= len(row):
            continue
        m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:[(（]([^)）]*)[)）])?", row[c_name].text)
        p = itf.param(m.group(1)) if m else None
        if p is None or p.desc_line:
            continue
        p.desc_line = row[c_name].line
        p.desc_type = norm_c_type(m.group(2) or "") if m else ""
        p.role = role_of(row[c_role].text) if c_role is not None and c_role < len(row) else ""
        p.text = " ".join(_clean(row[i].text) for i in texts if i < len(row))
        if c_dtype is not None and c_dtype < len(row):
            p.base = dtype_tokens(row[c_dtype].text) or None
        p.extras = auto_cast_extras(p.text)
        p.castable_to = castable_target(p.text)
        if c_rank is not None and c_rank < len(row):
            p.min_rank, p.max_rank = rank_bounds(_clean(row[c_rank].text))
        base = re.sub(r"\bconst\b|\s", "", p.c_type)
        if p.desc_type and re.sub(r"\bconst\b|\s", "", p.desc_type) != base:
            page.notes.append(
                (
                    p.desc_line,
                    f"{p.name}: the table says {p.desc_type}, the "
                    f"prototype {p.c_type}; the prototype is compared",
                )
            )
    for p in itf.params:
        if not p.desc_line:
            page.notes.append((t.start, f"{itf.op}: {p.name} has no row in the parameter table"))


def _notes(itf: Interface, lines: list[str], start: int, end: int, tables: list[_Table]) -> None:
    """`- <term>P1</term>、<term>P2</term>：...数据类型支持...` lines outside the tables."""
    names = [p.name for p in itf.params]
    inside = [(t.start, t.end) for t in tables]
    for j in range(start, end):
        ln = lines[j]
        if "<term>" not in ln or any(a <= j + 1 <= b for a, b in inside):
            continue
        m = re.match(r"^\s*[-*]\s*((?:<term>.*?</term>[、\s]*)+)\s*[:：]\s*(.*)$", ln)
        if not m:
            continue
        ids, _ = product_list(m.group(1))
        tensor_lists = [_listed(p) for p in itf.params if p.base and p.kind == "tensor"]
        for o in override_statements(_clean(m.group(2)), names, tuple(ids), j + 1):
            # a note naming no parameter is about the tensors' list: it also holds for a scalar
            # whose list is the same as a tensor's (a min and a max scalar listed like the tensors)
            targets = o.params or [
                p.name
                for p in itf.params
                if p.base and (p.kind == "tensor" or _listed(p) in tensor_lists)
            ]
            for n in targets:
                p = itf.param(n)
                if p is not None:
                    p.overrides.append(o)


def _listed(p: DocParam) -> tuple[str, ...]:
    """A parameter's own dtype list (without its product limits), for comparing lists."""
    return tuple(d for d, _ in (p.base or []))


def _status(page: DocPage, t: _Table, itf: Interface) -> list[StatusRow] | None:
    grid = _grid(t)
    head = [_clean(c.text) for c in grid[0]]
    c_code = next((i for i, h in enumerate(head) if "错误码" in h), None)
    c_name = next((i for i, h in enumerate(head) if "返回码" in h), None)
    c_text = next((i for i, h in enumerate(head) if "描述" in h), len(head) - 1)
    names = [p.name for p in itf.params]
    rows = []
    for row in grid[1:]:
        cells = [_clean(c.text) for c in row]
        code = next(
            (
                c
                for c in ([cells[c_code]] if c_code is not None and c_code < len(cells) else cells)
                if re.fullmatch(r"\d{5,6}", c)
            ),
            None,
        )
        if code is None or c_text >= len(cells):
            continue
        name = cells[c_name] if c_name is not None and c_name < len(cells) else ""
        body = cells[c_text]
        rows.append(StatusRow(int(code), name, body, row[c_text].line, status_params(body, names)))
        for w in stray_names(body, names):
            page.notes.append(
                (row[c_text].line, f"status row {code} names {w}, which is no parameter")
            )
    return rows or None


def _formula(lines: list[str], heads: list[tuple[int, str, int]]) -> list[str]:
    title = next((t for _, t, _ in heads if "功能说明" in t or "功能描述" in t), None)
    if title is None:
        return []
    start, end = _section(heads, title, len(lines))
    out, inside = [], False
    for j in range(start + 1, end):
        s = lines[j].strip()
        if s.startswith("$$"):
            inside = not inside
            continue
        if inside and s:
            out.append(s)
    return out[:40]
