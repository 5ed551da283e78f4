"""The HTML report: one self-contained file (inline CSS, JS and SVG; nothing is fetched).

The page is rendered by the jinja2 template templates/report.html.j2. Everything small is drawn
here, server-side: header, matrix, clause coverage, error histograms. The case list can be large
(50,000 cases), so the cases go into the page as compact JSON in a
<script type="application/json"> block (strings interned into tables, per-case data the page
does not show dropped, details only for cases that did not pass) and templates/report.js draws
one page of it at a time.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from conformance import results as res
from reports import plots
from reports.coverage import FLAGGED, Coverage, clause_coverage
from reports.model import (
    BROKEN,
    EXPLAINED,
    FAILING,
    HELP,
    NEGATIVE,
    ORDER,
    STAT_KEYS,
    clip,
    column,
    column_order,
    dtype_tag,
    fmt,
    fmt_seconds,
    grid,
    num,
    pass_rate,
    run_info,
    short,
    sort_key,
    stats_of,
)
from reports.ulpnote import MEANING, fmt_ulp, policy_of, small_value_notes

TEMPLATES = Path(__file__).resolve().parent / "templates"
WORST_LIMIT = 10  # worst elements kept per output
REASON_LIMIT = 240  # characters of a reason in the case list (details keep 4,000)
FIELDS = ("id", "op", "product", "col", "verdict", "neg", "tag", "params", "clauses", "ulp",
          "rel", "abs", "es", "t", "reason", "replay", "detail")  # fmt: skip


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html", "j2"], default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["fmt"] = fmt
    env.filters["secs"] = fmt_seconds
    env.filters["ulp"] = fmt_ulp
    env.filters["idwrap"] = id_html
    return env


def id_html(case_id: Any) -> Markup:
    """A case id that breaks only after its `/` separators: each segment (with its `/`) in a
    span that never wraps, a <wbr> after it. templates/report.js does the same in the browser."""
    parts = str(case_id).split("/")
    segs = [p + "/" for p in parts[:-1]] + [parts[-1]]
    return Markup("<wbr>").join(Markup('<span class="idp">%s</span>') % escape(p) for p in segs)


def script_json(obj: Any) -> str:
    """JSON safe inside <script>: no `<` (so no `</script>` or `<!--`), compact."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _round(x: float | None) -> float | int | str | None:
    """4 significant digits, JSON-safe (inf/nan as strings)."""
    if x is None:
        return None
    if x != x or x in (float("inf"), float("-inf")):
        return fmt(x)
    if x == int(x) and abs(x) < 1e15:
        return int(x)
    return float(f"{x:.4g}")


def _clean(obj: Any) -> Any:
    """A JSON-safe copy: non-finite floats become strings."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return fmt(obj)
    return obj


class _Interner:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self._index: dict[str, int] = {}

    def __call__(self, value: Any) -> int:
        key = value if isinstance(value, str) else repr(value)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.items)
            self.items.append(value)
        return i


def case_payload(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The compact case table the page's script reads (see FIELDS)."""
    ops, products, cols, tags = _Interner(), _Interner(), _Interner(), _Interner()
    params, clause_names, clause_sets, replays = _Interner(), _Interner(), _Interner(), _Interner()
    details: list[dict[str, Any]] = []
    rows = []
    aclnn: dict[str, str] = {}
    for rec in sorted(records, key=sort_key):
        if rec.get("aclnn_op"):
            aclnn.setdefault(str(rec.get("op", "?")), str(rec["aclnn_op"]))
        cid = str(rec.get("id", ""))
        layouts = rec.get("layouts") or {}
        p = {name: [short(dtype)] + (
                [lay.get("shape"), lay.get("strides"), lay.get("offset"), lay.get("storage")]
                if (lay := layouts.get(name)) else [])
             for name, dtype in (rec.get("dtypes") or {}).items()}  # fmt: skip
        st = stats_of(rec)
        replay = str(rec.get("replay") or "")
        quoted = f"'{cid}'"
        template = replay.replace(quoted, "'{id}'", 1) if quoted in replay else replay
        verdict = rec.get("verdict", "error")
        detail = -1
        long_reason = len(str(rec.get("reason") or "")) > REASON_LIMIT
        if verdict != "pass" or rec.get("expectation") or long_reason or small_value_notes(rec):
            detail = len(details)
            details.append(_detail(rec))
        rows.append([
            cid, ops(rec.get("op", "?")), products(rec.get("product", "?")), cols(column(rec)),
            ORDER.index(verdict) if verdict in ORDER else 0,
            1 if rec.get("kind") == "negative" else 0, tags(dtype_tag(rec)), params(p),
            clause_sets([clause_names(c) for c in rec.get("clauses") or []]),
            _round(st["max_ulp"]), _round(st["max_rel"]), _round(st["max_abs"]),
            rec.get("expected_status"), _round(num((rec.get("durations") or {}).get("total"))),
            clip(rec.get("reason"), REASON_LIMIT), replays(template) if template else -1, detail,
        ])  # fmt: skip
    return {"fields": list(FIELDS), "verdicts": list(ORDER), "ops": ops.items,
            "products": products.items, "cols": cols.items, "tags": tags.items,
            "params": params.items, "clauses": clause_names.items, "clauseSets": clause_sets.items,
            "replays": replays.items, "details": details, "cases": rows,
            "aclnn": aclnn, "statKeys": list(STAT_KEYS)}  # fmt: skip


