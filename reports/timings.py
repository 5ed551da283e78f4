"""Device timings and devices of a run, tallied one record at a time: which devices ran how many
cases, how many cases were timed, and the slowest by phase 2 (docs/timings.md).

A record of the aclnn backend carries `phase1_us` (GetWorkspaceSize, host time) and `phase2_us`
(the kernel: ACL events, or host time around the stream sync, says `phase2_clock`), medians of
`timed_runs` calls; a run over several devices says in `device` which one ran the case. The
JSON summary and the JUnit properties read them through `timing_of`.
"""

from __future__ import annotations

import heapq
import statistics
from collections import Counter
from typing import Any

from ..conformance.judge.result import Result

# the Result fields of a case's device and timing, in the order reports list them
TIMING_FIELDS = ("device", "phase1_us", "phase2_us", "phase2_clock", "timed_runs", "warmup_runs")
SLOWEST = 20  # cases listed by their phase 2 time


def timing_of(rec: Result) -> dict[str, Any]:
    """The device and timing fields a record has (those set)."""
    return {k: v for k in TIMING_FIELDS if (v := getattr(rec, k)) is not None}


class TimingTally:
    """Cases per device, the timed cases and their phase times (kept as numbers only: a float
    per timed case), and the SLOWEST cases by phase 2."""

    def __init__(self) -> None:
        self.per_device: Counter = Counter()
        self.moved = 0
        self.phase1: list[float] = []
        self.phase2: list[float] = []
        self._slow: list[tuple[float, str, dict[str, Any]]] = []

    def add(self, rec: Result) -> None:
        if rec.device is not None:
            self.per_device[int(rec.device)] += 1
        if rec.moved:
            self.moved += 1
        if isinstance(rec.phase1_us, int | float):
            self.phase1.append(float(rec.phase1_us))
        if isinstance(rec.phase2_us, int | float):
            t = float(rec.phase2_us)
            self.phase2.append(t)
            entry = (t, str(rec.id), {"id": str(rec.id), **timing_of(rec)})
            if len(self._slow) < SLOWEST:
                heapq.heappush(self._slow, entry)
            elif entry[:2] > self._slow[0][:2]:
                heapq.heapreplace(self._slow, entry)

    def __bool__(self) -> bool:
        return bool(self.per_device or self.phase1)

    def to_dict(self) -> dict[str, Any]:
        """{"devices": {id: cases}, "moved": n, "timed": n, "phase1_us"/"phase2_us": {median,
        max}, "slowest": [...]} (the JSON summary's "timings")."""

        def spread(xs: list[float]) -> dict[str, float] | None:
            return {"median": statistics.median(xs), "max": max(xs)} if xs else None

        return {
            "devices": {str(d): n for d, n in sorted(self.per_device.items())},
            "moved": self.moved,
            "timed": len(self.phase1),
            "phase1_us": spread(self.phase1),
            "phase2_us": spread(self.phase2),
            "slowest": [e[2] for e in sorted(self._slow, reverse=True)],
        }
