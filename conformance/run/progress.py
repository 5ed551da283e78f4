"""The run's progress on stderr: a bar on a terminal, a plain line every ~5 % elsewhere."""

from __future__ import annotations

import sys
import time

from ..judge.result import Result
from ..judge.verdicts import BROKEN


class Progress:
    """A one-line bar on a terminal; a plain line every ~5 % elsewhere (CI logs)."""

    def __init__(self, total: int, stream=sys.stderr, enabled: bool = True):
        self.total, self.stream, self.enabled = total, stream, enabled
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self.done = 0
        self.failed = 0
        self.t0 = time.perf_counter()
        self._next = 0

    def update(self, rec: Result) -> None:
        self.done += 1
        if rec.verdict in BROKEN:
            self.failed += 1
        if not self.enabled:
            return
        rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
        if self.tty:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            self.stream.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                f" failed {self.failed}  {rate:.0f} cases/s "
            )
            self.stream.flush()
        elif self.done >= self._next or self.done == self.total:
            self.stream.write(
                f"{self.done}/{self.total} cases, {self.failed} failed, {rate:.0f} cases/s\n"
            )
            self._next = self.done + max(1, self.total // 20)

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
