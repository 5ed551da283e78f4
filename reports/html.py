"""The HTML report: one self-contained file (inline CSS, JS and SVG; nothing is fetched).

The page is rendered by the jinja2 template templates/report.html.j2. Everything small is drawn
here, server-side: header, matrix, clause coverage, error histograms. The case list can be large
(50,000 cases), so the cases go into the page as compact JSON in a
<script type="application/json"> block (strings interned into tables, per-case data the page
does not show dropped, details only for cases that did not pass: reports.casetable) and
templates/report.js draws one page of it at a time. Every case that did not pass is listed; of
a huge run's passing cases, those with the largest errors (casetable.PASS_ROWS), and the page
says how many it leaves out. The records are read once, into a reports.digest.Digest.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from ..conformance.judge.result import Result
from . import plots
from .casetable import FIELDS, PASS_ROWS, REASON_LIMIT, WORST_LIMIT, case_payload
from .coverage import FLAGGED, Coverage
from .digest import Digest, digest_of
from .output import write_atomic
from .run import (
    BROKEN,
    EXPLAINED,
    FAILING,
    HELP,
    NEGATIVE,
    ORDER,
    column_order,
    fmt,
    fmt_seconds,
    grid,
    pass_rate,
)
from .ulpnote import MEANING, fmt_ulp

__all__ = ["FIELDS", "PASS_ROWS", "REASON_LIMIT", "WORST_LIMIT", "case_payload", "render_html",
           "write_html", "matrix_view", "id_html", "script_json", "environment"]  # fmt: skip

TEMPLATES = Path(__file__).resolve().parent / "templates"


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


# -- the page ---------------------------------------------------------------------------------


def matrix_view(records: Iterable[Result] | dict) -> dict[str, Any]:
    """Rows (op, product) x dtype columns, each cell with counts, pass rate and a colour class.
    `records`: the records, or their grid (reports.run.grid)."""
    g = records if isinstance(records, dict) else grid(records)
    cols = column_order({c for _, _, c in g})
    rows = []
    for op in sorted({o for o, _, _ in g}):
        prods = sorted({p for o, p, _ in g if o == op})
        for i, prod in enumerate(prods):
            cells = [_cell(g.get((op, prod, c))) for c in cols]
            total = sum((g.get((op, prod, c), Counter()) for c in cols), Counter())
            rows.append(
                {
                    "op": op,
                    "product": prod,
                    "first": i == 0,
                    "span": len(prods),
                    "cells": cells,
                    "total": _cell(total),
                }
            )
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
    return {
        "total": sum(c.values()),
        "pass": c["pass"],
        "bad": bad,
        "cls": cls,
        "tip": tip,
        "rate": rate,
        "dev": c["deviation"],
    }


def _page(
    records: Any,
    meta: dict[str, Any] | None = None,
    *,
    coverage: Coverage | None = None,
    title: str = "aclnn conformance report",
) -> Iterator[str]:
    d: Digest = digest_of(records, coverage=coverage is None, universe=(meta or {}).get("clauses"))
    if d.cases is None:
        raise ValueError("render_html needs a Digest built with cases=True")
    info = d.run_info(meta)
    if coverage is None:
        coverage = d.coverage()
    verdicts = [(v, d.verdicts[v]) for v in ORDER if d.verdicts[v]]
    payload = d.cases.payload()
    broken = sum(d.verdicts[v] for v in BROKEN)
    others = [f"{d.verdicts[v]} {v}" for v in ("skip", *EXPLAINED) if d.verdicts[v]]
    omitted = payload["omitted"]
    listed = (
        f"The list holds every case that did not pass and {d.verdicts['pass'] - omitted.get('pass', 0):,} "
        f"of the {d.verdicts['pass']:,} passing cases (those with the largest max ULP)"
        + (
            f" and {d.verdicts['skip'] - omitted.get('skip', 0):,} of the {d.verdicts['skip']:,} "
            "skipped ones"
            if omitted.get("skip")
            else ""
        )
        + "; the counts, the matrix, the coverage and the histograms count every case."
        if omitted
        else ""
    )
    return (
        environment()
        .get_template("report.html.j2")
        .generate(
            title=title,
            info=info,
            summary=d,
            verdicts=verdicts,
            order=ORDER,
            failed=d.failed,
            broken=broken,
            matrix=matrix_view(d.grid()),
            coverage=coverage,
            cov_totals=coverage.totals(),
            flagged=FLAGGED,
            panels=d.ulp_panels(),
            bins=plots.LABELS,
            failing_clauses=d.failing_clauses.most_common(12),
            data=script_json(payload),
            listed=listed,
            css=(TEMPLATES / "report.css").read_text("utf-8"),
            js=(TEMPLATES / "report.js").read_text("utf-8"),
            default_failing=d.failed > 0,
            help=HELP,
            ulp_meaning=MEANING,
            status_others=", ".join(others),
        )
    )


def render_html(
    records: Any,
    meta: dict[str, Any] | None = None,
    *,
    coverage: Coverage | None = None,
    title: str = "aclnn conformance report",
) -> str:
    """The page of `records` (a list, a Stream or a Digest built with cases=True)."""
    return "".join(_page(records, meta, coverage=coverage, title=title))


def write_html(path: str | Path, records: Any, meta=None, **kwargs) -> Path:
    """Write the page to `path` (a temporary file renamed once whole)."""
    return write_atomic(path, _page(records, meta, **kwargs))
