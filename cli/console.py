"""Terminal output helpers shared by the commands: colour only on a tty, width-aware tables.

Widths are display widths: CJK text (the seeds' sources are Chinese) takes two columns a character.
"""

from __future__ import annotations

import os
import shutil
import sys
import unicodedata
from collections.abc import Sequence

import click

MIN_WIDTH = 60
MAX_WIDTH = 100


def color_enabled() -> bool:
    """Colour only when stdout is a terminal and NO_COLOR is not set."""
    if os.environ.get("NO_COLOR"):
        return False
    stream = sys.stdout  # click.get_text_stream is deprecated (Click 9); CliRunner swaps sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def style(text: str, **kwargs) -> str:
    """click.style(text, **kwargs) on a terminal, plain text otherwise."""
    return click.style(text, **kwargs) if color_enabled() else text


def heading(text: str) -> str:
    return style(text, bold=True)


def width() -> int:
    """Columns to lay out for: the terminal's, clamped to [60, 100]; 100 when not a terminal."""
    if not sys.stdout.isatty():
        return MAX_WIDTH
    cols = shutil.get_terminal_size((MAX_WIDTH, 24)).columns
    return max(MIN_WIDTH, min(MAX_WIDTH, cols))


def display_width(text: str) -> int:
    return sum(
        0
        if unicodedata.combining(ch)
        else 2
        if unicodedata.east_asian_width(ch) in ("W", "F")
        else 1
        for ch in text
    )


def pad(text: str, n: int) -> str:
    return text + " " * max(0, n - display_width(text))


def wrap(text: str, limit: int) -> list[str]:
    """Greedy wrap at spaces by display width; a word wider than `limit` is cut by characters."""
    limit = max(limit, 8)
    lines: list[str] = []
    cur = ""
    for word in str(text).split():
        cand = f"{cur} {word}" if cur else word
        if display_width(cand) <= limit:
            cur = cand
            continue
        if cur:
            lines.append(cur)
        while display_width(word) > limit:
            cut, acc = 0, 0
            for ch in word:
                acc += display_width(ch)
                if acc > limit:
                    break
                cut += 1
            lines.append(word[:cut])
            word = word[cut:]
        cur = word
    if cur or not lines:
        lines.append(cur)
    return lines


def field(label: str, text: str, indent: int = 2, label_width: int = 0, total: int = 0) -> str:
    """`label  text`, the text wrapped and aligned after the label."""
    total = total or width()
    head = " " * indent + pad(label, label_width) + (" " if label else "")
    body = wrap(text, total - display_width(head))
    return "\n".join(
        [head + body[0]] + [" " * display_width(head) + line for line in body[1:]]
    ).rstrip()


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    indent: int = 2,
    right: Sequence[int] = (),
    total: int = 0,
) -> list[str]:
    """Aligned columns; when too wide, the widest columns wrap (after commas, else at spaces)."""
    total = total or width()
    ncol = len(headers)
    cells = [[str(c) for c in r] for r in rows]
    widths = [
        max([display_width(headers[i])] + [display_width(r[i]) for r in cells]) for i in range(ncol)
    ]
    gap = 2
    avail = total - indent - gap * (ncol - 1)
    # Narrow the last column (free text) down to 24 columns first, then the widest one.
    last = ncol - 1
    while sum(widths) > avail:
        last_floor = max(display_width(headers[last]), 24)
        i = last if widths[last] > last_floor else max(range(ncol), key=lambda k: widths[k])
        if widths[i] <= max(display_width(headers[i]), 8):
            break
        widths[i] -= 1
    out = []
    hdr = (" " * gap).join(pad(h, widths[i]) for i, h in enumerate(headers)).rstrip()
    out.append(" " * indent + style(hdr, bold=True))
    for r in cells:
        wrapped = [_wrap_cell(r[i], widths[i]) for i in range(ncol)]
        for k in range(max(len(w) for w in wrapped)):
            parts = []
            for i in range(ncol):
                text = wrapped[i][k] if k < len(wrapped[i]) else ""
                if i in right:
                    parts.append(" " * max(0, widths[i] - display_width(text)) + text)
                else:
                    parts.append(pad(text, widths[i]))
            out.append((" " * indent + (" " * gap).join(parts)).rstrip())
    return out


def _wrap_cell(text: str, limit: int) -> list[str]:
    if display_width(text) <= limit:
        return [text]
    return wrap(text, limit)
