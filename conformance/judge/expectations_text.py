"""Rewriting an expectations file as text, so that --update-expectations keeps what people wrote:
the comments, the order, and the exact text of every entry that stays. Dropped entries are cut
out together with the comment lines just above them; new entries are appended after the last
entry, in the file's own indentation. A file in another layout (flow style, entries not last)
is written anew, its leading comment block kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..files import safeio
from ..spec.yamlpos import MAX_BYTES, YamlError
from ..spec.yamlpos import load as load_yaml

HEADER = "# Expectations (see README, 'Expectations'); rewritten by --update-expectations.\n"


def _dump_entry(entry: Any, backend: str | None, indent: str) -> list[str]:
    data = {k: v for k, v in entry.to_yaml().items() if not (k == "backend" and v == backend)}
    text = yaml.safe_dump([data], sort_keys=False, allow_unicode=True, width=100)
    return [indent + line + "\n" for line in text.splitlines()]


def _fresh(lines: list[str], entries: list[Any], backend: str | None) -> str:
    head = []
    for line in lines:
        if not line.strip().startswith("#"):
            break
        head.append(line)
    doc: dict[str, Any] = {"format": 1}
    if backend:
        doc["backend"] = backend
    out = "".join(head) or HEADER
    out += yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    if not entries:
        return out + "entries: []\n"
    return out + "entries:\n" + "".join(ln for e in entries for ln in _dump_entry(e, backend, ""))


def _is_comment(line: str) -> bool:
    s = line.strip()
    return not s or s.startswith("#")


def rewrite(path: str | Path, entries: list[Any], backend: str | None) -> str:
    """The new text of the file at `path` holding exactly `entries` (Entry objects whose
    `line` is their line in that file, or 0 for new ones)."""
    if not entries:
        return (
            _fresh([], [], backend)
            if not Path(path).exists()
            else _fresh(safeio.read_text(path, MAX_BYTES).splitlines(keepends=True), [], backend)
        )
    try:
        lines = safeio.read_text(path, MAX_BYTES).splitlines(keepends=True)
        doc = load_yaml(path)
    except (OSError, UnicodeDecodeError, YamlError):
        return _fresh([], entries, backend)
    data = doc.data if isinstance(doc.data, dict) else {}
    raw = data.get("entries")
    if not isinstance(raw, list) or not raw or list(data)[-1] != "entries":
        return _fresh(lines, entries, backend)
    starts = [doc.line(("entries", i)) - 1 for i in range(len(raw))]  # 0-based
    if starts[0] <= doc.line(("entries",)) - 1 or any(
        not lines[s].lstrip().startswith("-") for s in starts
    ):
        return _fresh(lines, entries, backend)  # flow style: no block to cut
    end = len(lines)
    while end > starts[-1] + 1 and _is_comment(lines[end - 1]):
        end -= 1  # trailing comments stay at the end of the file
    blocks = []  # (first line incl. comments above, start, stop) of each entry
    for i, s in enumerate(starts):
        first = s
        while first > (starts[i - 1] + 1 if i else 0) and lines[first - 1].strip().startswith("#"):
            first -= 1
        blocks.append([first, s, end])
    for i in range(len(blocks) - 1):
        blocks[i][2] = blocks[i + 1][0]
    keep_lines = {e.line - 1 for e in entries if e.line}
    out = lines[: blocks[0][0]]
    for first, s, stop in blocks:
        if s in keep_lines:
            out.extend(lines[first:stop])
    indent = lines[starts[0]][: len(lines[starts[0]]) - len(lines[starts[0]].lstrip())]
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    for e in entries:
        if not e.line:
            out.extend(_dump_entry(e, backend, indent))
    out.extend(lines[end:])
    return "".join(out)
