"""The verdicts a case can get, and their groups: defined here once for the runner, the CLI,
the expectations, the pytest plugin and every report."""

from __future__ import annotations

# deviation: a failure the spec records as a known difference of the real library (its
# `deviations:`), which the expectations turn into a non-failing verdict of its own.
# nondeterministic: the same call, run again (--repeat N), gave other output bits or another
# status: a race or a read of uninitialised memory in the backend.
VERDICTS = ("pass", "fail", "error", "crash", "timeout", "skip", "xfail", "xpass", "deviation",
            "nondeterministic")  # fmt: skip
BROKEN = ("fail", "nondeterministic", "error", "crash", "timeout")  # the case really failed
FAILING = (*BROKEN, "xpass")  # counted as failures (xpass fails a --strict run)
ERRORS = ("error", "crash", "timeout")  # the case could not be judged (JUnit <error>)
EXPLAINED = ("xfail", "deviation")  # failed as the expectations or the spec say
