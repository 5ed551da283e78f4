"""The verdicts a case can get, and their groups: defined here once for the runner, the CLI,
the expectations, the pytest plugin and every report."""

from __future__ import annotations

# deviation: a failure the spec records as a known difference of the real library (its
# `deviations:`), which the expectations turn into a non-failing verdict of its own.
VERDICTS = ("pass", "fail", "error", "crash", "timeout", "skip", "xfail", "xpass", "deviation")
BROKEN = ("fail", "error", "crash", "timeout")  # the case really failed
FAILING = (*BROKEN, "xpass")  # counted as failures (xpass fails a --strict run)
ERRORS = ("error", "crash", "timeout")  # the case could not be judged (JUnit <error>)
EXPLAINED = ("xfail", "deviation")  # failed as the expectations or the spec say
