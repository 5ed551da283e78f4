"""Every difference between an op spec and a vendor doc page, and which spec deviation explains it.

A spec records a difference it keeps on purpose as a deviation with a `doc:` field: one matcher
or a list of them, `{kind, params, products, dtypes, codes, page}`. A difference is explained
when its kind is `kind` and every field the matcher gives lists the difference's parameter
(the spec's name, or the doc's for a renamed one), product, dtype or status code; `page` is a
glob on the doc file's name. A field the difference has no value for does not match.

Kinds: op-name, product-missing-in-spec, product-missing-in-doc, param-missing-in-spec,
param-missing-in-doc, param-renamed, param-order, c-type, role, dtype-missing-in-spec,
dtype-missing-in-doc, max-rank, status-missing-in-spec, status-missing-in-doc, check-missing
(a row of the doc's status table names a parameter no check of that kind covers).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

from ..acl.dtypes import tables as dtype_tables
from ..spec.model import OpSpec, Param
from ..spec.tables import products as known_products
from ..spec.yamlpos import Located
from .docpage.page import DocPage, DocParam, Interface, canonical_dtype, norm_c_type

KINDS = ("op-name", "product-missing-in-spec", "product-missing-in-doc", "param-missing-in-spec",
         "param-missing-in-doc", "param-renamed", "param-order", "c-type", "role",
         "dtype-missing-in-spec", "dtype-missing-in-doc", "max-rank", "status-missing-in-spec",
         "status-missing-in-doc", "check-missing")  # fmt: skip

#: what a doc page lists as the dtype of a parameter passed by value (int64_t, double, bool)
BY_VALUE_DTYPES = {"int": ("INT64",), "float": ("DOUBLE", "FLOAT"), "bool": ("BOOL",)}


class CheckDocError(ValueError):
    """A spec/page pair that cannot be compared (no common op, a malformed `doc:` matcher)."""


@dataclass
class Matcher:
    deviation: str
    kind: str
    line: int
    params: tuple[str, ...] | None = None
    products: tuple[str, ...] | None = None
    dtypes: tuple[str, ...] | None = None
    codes: tuple[int, ...] | None = None
    page: str | None = None
    used: bool = False

    def explains(self, d: Difference, page_name: str) -> bool:
        if d.kind != self.kind or (self.page and not fnmatch.fnmatch(page_name, self.page)):
            return False
        names = {n for n in (d.param, d.doc_param) if n}
        return all(
            want is None or (have and have & set(want))
            for want, have in (
                (self.params, names),
                (self.products, {d.product} - {None}),
                (self.dtypes, {d.dtype} - {None}),
                (self.codes, {d.code} - {None}),
            )
        )


@dataclass
class Difference:
    kind: str
    what: str  # what differs, in words
    doc_where: str  # FILE:LINE (section)
    spec_where: str  # FILE:LINE
    op: str = ""
    param: str | None = None
    doc_param: str | None = None
    product: str | None = None
    dtype: str | None = None
    code: int | None = None
    explained_by: str | None = None


@dataclass
class Report:
    spec: str
    spec_file: str
    page: str
    page_format: str
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unused: list[Matcher] = field(default_factory=list)

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if not d.explained_by]


def matchers(raw: Located) -> list[Matcher]:
    """The `doc:` matchers of a spec's deviations (CheckDocError on a bad value)."""
    out = []
    for i, dev in enumerate(raw.data.get("deviations") or []):
        doc = dev.get("doc") if isinstance(dev, dict) else None
        if doc is None:
            continue
        for k, m in enumerate(doc if isinstance(doc, list) else [doc]):
            path = (
                ("deviations", i, "doc", k) if isinstance(doc, list) else ("deviations", i, "doc")
            )
            out.append(_matcher(str(dev.get("id")), m, raw, path))
    return out


def _matcher(dev_id: str, m: Any, raw: Located, path: tuple[Any, ...]) -> Matcher:
    where = f"{raw.file}:{raw.line(path)}"
    if not isinstance(m, dict) or m.get("kind") not in KINDS:
        raise CheckDocError(
            f"{where}: deviation {dev_id}: doc needs a kind, one of {', '.join(KINDS)}"
        )
    lists = {
        k: tuple(v if isinstance(v, list) else [v])
        for k, v in m.items()
        if k != "kind" and k != "page"
    }
    bad = [p for p in lists.get("products", ()) if p not in known_products()]
    if bad:
        raise CheckDocError(f"{where}: deviation {dev_id}: unknown product {bad[0]!r}")
    dts = tuple(canonical_dtype(str(d)) for d in lists.get("dtypes", ()))
    bad = [d for d in dts if d not in dtype_tables().by_name]
    if bad:
        raise CheckDocError(f"{where}: deviation {dev_id}: unknown dtype {bad[0]!r}")
    return Matcher(
        dev_id,
        m["kind"],
        raw.line(path),
        tuple(map(str, lists["params"])) if "params" in lists else None,
        lists.get("products"),
        dts or None,
        tuple(int(c) for c in lists["codes"]) if "codes" in lists else None,
        m.get("page"),
    )


