"""A vendor doc page of an aclnn operator, read into one record (`DocPage`).

Two formats are read: the Markdown pages of hicann/ops-nn (`<op>/docs/aclnn*.md`: HTML tables
for the parameters and the status codes, product notes in `<term>` lines; docpage_md.py) and
plain-text pages copied from the vendor's web site (headings on lines of their own, parameters
as `name(type, 计算输入): ...` lines; docpage_text.py). Both give the same record: the products,
and per interface (one per `aclnnXxxGetWorkspaceSize` prototype) its parameters in C-signature
order with C types, roles, dtypes per product and ranks, and the rows of the status-code table.
Nothing here knows an operator: everything comes from the page and from specs/*.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ...acl import dtypes as dtypes_mod
from ...spec.tables import planned_products, products


class DocError(ValueError):
    """A page that cannot be read as an aclnn operator page (missing, not text, no signature)."""


@dataclass
class StatusRow:
    code: int  # 161001, 161002, ...
    name: str  # ACLNN_ERR_PARAM_NULLPTR, ... ("" when the page gives only the number)
    text: str  # the condition, as the page words it
    line: int
    params: tuple[str, ...] = ()  # parameters of the interface the condition names


@dataclass
class Override:
    """A product note: on `products`, `params` (None: not named) support only / not `dtypes`."""

    products: tuple[str, ...]
    params: tuple[str, ...] | None
    dtypes: tuple[str, ...]
    negate: bool  # True: "不支持" (these are removed); False: "支持" (only these)
    line: int


@dataclass
class DocParam:
    name: str
    c_type: str  # from the GetWorkspaceSize prototype, normalised ("const aclTensor*")
    line: int  # line of the prototype parameter
    role: str = ""  # input | output | inout, from the parameter description ("" unknown)
    desc_type: str = ""  # the type the parameter description writes (may lack const)
    desc_line: int = 0
    text: str = ""  # description and usage notes, whitespace collapsed
    base: list[tuple[str, frozenset[str] | None]] | None = None  # dtype, products it is limited to
    extras: tuple[str, ...] = ()  # dtypes "supported through automatic cast" on every product
    overrides: list[Override] = field(default_factory=list)
    dtypes: dict[str, tuple[str, ...]] | None = None  # product -> dtypes (resolved; None: no list)
    dtype_lines: dict[str, int] = field(default_factory=dict)  # product -> line of its list
    max_rank: int | None = None
    min_rank: int | None = None
    castable_to: str = ""  # "可转换为FLOAT": a dtype rule instead of a list

    @property
    def kind(self) -> str:
        return c_kind(self.c_type)


@dataclass
class Interface:
    op: str  # aclnnXxx (the prototype's name without GetWorkspaceSize)
    line: int
    params: list[DocParam]
    status_rows: list[StatusRow] | None = None  # None: the page has no readable status table
    section_line: int = 0

    def param(self, name: str) -> DocParam | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass
class DocPage:
    path: str
    format: str  # markdown | text
    title: str
    products: tuple[str, ...]  # ids of specs/products.yaml the page says are supported
    product_lines: dict[str, int]
    unsupported: tuple[str, ...] = ()  # ids the page says are not supported
    interfaces: list[Interface] = field(default_factory=list)
    formula: list[str] = field(default_factory=list)  # the formula lines, as written
    notes: list[tuple[int, str]] = field(default_factory=list)  # (line, what is odd in the page)
    products_line: int = 1

    @property
    def name(self) -> str:
        return Path(self.path).name

    def interface(self, op: str) -> Interface | None:
        key = op_key(op)
        return next((i for i in self.interfaces if op_key(i.op) == key), None)


# -- shared vocabulary ------------------------------------------------------------------------

ROLE_WORDS = (("输入/输出", "inout"), ("计算输出", "output"), ("计算输入", "input"),
              ("出参", "output"), ("入参", "input"), ("输出", "output"), ("输入", "input"))  # fmt: skip
_PROTO = re.compile(r"aclnnStatus\s+(aclnn[A-Za-z0-9_]+?)GetWorkspaceSize\s*\(([^)]*)\)", re.S)
_TAIL_PARAMS = {"workspaceSize", "executor"}


def op_key(name: str) -> str:
    k = name.strip().lower().replace("_", "")
    return k[5:] if k.startswith("aclnn") else k


def norm_c_type(text: str) -> str:
    """'const aclTensor *' -> 'const aclTensor*'."""
    t = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*(\*+)\s*", r"\1", t)


def c_kind(c_type: str) -> str:
    """The spec kind of a C type (docs/spec-format.md "params"), or "" for one it has none for."""
    base = re.sub(r"\bconst\b|\*", "", c_type).strip()
    return {
        "aclTensor": "tensor",
        "aclScalar": "scalar",
        "bool": "bool",
        "char": "string",
        "int64_t": "int",
        "double": "float",
        "float": "float",  # a C float by value: a float parameter with c_type: float
        "aclIntArray": "int_array",
        "aclFloatArray": "float_array",
        "aclBoolArray": "bool_array",
        "aclTensorList": "tensor_list",
        "aclScalarList": "scalar_list",
    }.get(base, "")


def role_of(text: str) -> str:
    for word, role in ROLE_WORDS:
        if word in text:
            return role
    return ""


def line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def prototypes(text: str) -> list[Interface]:
    """One Interface per `aclnnStatus aclnnXxxGetWorkspaceSize(...)` prototype (first of each)."""
    out: list[Interface] = []
    for m in _PROTO.finditer(text):
        if any(i.op == m.group(1) for i in out):
            continue
        params: list[DocParam] = []
        pos = m.start(2)
        for raw in m.group(2).split(","):
            decl = raw.strip()
            nm = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", decl)
            if nm and decl:
                line = line_at(text, pos + len(raw) - len(raw.lstrip()))
                params.append(DocParam(nm.group(1), norm_c_type(decl[: nm.start()]), line))
            pos += len(raw) + 1
        while params and params[-1].name in _TAIL_PARAMS:
            params.pop()
        out.append(Interface(m.group(1), line_at(text, m.start()), params))
    return out


@cache
def _product_segments() -> tuple[tuple[str, frozenset[str], bool], ...]:
    rows = [(k, v, False) for k, v in products().items()]
    rows += [(k, v, True) for k, v in planned_products().items()]
    out = []
    for pid, info, planned in rows:
        title = re.sub(r"\s*\([^()]*\)\s*$", "", str(info.get("title", "")))
        out.append((pid, frozenset(_segments(title)), planned))
    return tuple(out)


def _segments(name: str) -> list[str]:
    t = re.sub(r"</?term>|\s|[。.；;,，:：]+$", "", name)
    return [s for s in t.split("/") if s]


def match_product(name: str) -> tuple[str | None, bool]:
    """(products.yaml id, planned?) of a product name as a page writes it; (None, False) if none."""
    segs = set(_segments(name))
    for pid, known, planned in _product_segments():
        if segs & known:
            return pid, planned
    return None, False


def product_list(text: str) -> tuple[list[str], list[str]]:
    """Ids of the products named in `text` (separated by 、), and the names no id matches."""
    ids, unknown = [], []
    for part in re.split(r"[、]", re.sub(r"</?term>", "", text)):
        part = part.strip(" -•*\t")
        if not part:
            continue
        pid, planned = match_product(part)
        if pid and not planned:
            ids.append(pid)
        elif not planned:
            unknown.append(part)
    return ids, unknown


@cache
def _dtype_regex() -> re.Pattern[str]:
    t = dtypes_mod.tables()
    names = [n for n in t.names() if n != "UNDEFINED"] + list(t.aliases)
    alt = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    return re.compile(
        rf"(?<![A-Za-z0-9_])({alt})(?![A-Za-z0-9_])(\s*[(（]\s*仅([^)）]*?)支持\s*[)）])?"
    )


def canonical_dtype(name: str) -> str:
    aliases = dtypes_mod.tables().aliases
    return aliases.get(name.upper(), name.upper())


def dtype_tokens(text: str) -> list[tuple[str, frozenset[str] | None]]:
    """The dtype names in `text`, canonical, each with the products a "(仅X支持)" limits it to."""
    out: list[tuple[str, frozenset[str] | None]] = []
    for m in _dtype_regex().finditer(text):
        only = frozenset(product_list(m.group(3))[0]) if m.group(3) else None
        name = canonical_dtype(m.group(1))
        if all(name != d for d, _ in out):
            out.append((name, only))
    return out


def supported_list(text: str) -> list[tuple[str, frozenset[str] | None]] | None:
    """The list after "数据类型支持" up to the end of its clause; None if the text has none."""
    m = re.search(r"数据类型支持", text)
    if not m:
        return None
    depth, end = 0, len(text)
    for i in range(m.end(), len(text)):
        ch = text[i]
        depth += ch in "(（"
        depth -= ch in ")）"
        if depth <= 0 and ch in "，,。；;":
            end = i
            break
    clause = text[m.end() : end]
    if re.match(r"\s*(可转换|能转换)", clause):  # "可转换为FLOAT的类型": a rule, not a list
        return None
    return dtype_tokens(clause) or None


def auto_cast_extras(text: str) -> tuple[str, ...]:
    m = re.search(r"其他数据类型\s*[(（]([^)）]*)[)）]\s*通过自动cast", text)
    return tuple(d for d, _ in dtype_tokens(m.group(1))) if m else ()


def castable_target(text: str) -> str:
    m = re.search(r"可转换为\s*([A-Z][A-Z0-9]*)", text)
    if not m or not dtype_tokens(m.group(1)):
        return ""
    return canonical_dtype(m.group(1))


def rank_bounds(text: str) -> tuple[int | None, int | None]:
    """(min, max) rank from "0-8" / "数据维度支持0-8维" / "不支持8维以上"; (None, None) if none."""
    t = text.strip()
    m = re.fullmatch(r"(\d+)\s*[-~～]\s*(\d+)", t) or re.search(
        r"(\d+)\s*[-~～至到]\s*(\d+)\s*维", t
    )
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.search(r"不支持\s*(\d+)\s*维以上|不(?:能)?超过\s*(\d+)\s*维|最大\s*(\d+)\s*维", t)
    if m:
        return None, int(next(g for g in m.groups() if g))
    return None, None


def override_statements(
    text: str, names: list[str], products_: tuple[str, ...], line: int
) -> list[Override]:
    """The product note after the product names: "P1、P2的数据类型支持A、B。" statements, and
    "不支持A数据类型。" (A removed)."""
    out = []
    for stmt in re.split(r"[。]", text):
        m = re.search(r"不支持(.+?)数据类型", stmt)  # "不支持BFLOAT16数据类型": the dtypes removed
        if m and dtype_tokens(m.group(1)):
            named = tuple(
                n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", stmt[: m.start()]) if n in names
            )
            found = tuple(d for d, _ in dtype_tokens(m.group(1)))
            out.append(Override(products_, named or None, found, True, line))
            continue
        m = re.search(r"数据类型(不?)支持", stmt)
        head, tail = (stmt[: m.start()], stmt[m.end() :]) if m else ("", stmt)
        found = tuple(d for d, _ in dtype_tokens(tail))
        if not found or (m is None and re.search(r"[\u4e00-\u9fff]", tail)):
            continue
        named = tuple(n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", head) if n in names)
        negate = bool(m and m.group(1))
        out.append(Override(products_, named or None, found, negate, line))
    return out


def status_params(text: str, names: list[str]) -> tuple[str, ...]:
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)
    return tuple(dict.fromkeys(w for w in words if w in names))


def stray_names(text: str, names: list[str]) -> list[str]:
    """camelCase words of a status row that are no parameter of the interface (a typo in the doc)."""
    words = re.findall(r"\b[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b", text)
    return [w for w in dict.fromkeys(words) if w not in names]


def resolve(page: DocPage) -> None:
    """Fill each parameter's `dtypes` (product -> dtypes) from its list, limits and notes."""
    for itf in page.interfaces:
        tensors = [p.name for p in itf.params if p.base is not None and p.kind == "tensor"]
        for p in itf.params:
            if p.base is None and not p.overrides:
                continue
            table: dict[str, tuple[str, ...]] = {}
            for prod in page.products:
                mine = [o for o in p.overrides if prod in o.products]
                if p.base is not None:
                    cur = [d for d, only in p.base if only is None or prod in only]
                else:
                    cur = []
                for o in mine:
                    cur = [d for d in cur if d not in o.dtypes] if o.negate else list(o.dtypes)
                    p.dtype_lines[prod] = o.line
                if p.base is None and not mine:
                    continue
                p.dtype_lines.setdefault(prod, p.desc_line)
                table[prod] = tuple(dict.fromkeys((*cur, *p.extras)))
            p.dtypes = table or None
        _note_ambiguous(page, itf, tensors)


def _note_ambiguous(page: DocPage, itf: Interface, tensors: list[str]) -> None:
    for o in {id(o): o for p in itf.params for o in p.overrides}.values():
        if o.params is None:
            lists = {tuple(d for d, _ in (itf.param(n).base or [])) for n in tensors}  # type: ignore[union-attr]
            if len(lists) > 1:
                page.notes.append(
                    (
                        o.line,
                        f"product note names no parameter; read as applying "
                        f"to every tensor with a dtype list: {', '.join(tensors)}",
                    )
                )
