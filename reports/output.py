"""Writing a report: into a temporary file beside it, renamed over the target only once whole.

A full disk or a kill mid-write leaves the previous report (or none), never a truncated one, and
no temporary file behind. Text that cannot be encoded (a lone surrogate that escaped cleaning)
is written as a backslash escape instead of failing the whole report.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable
from pathlib import Path


def write_atomic(path: str | Path, text: str | Iterable[str], encoding: str = "utf-8") -> Path:
    """Write `text` (a string, or pieces of it) to `path` atomically; parent folders are made.
    Raises OSError naming `path` when it cannot be written (the target is then untouched)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        with open(fd, "w", encoding=encoding, errors="backslashreplace", newline="") as f:
            for piece in [text] if isinstance(text, str) else text:
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OSError(exc.errno, exc.strerror, str(p)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return p