def compare(spec: OpSpec, raw: Located, page: DocPage, spec_file: str) -> Report:
    """Compare `spec` (and its in-place variants the page also documents) with `page`."""
    rep = Report(spec.name, spec_file, page.path, page.format)
    w = _Where(page, raw, spec_file, rep)
    itf = page.interface(spec.op)
    if itf is None:
        if len(page.interfaces) != 1:
            ops = ", ".join(i.op for i in page.interfaces)
            raise CheckDocError(f"{page.path} documents {ops}, not {spec.op}")
        itf = page.interfaces[0]
        w.add("op-name", f"doc {itf.op}, spec {spec.op}", (itf.line, "函数原型"), ("op",), spec.op)
    _products(spec, page, w)
    for s, i in [(spec, itf)] + [(v, page.interface(v.op)) for v in spec.variants]:
        if i is not None:
            _interface(s, i, page, w)
    rep.notes += list(dict.fromkeys(f"{page.name}:{ln}: {text}" for ln, text in page.notes))
    ms = matchers(raw)
    for d in rep.differences:
        m = next((m for m in ms if m.explains(d, page.name)), None)
        if m is not None:
            m.used = True
            d.explained_by = m.deviation
    rep.unused = [
        m for m in ms if not m.used and (not m.page or fnmatch.fnmatch(page.name, m.page))
    ]
    return rep


class _Where:
    """Collects the differences, each with its place in the page and in the spec file."""

    def __init__(self, page: DocPage, raw: Located, spec_file: str, rep: Report):
        self.page, self.raw, self.file, self.rep = page, raw, spec_file, rep

    def add(
        self, kind: str, what: str, doc: tuple[int, str], spec: Any, op: str, **key: Any
    ) -> None:
        """`doc`: (line, section); `spec`: a path in the YAML, a line, or a parameter name."""
        if isinstance(spec, int):
            line = spec
        elif isinstance(spec, str):
            line = self._param_line(spec)
        else:
            line = self.raw.line(spec)
        where_doc = f"{self.page.name}:{doc[0]} ({doc[1]})"
        self.rep.differences.append(
            Difference(kind, what, where_doc, f"{self.file}:{line}", op, **key)
        )

    def _param_line(self, name: str) -> int:
        for i, p in enumerate(self.raw.data.get("params") or []):
            if isinstance(p, dict) and name in (p.get("name"), p.get("c_name")):
                return self.raw.line(("params", i))
        return self.raw.line(("params",))


def _products(spec: OpSpec, page: DocPage, w: _Where) -> None:
    for pid in page.products:
        if pid not in spec.products:
            line = page.product_lines.get(pid, page.products_line)
            what = f"{pid}: the doc lists it as supported, the spec does not"
            w.add(
                "product-missing-in-spec", what, (line, "产品"), ("products",), spec.op, product=pid
            )
    for pid in spec.products:
        if pid not in page.products:
            said = "says it is not supported" if pid in page.unsupported else "does not list it"
            what = f"{pid}: the spec lists it, the doc {said}"
            w.add(
                "product-missing-in-doc",
                what,
                (page.products_line, "产品"),
                ("products",),
                spec.op,
                product=pid,
            )