WORST_FIELDS = ("index", "expected", "actual", "abs_err", "rel_err", "ulp", "inputs")


def _detail(rec: dict[str, Any]) -> dict[str, Any]:
    """What the drill-down of a case that did not pass shows beyond its row (compact keys:
    st statuses, r full reason when the row's is cut, m backend message, c per output
    [statistics in STAT_KEYS order, worst elements in WORST_FIELDS order], d durations,
    x expectation, b verdict before the expectation, u per output: why its max ULP means
    nothing, where it comes from the small-value domain). A comparison's third item is its
    policy's [small_threshold, small_atol, dtype], so the page can mark small-value elements."""
    comps = {}
    for name, c in (rec.get("comparisons") or {}).items():
        comps[name] = _comparison(c.get("stats") or {}, c.get("worst") or [])
        comps[name].append(list(pol[1:] + pol[:1]) if (pol := policy_of(rec, name)) else None)
    if not comps and rec.get("stats"):
        comps["output"] = _comparison(rec["stats"], rec.get("worst") or [])
    out: dict[str, Any] = {
        "st": [rec.get("expected_status"), rec.get("oracle_status"), rec.get("actual_status")],
        "c": comps,
        "d": {k: _round(num(v)) for k, v in (rec.get("durations") or {}).items()},
    }
    reason = " ".join(str(rec.get("reason") or "").split())
    if len(reason) > REASON_LIMIT:
        out["r"] = clip(reason, 4000)
    if rec.get("message"):
        out["m"] = clip(rec["message"], 4000)
    if rec.get("expectation"):
        out["x"] = rec["expectation"]
    if rec.get("verdict_before_expectation"):
        out["b"] = rec["verdict_before_expectation"]
    notes = small_value_notes(rec)
    if notes:
        out["u"] = {n.output: n.long() for n in notes}
    return _clean(out)


def _comparison(stats: dict[str, Any], worst: list[dict[str, Any]]) -> list[Any]:
    return [[_round(num(stats.get(k))) for k in STAT_KEYS],
            [[w.get(f) for f in WORST_FIELDS] for w in worst[:WORST_LIMIT]]]  # fmt: skip


# -- the page ---------------------------------------------------------------------------------


def matrix_view(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows (op, product) x dtype columns, each cell with counts, pass rate and a colour class."""
    g = grid(records)
    cols = column_order({c for _, _, c in g})
    rows = []
    for op in sorted({o for o, _, _ in g}):
        prods = sorted({p for o, p, _ in g if o == op})
        for i, prod in enumerate(prods):
            cells = [_cell(g.get((op, prod, c))) for c in cols]
            total = sum((g.get((op, prod, c), Counter()) for c in cols), Counter())
            rows.append({"op": op, "product": prod, "first": i == 0, "span": len(prods),
                         "cells": cells, "total": _cell(total)})  # fmt: skip
    col_totals = [_cell(sum((v for k, v in g.items() if k[2] == c), Counter())) for c in cols]
    grand = _cell(sum(g.values(), Counter()))
    return {"cols": cols, "rows": rows, "totals": col_totals, "grand": grand, "negative": NEGATIVE}


def _cell(c: Counter | None) -> dict[str, Any] | None:
    if not c:
        return None
    rate = pass_rate(c)
    bad = sum(c[v] for v in FAILING)
    if bad == 0 and c["deviation"]:
        cls = "rdev"  # no failure, but documented deviations of the library
    elif rate is None:
        cls = "rskip"
    elif bad == 0:
        cls = "r100"
    else:
        cls = "r99" if rate >= 0.99 else "r90" if rate >= 0.9 else "r50" if rate >= 0.5 else "r0"
    tip = ", ".join(f"{c[v]} {v}" for v in ORDER if c[v])
    return {"total": sum(c.values()), "pass": c["pass"], "bad": bad, "cls": cls, "tip": tip,
            "rate": rate, "dev": c["deviation"]}  # fmt: skip


def render_html(
    records: list[dict[str, Any]],
    meta: dict[str, Any] | None = None,
    *,
    coverage: Coverage | None = None,
    title: str = "aclnn conformance report",
) -> str:
    info = run_info(records, meta)
    summary = res.summarise(records)
    if coverage is None:
        coverage = clause_coverage(records)
    verdicts = [(v, summary.verdicts[v]) for v in ORDER if summary.verdicts[v]]
    failing_clauses = summary.failing_clauses.most_common(12)
    payload = case_payload(records)
    broken = sum(summary.verdicts[v] for v in BROKEN)
    others = [f"{summary.verdicts[v]} {v}" for v in ("skip", *EXPLAINED) if summary.verdicts[v]]
    return environment().get_template("report.html.j2").render(
        title=title, info=info, summary=summary, verdicts=verdicts, order=ORDER,
        failed=summary.failed, broken=broken, matrix=matrix_view(records), coverage=coverage,
        cov_totals=coverage.totals(), flagged=FLAGGED, panels=plots.ulp_panels(records),
        bins=plots.LABELS, failing_clauses=failing_clauses, data=script_json(payload),
        css=(TEMPLATES / "report.css").read_text("utf-8"),
        js=(TEMPLATES / "report.js").read_text("utf-8"),
        default_failing=summary.failed > 0, help=HELP, ulp_meaning=MEANING,
        status_others=", ".join(others),
    )  # fmt: skip


def write_html(path: str | Path, records, meta=None, **kwargs) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_html(records, meta, **kwargs), encoding="utf-8")
    return p
