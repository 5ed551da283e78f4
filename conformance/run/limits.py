"""Bounds on the processes a run starts: a memory limit, and death with their parent.

An isolated backend's worker and an exec harness run code the suite does not trust to behave:
a leak or a 2^40-element allocation must cost that case (a MemoryError, or the process killed:
`error` or `crash`), not the machine. The limit is RLIMIT_DATA (the process's data: heap and
private writable mappings), not RLIMIT_AS: native libraries and runtimes (numba's LLVM, device
drivers, jax) reserve large address ranges they never touch, which RLIMIT_AS would count.

A child whose parent dies must not live on holding the caller's terminal and files: on Linux
each one asks the kernel for SIGKILL when its parent dies (PR_SET_PDEATHSIG); elsewhere this is
a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
# Default memory limit of one worker: this share of physical memory, split between the --jobs
# workers; never below MIN_MEMORY (a backend's runtime alone needs some hundred MB).
MEMORY_SHARE = 0.75
MIN_MEMORY = 2 << 30
NO_LIMIT = ("none", "off", "unlimited")


def physical_memory() -> int:
    """Bytes of physical memory (0 when it cannot be told)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def default_memory(jobs: int = 1) -> int:
    """The default memory limit of one isolated worker or exec harness."""
    total = physical_memory() or (8 << 30)
    return max(MIN_MEMORY, int(total * MEMORY_SHARE) // max(1, jobs))


def parse_memory(value: object) -> int | None:
    """A memory limit as bytes: None (or 'none', 'off', 'unlimited') for no limit, else an int
    or a size such as 512M, 4G, 1.5GiB (ValueError for anything else, with what to write)."""
    if value is None or isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value  # type: ignore[return-value]
    text = str(value).strip()
    if text.lower() in NO_LIMIT:
        return None
    s = text.upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(s[-1:] or "", 1)
    try:
        number = float(s[:-1] if scale != 1 else s)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number * scale >= 1 << 20):
        raise ValueError(f"{text!r}: expected a size of at least 1M such as 512M or 4G, or none")
    return int(number * scale)


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def die_with_parent(parent: int | None = None) -> None:
    """Ask for SIGKILL when this process's parent dies (Linux); if `parent` (its pid) is
    already gone, that is, this process was reparented before asking, exit now."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def limit_memory(limit: int | None) -> None:
    """Set this process's RLIMIT_DATA to `limit` bytes (None: unchanged); never above the
    hard limit it already has."""
    if limit is None:
        return
    try:
        import resource
    except ImportError:  # not a POSIX system
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    value = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (value, hard))


def child_limits(limit: int | None) -> Callable[[], None]:
    """The preexec_fn of a harness: the memory limit, and death with the process starting it."""
    parent = os.getpid()

    def apply() -> None:
        die_with_parent(parent)
        limit_memory(limit)

    return apply