def _interface(spec: OpSpec, itf: Interface, page: DocPage, w: _Where) -> None:
    op = spec.op
    by_c = {(p.c_name or p.name): p for p in spec.params}
    doc_names = [p.name for p in itf.params]
    spec_names = list(by_c)
    pairs = [(dp, by_c[dp.name]) for dp in itf.params if dp.name in by_c]
    for i, dp in enumerate(itf.params):
        if dp.name in by_c:
            continue
        sn = spec_names[i] if i < len(spec_names) else None
        at = (dp.line, "函数原型")
        if sn is not None and sn not in doc_names:
            pairs.append((dp, by_c[sn]))
            what = f"parameter {i + 1}: doc {dp.name}, spec {sn}"
            w.add("param-renamed", what, at, sn, op, param=by_c[sn].name, doc_param=dp.name)
        else:
            what = f"{dp.name} ({dp.c_type}) is not in the spec"
            w.add("param-missing-in-spec", what, at, ("params",), op, param=dp.name)
    paired = {sp.name for _, sp in pairs}
    for sn, sp in by_c.items():
        if sp.name not in paired:
            what = f"{sn} is not in the doc's signature"
            w.add("param-missing-in-doc", what, (itf.line, "函数原型"), sn, op, param=sp.name)
    pairs.sort(key=lambda ps: doc_names.index(ps[0].name))
    spec_order = sorted(pairs, key=lambda ps: spec_names.index(ps[1].c_name or ps[1].name))
    for k, (dp, sp) in enumerate(pairs):
        if spec_order[k][1] is not sp:
            at = spec_order.index((dp, sp)) + 1
            what = f"{sp.name} is parameter {k + 1} of the doc's signature, {at} of the spec's"
            w.add("param-order", what, (dp.line, "函数原型"), sp.name, op, param=sp.name)
    side = _SpecSide(spec)
    for dp, sp in pairs:
        _param(spec, page, dp, sp, side, w)
    _status(spec, itf, pairs, side, w)


def _param(
    spec: OpSpec, page: DocPage, dp: DocParam, sp: Param, side: _SpecSide, w: _Where
) -> None:
    op, name = spec.op, sp.name
    if norm_c_type(sp.c_type) != dp.c_type:
        what = f"{name}: doc {dp.c_type!r}, spec {sp.c_type or '(none)'!r}"
        w.add("c-type", what, (dp.line, "函数原型"), name, op, param=name)
    if dp.role and "inout" not in (dp.role, sp.role) and dp.role != sp.role:
        what = f"{name}: doc {dp.role}, spec {sp.role}"
        w.add("role", what, (dp.desc_line, "参数说明"), name, op, param=name)
    table, line = side.dtypes.get(name, (None, side.first_line))
    if dp.dtypes is None:
        if table is not None and dp.kind == "tensor":
            w.rep.notes.append(
                f"{page.name}:{dp.desc_line}: {name}: the doc gives no dtype list; "
                "the spec's is not compared"
            )
    else:
        for prod in [p for p in spec.products if p in page.products]:
            doc_set = dp.dtypes.get(prod)
            if doc_set is None:
                continue
            have = table[0].get(prod, ()) if table else ()
            if sp.kind in BY_VALUE_DTYPES:  # int64_t / double / bool by value: the C type
                have = BY_VALUE_DTYPES[sp.kind]
            at = (dp.dtype_lines.get(prod, dp.desc_line), "参数说明")
            spec_at = table[1](prod) if table else line
            for dt in doc_set:
                if dt not in have:
                    what = f"{name} on {prod}: {dt} is in the doc's list, not in the spec's"
                    w.add(
                        "dtype-missing-in-spec",
                        what,
                        at,
                        spec_at,
                        op,
                        param=name,
                        product=prod,
                        dtype=dt,
                    )
            for dt in () if sp.is_number else have:
                if dt not in doc_set:
                    what = f"{name} on {prod}: {dt} is in the spec's list, not in the doc's"
                    w.add(
                        "dtype-missing-in-doc",
                        what,
                        at,
                        spec_at,
                        op,
                        param=name,
                        product=prod,
                        dtype=dt,
                    )
    have_rank = side.ranks.get(name)
    if dp.max_rank is not None and have_rank != dp.max_rank:
        spec_says = f"at most {have_rank}" if have_rank is not None else "no max_rank check"
        what = f"{name}: doc at most {dp.max_rank} dims, spec {spec_says}"
        w.add("max-rank", what, (dp.desc_line, "参数说明"), side.first_line, op, param=name)


