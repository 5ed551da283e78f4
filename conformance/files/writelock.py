"""One writer per results file: an exclusive lock on `RESULTS.lock` beside it, held by `run`
(with or without --resume) and `merge -o` from before they touch the file until they are done.

A second writer is refused at once (`LockedError`, one line naming the holder: pid, host, start
time, command). The lock is a POSIX record lock (fcntl.lockf): it belongs to the process, so it
ends with it (kill -9 included: a lock file left behind by a dead run locks nothing) and the
worker processes a run forks do not hold it. The holder's facts are written into the lock file
for the message; the file is removed when the lock is released.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import platform
import shlex
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

_HELD: dict[tuple[int, int], str] = {}  # (device, inode) of the lock files this process holds


class LockedError(Exception):
    """Another writer holds the results file; the message is one line for the user."""


@dataclass
class Holder:
    """Who holds a lock, as written into the lock file."""

    pid: int | None = None
    host: str = ""
    started: str = ""
    command: str = ""

    def describe(self) -> str:
        if self.pid is None:
            return "another process (it has not yet said which)"
        text = f"pid {self.pid} on {self.host or '?'}"
        if self.started:
            text += f", started {self.started}"
        if self.command:
            text += f": {self.command[:200]}"
        return text


def lock_path(results: str | Path) -> Path:
    return Path(str(results) + ".lock")


def _read_holder(fd: int) -> Holder:
    with contextlib.suppress(OSError, ValueError, TypeError):
        data = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace") or "{}")
        return Holder(
            int(data["pid"]),
            str(data.get("host", "")),
            str(data.get("started", "")),
            str(data.get("command", "")),
        )
    return Holder()


class ResultsLock:
    """The exclusive lock of one results file. `acquire()` or raise LockedError; `release()`.

    `option`: how the user names the file (`--results`, `-o`), for the message."""

    def __init__(self, results: str | Path, option: str = "--results"):
        self.results = Path(results)
        self.path = lock_path(results)
        self.option = option
        self._fd: int | None = None
        self._key: tuple[int, int] | None = None

    def acquire(self) -> ResultsLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            if key in _HELD:  # POSIX locks do not exclude their own process
                os.close(fd)
                raise LockedError(
                    self._refusal(Holder(os.getpid(), platform.node(), "", _HELD[key]))
                )
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EAGAIN):
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise LockedError(self._refusal(holder)) from None
                if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                    # a file system without locks (some network mounts): go on unlocked
                    os.close(fd)
                    print(
                        f"warning: {self.path}: cannot lock ({exc.strerror}); another run "
                        f"writing {self.results} would not be noticed",
                        file=sys.stderr,
                    )
                    return self
                os.close(fd)
                raise
            try:  # the previous holder may have removed the file between our open and lock
                now = os.stat(self.path)
            except FileNotFoundError:
                now = None
            if now is None or (now.st_dev, now.st_ino) != key:
                os.close(fd)
                continue
            break
        self._fd, self._key = fd, key
        command = shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])
        _HELD[key] = command
        info = {
            "pid": os.getpid(),
            "host": platform.node(),
            "command": command,
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        with contextlib.suppress(OSError):  # the facts are for the message only
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode("utf-8", "backslashreplace") + b"\n", 0)
        return self

    def _refusal(self, holder: Holder) -> str:
        return (
            f"{self.option} {self.results}: being written by another aclnn-conform run "
            f"({holder.describe()}); wait for it to end, or give this one another "
            f"{self.option} FILE (the lock is {self.path}; it ends with its process)"
        )

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()  # while still held: a waiting run then locks a fresh file
        os.close(self._fd)  # closing releases the lock
        _HELD.pop(self._key, None)  # type: ignore[arg-type]
        self._fd = self._key = None

    def __enter__(self) -> ResultsLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()
