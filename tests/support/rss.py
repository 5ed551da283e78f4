"""Peak resident memory of the current process, for tests that measure a child process.

`getrusage(RUSAGE_SELF).ru_maxrss` is the wrong figure in a child started from a large process
(a pytest-xdist worker that ran big cases): Linux carries the parent's resident size at fork
over into the child's ru_maxrss through exec. VmHWM in /proc/self/status belongs to the memory
map the process has now, so it starts afresh at exec.
"""

from __future__ import annotations

import resource


def peak_kib() -> int:
    """Peak resident set size of this process in KiB (VmHWM; ru_maxrss where /proc is absent)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