class _SpecSide:
    """What the spec's checks say per parameter: dtype lists, max ranks, covered kinds, codes."""

    def __init__(self, spec: OpSpec):
        self.dtypes: dict[str, tuple[tuple[dict[str, tuple[str, ...]], Any], int]] = {}
        self.ranks: dict[str, int] = {}
        self.covered: dict[str, set[str]] = {}
        self.codes: dict[int, Any] = {}
        self.first_line = spec.checks[0].line if spec.checks else 1
        for c in spec.checks:
            if c.status:
                self.codes.setdefault(c.status, c)
            names = [t.param for t in c.terms if t.param] if c.terms else list(c.params)
            self.covered.setdefault(c.kind, set()).update(names)
            if c.kind == "castable" and c.to is not None and c.to.dtype:
                # a scalar's dtype rule: castable to a fixed dtype is its list ("数据类型需要是可
                # 转换为FLOAT的数据类型"), so the doc's dtype row is covered
                scalars = [n for n in names if spec.param(n).kind == "scalar"]
                self.covered.setdefault("dtype_in", set()).update(scalars)
            if c.kind == "max_rank" and c.max is not None:
                for n in names:
                    self.ranks[n] = min(self.ranks.get(n, c.max), c.max)
            if c.kind != "dtype_in":
                continue
            for n in names:
                if c.dtype_set:
                    table = {p: spec.dtypes_for(c.dtype_set, p) for p in spec.products}
                    self.dtypes.setdefault(
                        n, ((table, _set_path(c.dtype_set, spec.dtype_sets[c.dtype_set])), c.line)
                    )
                else:
                    fixed = {p: c.dtypes for p in spec.products}
                    self.dtypes.setdefault(n, ((fixed, lambda _p, ln=c.line: ln), c.line))
        self._implied(spec)

    def _implied(self, spec: OpSpec) -> None:
        """A tensor held to the dtype (shape) of a listed (rank-checked) one shares its list (rank):
        same_dtype / same_shape / shape_is_broadcast say as much as a dtype_in / max_rank check."""
        same = [
            [t.param for t in c.terms if t.param] if c.terms else list(c.params)
            for c in spec.checks
            if c.kind == "same_dtype"
        ]
        grew = True
        while grew:  # a chain (a = b, then b = listed c) passes the list along, in any order
            grew = False
            for names in same:
                src = next((n for n in names if n in self.dtypes), None)
                for n in names if src else ():
                    if n not in self.dtypes:
                        self.dtypes[n] = self.dtypes[src]  # type: ignore[index]
                        self.covered.setdefault("dtype_in", set()).add(n)
                        grew = True
        for c in spec.checks:
            names = [t.param for t in c.terms if t.param] if c.terms else list(c.params)
            ranked = [self.ranks[n] for n in (c.of or names) if n in self.ranks]
            whole = c.kind == "same_shape" or (c.of and len(ranked) == len(c.of))
            if c.kind in ("same_shape", "shape_is_broadcast") and ranked and whole:
                for n in names:
                    self.ranks.setdefault(n, max(ranked))
                    self.covered.setdefault("max_rank", set()).add(n)


def _set_path(name: str, keys: Any) -> Any:
    return lambda prod: ("dtype_sets", name, prod if prod in keys else "default")


def _row_kind(code: int, text: str) -> str | None:
    if code == 161001 or "空指针" in text:
        return "not_null"
    if "数据类型" in text and re.search(r"不在支持的范围|不支持", text):
        return "dtype_in"
    if re.search(r"维度大于|维度超过|超过\s*\d+\s*维|大于\s*\d+\s*维", text):
        return "max_rank"
    return None


def _status(
    spec: OpSpec, itf: Interface, pairs: list[tuple[DocParam, Param]], side: _SpecSide, w: _Where
) -> None:
    if itf.status_rows is None:
        return
    op = spec.op
    to_spec = {dp.name: sp.name for dp, sp in pairs}
    doc_codes: dict[int, int] = {}
    for r in itf.status_rows:
        doc_codes.setdefault(r.code, r.line)
        kind = _row_kind(r.code, r.text)
        for n in r.params if kind else ():
            sn = to_spec.get(n)
            if sn is not None and sn not in side.covered.get(kind or "", set()):
                what = f"{sn}: the doc's {r.code} row names it; no {kind} check of the spec does"
                w.add(
                    "check-missing",
                    what,
                    (r.line, "返回值"),
                    side.first_line,
                    op,
                    param=sn,
                    code=r.code,
                )
    for code, line in doc_codes.items():
        if code not in side.codes:
            what = f"{code}: in the doc's table; no check of the spec returns it"
            w.add("status-missing-in-spec", what, (line, "返回值"), side.first_line, op, code=code)
    for code, c in side.codes.items():
        if code not in doc_codes:
            what = f"{code}: check {c.id} returns it; the doc's table does not list it"
            w.add(
                "status-missing-in-doc", what, (itf.section_line, "返回值"), c.line, op, code=code
            )
