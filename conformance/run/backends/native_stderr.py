"""What a native library writes to the process's stderr during one call, kept off the terminal.

PyTorch's C++ warnings (TORCH_WARN: "An output with one or more elements was resized ...")
reach file descriptor 2 directly when an operator is called through its overload object, not
Python's `warnings`; a default run printed a hundred such lines between its progress and its
summary. A backend wraps the library call in `captured()` and records the text with the case
(the record's `message`: the backend's own words) instead.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

LIMIT = 2000  # characters of captured text kept per call


@dataclass
class Captured:
    text: str = ""


_sink: list[int] = []  # one temporary file per process, reused by every call


@contextmanager
def captured() -> Iterator[Captured]:
    """Redirect fd 2 to a temporary file for the block; the text lands in the yielded record.
    Where fd 2 cannot be redirected (closed, not a file descriptor), nothing is captured."""
    got = Captured()
    try:
        sys.stderr.flush()
        if not _sink:
            fd, path = tempfile.mkstemp(prefix="aclnn-conform-stderr-")
            os.unlink(path)  # the descriptor stays open: a file no one else can see
            _sink.append(fd)
        sink = _sink[0]
        os.lseek(sink, 0, os.SEEK_SET)
        os.ftruncate(sink, 0)
        saved = os.dup(2)
        os.dup2(sink, 2)
    except (OSError, ValueError):
        yield got
        return
    try:
        yield got
    finally:
        with suppress(OSError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        size = os.lseek(sink, 0, os.SEEK_END)
        if size:
            os.lseek(sink, 0, os.SEEK_SET)
            got.text = os.read(sink, min(size, 4 * LIMIT)).decode("utf-8", "replace")[:LIMIT]
