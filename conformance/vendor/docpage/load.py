"""Reading a vendor doc page from a file: the format (Markdown or plain text) picks the parser,
and both give the same record (conformance/vendor/docpage/page.py)."""

from __future__ import annotations

import re
from pathlib import Path

from ...files import safeio
from .markdown import parse_markdown
from .page import DocError, DocPage, prototypes, resolve
from .text import parse_text

MAX_PAGE_BYTES = 8 << 20  # a vendor doc page is tens of KB


def load_page(path: str | Path) -> DocPage:
    """Read a doc page of either format; DocError with one clear message on any problem."""
    p = Path(path)
    try:
        raw = safeio.read_bytes(p, MAX_PAGE_BYTES)  # a FIFO or a device is refused, not read
    except FileNotFoundError:
        raise DocError(f"{path}: no such file") from None
    except OSError as exc:
        raise DocError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DocError(f"{path}: not a UTF-8 text page") from None
    text = text.replace("\r\n", "\n").replace("\u00a0", " ")
    if not prototypes(text):
        raise DocError(
            f"{path}: no 'aclnnStatus aclnnXxxGetWorkspaceSize(...)' signature found; "
            "is this an aclnn operator page?"
        )
    if re.search(r"^#{1,6}\s|<table", text, re.M):
        page = parse_markdown(str(path), text)
    else:
        page = parse_text(str(path), text)
    resolve(page)
    return page
