"""Opening a file the user named, bounded: the one way every reader of user input opens a file.

A path from a spec folder, a case directory, an option or a command's argument may name a FIFO
(reading it blocks forever), a device (`/dev/zero` never ends, `/dev/tty` waits for a human) or
a file far larger than its kind ever is. So every reader goes through `open_regular`:

1. the path is stat'ed first: anything but a regular file is refused, and so is a file above
   the caller's byte limit, before it is opened;
2. it is opened non-blocking (a FIFO swapped in after the stat cannot block the open) and
   checked again with fstat on the descriptor actually read;
3. reads stop at the limit: a file that grows while it is read raises instead of being read on.

The refusals are `RefusedFile`, an OSError whose `filename` and `strerror` say what and why, so
the CLI's one-line OSError message ("PATH: not a regular file (a FIFO)") and the readers' own
`except OSError` both handle them without knowing this module.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


class RefusedFile(OSError):
    """A path that is not a regular file, or a file larger than its reader allows."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def kind_of(mode: int) -> str:
    """What a file of st_mode `mode` is, in words ("a FIFO", "a directory", ...)."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a file"


def size_text(n: int, exact: bool = True) -> str:
    """A byte count for messages: 4294967296 -> '4.0 GiB (4294967296 bytes)', or '4.0 GiB'
    without `exact`."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}" + (f" ({n} bytes)" if exact else "")
    return f"{n} bytes" if exact else f"{n} B"


def _refuse(path: str | Path, why: str, code: int = errno.EINVAL) -> RefusedFile:
    return RefusedFile(code, why, str(path))


def _check(st: os.stat_result, path: str | Path, max_bytes: int | None) -> os.stat_result:
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, f"not a regular file ({kind_of(st.st_mode)})")
    if max_bytes is not None and st.st_size > max_bytes:
        raise _refuse(
            path,
            f"too large: {size_text(st.st_size)}, the limit is {size_text(max_bytes)}",
            errno.EFBIG,
        )
    return st


def check_regular(
    path: str | Path, max_bytes: int | None = None, follow_symlinks: bool = True
) -> os.stat_result:
    """The stat of `path`, when it is a regular file of at most `max_bytes` bytes (None: any
    size); RefusedFile otherwise, OSError when it cannot be stat'ed. Nothing is opened."""
    return _check(os.stat(path, follow_symlinks=follow_symlinks), path, max_bytes)


class _Capped(io.RawIOBase):
    """An open descriptor whose reads fail past `cap` bytes (a file growing while read)."""

    def __init__(self, fd: int, path: str, cap: int | None):
        self._fd, self._path, self._cap = fd, path, cap

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return os.lseek(self._fd, offset, whence)

    def tell(self) -> int:
        return os.lseek(self._fd, 0, os.SEEK_CUR)

    def readinto(self, buffer) -> int:  # type: ignore[override]
        want = len(buffer)
        if self._cap is not None:
            want = min(want, max(0, self._cap - self.tell()) + 1)
        n = os.readv(self._fd, [memoryview(buffer).cast("B")[:want]])
        if self._cap is not None and n and self.tell() > self._cap:
            raise _refuse(
                self._path,
                f"grew past the limit of {size_text(self._cap)} while being read",
                errno.EFBIG,
            )
        return n

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self._fd)
            finally:
                super().close()


def open_regular(
    path: str | Path, max_bytes: int | None = None, follow_symlinks: bool = True
) -> BinaryIO:
    """`path` opened for binary reading, when it is a regular file of at most `max_bytes` bytes
    (None: any size, still a regular file); reads past `max_bytes` raise RefusedFile.
    `follow_symlinks=False` refuses a symlink (O_NOFOLLOW) instead of reading its target."""
    name = str(path)
    check_regular(path, max_bytes, follow_symlinks)  # refused before any open
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise _refuse(name, "is a symbolic link") from None
        raise
    try:
        _check(os.fstat(fd), name, max_bytes)  # the file actually opened (swapped after stat?)
        os.set_blocking(fd, True)
        raw = _Capped(fd, name, max_bytes)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(raw)  # type: ignore[return-value]


def read_bytes(path: str | Path, max_bytes: int, follow_symlinks: bool = True) -> bytes:
    """The whole content of a regular file of at most `max_bytes` bytes."""
    with open_regular(path, max_bytes, follow_symlinks) as f:
        return f.read()


def read_text(
    path: str | Path, max_bytes: int, encoding: str = "utf-8", follow_symlinks: bool = True
) -> str:
    """The whole text of a regular file of at most `max_bytes` bytes (UnicodeDecodeError when
    it is not `encoding`)."""
    return read_bytes(path, max_bytes, follow_symlinks).decode(encoding)


def iter_lines(f: BinaryIO, max_line: int) -> Iterator[bytes | None]:
    """The lines of a binary file, each at most `max_line` bytes held at a time: a longer line
    is skipped in bounded memory and yielded as None (the caller counts it as a bad line)."""
    while True:
        line = f.readline(max_line + 1)
        if not line:
            return
        if len(line) <= max_line or line.endswith(b"\n") and len(line) == max_line + 1:
            yield line
            continue
        while line and not line.endswith(b"\n"):  # the rest of the long line, dropped
            line = f.readline(1 << 20)
        yield None


# -- writing under a folder the user named ------------------------------------------------------


def make_dirs(root: str | Path, parts: list[str] | tuple[str, ...]) -> Path:
    """root/parts[0]/parts[1]/..., each level created or already a real directory: a symlink
    planted below root is refused (RefusedFile), never followed out of it; '', '.' and '..'
    are refused as parts. root itself may be anything the user chose (a link included)."""
    d = Path(root)
    d.mkdir(parents=True, exist_ok=True)
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\0" in part:
            raise _refuse(d / part, "not a plain folder name")
        d = d / part
        try:
            os.mkdir(d)
        except FileExistsError:
            st = os.lstat(d)
            if not stat.S_ISDIR(st.st_mode):
                raise _refuse(d, f"exists and is {kind_of(st.st_mode)}, not a folder") from None
    return d


def write_file(path: str | Path, write) -> None:  # write: Callable[[BinaryIO], object]
    """Create `path` by calling write(f) on a new temporary file beside it, then renaming it
    onto `path`: whatever was there (a planted symlink included) is replaced, never followed,
    and a reader never sees a half-written file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # a leftover of a killed writer of this pid, or a planted link
    fd = os.open(tmp, flags, 0o666)
    try:
        with open(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
