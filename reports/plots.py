"""Error-distribution plots as inline SVG, computed here (the HTML report draws nothing itself).

One small histogram per (op, output dtype): how many cases had their max ULP error in each bin,
failing cases stacked in red on top of the others. Negative cases and cases that compared no
element are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
from typing import Any

from ..conformance.judge.result import Result, as_result
from .run import BROKEN, NEGATIVE, column, column_order, num, or_, stats_of
from .ulpnote import small_value_notes

# (upper bound inclusive, label); the first bin is exactly zero.
BINS = ((0.0, "0"), (0.5, "≤½"), (1.0, "≤1"), (2.0, "≤2"), (4.0, "≤4"), (16.0, "≤16"),
        (256.0, "≤256"), (math.inf, ">256"))  # fmt: skip
SPECIAL = "NaN/∞"  # a NaN or infinity in the wrong place
LABELS = [label for _, label in BINS] + [SPECIAL]

W, H = 300, 132
PAD_L, PAD_R, PAD_T, PAD_B = 6, 6, 16, 30


@dataclass
class Panel:
    op: str
    dtype: str
    counts: list[int]  # per bin, all cases
    failing: list[int]  # per bin, failing cases
    cases: int
    max_ulp: float | None
    svg: str
    note: str = ""  # why the max ULP means nothing, when it comes from the small-value domain
    small: int = 0  # cases whose max ULP comes from the small-value domain


def bin_of(stats: dict[str, Any]) -> int | None:
    """Index into LABELS for a case's statistics; None when nothing was compared."""
    if (stats.get("nan_mismatches") or 0) + (stats.get("inf_mismatches") or 0) > 0:
        return len(BINS)
    if not stats.get("compared"):
        return None
    ulp = num(stats.get("max_ulp"))
    if ulp is None or math.isnan(ulp):
        return None
    for i, (upper, _) in enumerate(BINS):
        if ulp <= upper:
            return i
    return len(BINS) - 1


@dataclass
class _Group:
    counts: list[int]
    failing: list[int]
    cases: int = 0
    worst: float | None = None
    noted: int = 0  # cases whose max ULP comes from the small-value domain
    note_ulp: float = -math.inf  # the largest such max ULP, and the first note at it
    note: str = ""


class PanelTally:
    """The histograms' counts, gathered one record at a time (`add`): memory bounded by the
    (op, output dtype) pairs, not by the cases."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], _Group] = {}

    def add(self, rec: Result | dict[str, Any]) -> None:
        rec = as_result(rec)
        col = column(rec)
        if col == NEGATIVE:
            return
        st = stats_of(rec)
        b = bin_of(st)
        if b is None:
            return
        key = (str(or_(rec.op, "?")), col)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = _Group([0] * len(LABELS), [0] * len(LABELS))
        g.cases += 1
        g.counts[b] += 1
        g.failing[b] += rec.verdict in BROKEN
        u = st.get("max_ulp")
        if u is not None and not math.isnan(u) and (g.worst is None or u > g.worst):
            g.worst = u
        small = small_value_notes(rec)
        if small:
            top = max(small, key=lambda n: n.max_ulp)
            g.noted += 1
            if top.max_ulp > g.note_ulp:
                g.note_ulp, g.note = top.max_ulp, top.short()

    def result(self) -> list[Panel]:
        panels = []
        for op in sorted({op for op, _ in self.groups}):
            for col in column_order({c for o, c in self.groups if o == op}):
                g = self.groups[(op, col)]
                # the panel's max ULP comes from a case whose max ULP is a small value's
                note = g.note if g.worst is not None and g.note_ulp == g.worst else ""
                panels.append(
                    Panel(
                        op,
                        col,
                        g.counts,
                        g.failing,
                        g.cases,
                        g.worst,
                        histogram_svg(g.counts, g.failing, f"{op} {col}"),
                        note,
                        g.noted,
                    )
                )
        return panels


def ulp_panels(records: Iterable[Result]) -> list[Panel]:
    tally = PanelTally()
    for rec in records:
        tally.add(rec)
    return tally.result()


def histogram_svg(counts: list[int], failing: list[int], title: str) -> str:
    n = len(counts)
    top = max(counts) or 1
    plot_w = W - PAD_L - PAD_R
    plot_h = H - PAD_T - PAD_B
    slot = plot_w / n
    bar = slot * 0.72
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" class="hist" '
        f'role="img" aria-label="max ULP histogram, {escape(title)}">',
        f'<line x1="{PAD_L}" y1="{PAD_T + plot_h}" x2="{W - PAD_R}" y2="{PAD_T + plot_h}" '
        'class="axis"/>',
    ]
    for i, (c, f) in enumerate(zip(counts, failing, strict=True)):
        x = PAD_L + i * slot + (slot - bar) / 2
        label = LABELS[i]
        cx = x + bar / 2
        if c:
            h = max(1.5, plot_h * c / top)
            hf = plot_h * f / top if f else 0.0
            y = PAD_T + plot_h - h
            tip = f"{label} ulp: {c} case{'s' if c != 1 else ''}"
            tip += f", {f} failing" if f else ""
            special = " special" if i == len(BINS) else ""
            parts.append(
                f"<g><title>{escape(tip)}</title>"
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h - hf:.1f}" '
                f'class="ok{special}" rx="1.5"/>'
            )
            if f:
                parts.append(
                    f'<rect x="{x:.1f}" y="{PAD_T + plot_h - hf:.1f}" width="{bar:.1f}" '
                    f'height="{hf:.1f}" class="bad" rx="1.5"/>'
                )
            parts.append(f'<text x="{cx:.1f}" y="{y - 3:.1f}" class="count">{c}</text></g>')
        parts.append(f'<text x="{cx:.1f}" y="{H - PAD_B + 13}" class="bin">{escape(label)}</text>')
    parts.append(f'<text x="{W / 2:.0f}" y="{H - 4}" class="xlabel">max ULP error per case</text>')
    parts.append("</svg>")
    return "".join(parts)
