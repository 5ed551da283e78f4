"""Error-distribution plots as inline SVG, computed here (the HTML report draws nothing itself).

One small histogram per (op, output dtype): how many cases had their max ULP error in each bin,
failing cases stacked in red on top of the others. Negative cases and cases that compared no
element are left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any

from reports.model import BROKEN, NEGATIVE, column, column_order, num, stats_of
from reports.ulpnote import small_value_notes

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


def ulp_panels(records: list[dict[str, Any]]) -> list[Panel]:
    groups: dict[tuple[str, str], list[tuple[int, bool, float | None]]] = {}
    notes: dict[tuple[str, str], list[tuple[float, str]]] = {}  # (max ULP, note) per case noted
    for rec in records:
        col = column(rec)
        if col == NEGATIVE:
            continue
        st = stats_of(rec)
        b = bin_of(st)
        if b is None:
            continue
        bad = rec.get("verdict") in BROKEN
        key = (str(rec.get("op", "?")), col)
        groups.setdefault(key, []).append((b, bad, st.get("max_ulp")))
        small = small_value_notes(rec)
        if small:
            top = max(small, key=lambda n: n.max_ulp)
            notes.setdefault(key, []).append((top.max_ulp, top.short()))
    panels = []
    ops = sorted({op for op, _ in groups})
    for op in ops:
        for col in column_order({c for o, c in groups if o == op}):
            items = groups[(op, col)]
            counts = [0] * len(LABELS)
            failing = [0] * len(LABELS)
            for b, bad, _ in items:
                counts[b] += 1
                failing[b] += bad
            ulps = [u for _, _, u in items if u is not None and not math.isnan(u)]
            worst = max(ulps) if ulps else None
            noted = notes.get((op, col), [])
            # the panel's max ULP comes from a case whose max ULP is a small value's
            note = next((text for u, text in noted if u == worst), "")
            panels.append(Panel(op, col, counts, failing, len(items), worst,
                                histogram_svg(counts, failing, f"{op} {col}"), note,
                                len(noted)))  # fmt: skip
    return panels


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
            parts.append(f'<g><title>{escape(tip)}</title>'
                         f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h - hf:.1f}" '
                         f'class="ok{special}" rx="1.5"/>')  # fmt: skip
            if f:
                parts.append(f'<rect x="{x:.1f}" y="{PAD_T + plot_h - hf:.1f}" width="{bar:.1f}" '
                             f'height="{hf:.1f}" class="bad" rx="1.5"/>')  # fmt: skip
            parts.append(f'<text x="{cx:.1f}" y="{y - 3:.1f}" class="count">{c}</text></g>')
        parts.append(f'<text x="{cx:.1f}" y="{H - PAD_B + 13}" class="bin">{escape(label)}</text>')
    parts.append(f'<text x="{W / 2:.0f}" y="{H - 4}" class="xlabel">max ULP error per case</text>')
    parts.append("</svg>")
    return "".join(parts)
