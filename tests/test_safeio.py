"""conformance.files.safeio: FIFOs, devices, directories and oversized files are refused before they
are read (issue 22, point 15), and a file growing while read stops at the limit."""

from __future__ import annotations

import os
import threading
import time

import pytest
from aclnn_conformance.conformance.files import safeio


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "pipe"
    os.mkfifo(p)
    return p


def test_fifo_is_refused_without_blocking(fifo):
    t0 = time.perf_counter()
    with pytest.raises(safeio.RefusedFile, match="not a regular file \\(a FIFO\\)"):
        safeio.read_bytes(fifo, 100)
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null"])
def test_devices_are_refused(path):
    with pytest.raises(safeio.RefusedFile, match="character device"):
        safeio.read_bytes(path, 100)


def test_symlink_to_a_device_is_refused_by_its_target(tmp_path):
    link = tmp_path / "x.yaml"
    link.symlink_to("/dev/zero")
    with pytest.raises(safeio.RefusedFile, match="character device"):
        safeio.read_text(link, 1000)


def test_symlink_refused_when_not_following(tmp_path):
    (tmp_path / "real").write_bytes(b"abc")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert safeio.read_bytes(tmp_path / "link", 10) == b"abc"
    with pytest.raises(safeio.RefusedFile, match="symbolic link"):
        safeio.read_bytes(tmp_path / "link", 10, follow_symlinks=False)


def test_directory_is_refused(tmp_path):
    with pytest.raises(safeio.RefusedFile, match="a directory"):
        safeio.read_bytes(tmp_path, 10)


def test_size_is_checked_before_reading(tmp_path):
    big = tmp_path / "sparse"
    with open(big, "wb") as f:
        f.truncate(8 << 30)  # 8 GiB, sparse: reading it would take long and all memory
    t0 = time.perf_counter()
    with pytest.raises(safeio.RefusedFile, match="too large: 8.0 GiB"):
        safeio.read_bytes(big, 2_000_000)
    assert time.perf_counter() - t0 < 0.5
    assert safeio.check_regular(big).st_size == 8 << 30  # no limit: any size


def test_exact_limit_is_allowed(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x" * 100)
    assert safeio.read_bytes(f, 100) == b"x" * 100
    with pytest.raises(safeio.RefusedFile, match="too large"):
        safeio.read_bytes(f, 99)


def test_a_file_growing_while_read_stops_at_the_limit(tmp_path):
    f = tmp_path / "growing"
    f.write_bytes(b"a" * 10)
    with safeio.open_regular(f, 50) as fh:  # 10 bytes at the stat: accepted
        with open(f, "ab") as w:
            w.write(b"b" * 100)  # grows past the limit after the check
        with pytest.raises(safeio.RefusedFile, match="grew past the limit"):
            fh.read()


def test_fifo_swapped_in_after_the_stat_does_not_block(tmp_path, monkeypatch):
    """The open is non-blocking and the opened descriptor is checked again with fstat."""
    p = tmp_path / "swap"
    p.write_bytes(b"ok")
    real_check = safeio.check_regular

    def check_then_swap(path, *a, **k):
        st = real_check(path, *a, **k)
        os.unlink(p)
        os.mkfifo(p)
        return st

    monkeypatch.setattr(safeio, "check_regular", check_then_swap)
    done = []
    t = threading.Thread(target=lambda: done.append(_refused(p)), daemon=True)
    t.start()
    t.join(5)
    assert done == [True]


def _refused(p) -> bool:
    try:
        safeio.read_bytes(p, 10)
    except safeio.RefusedFile as exc:
        return "FIFO" in str(exc)
    return False


def test_lines_longer_than_the_limit_are_skipped_in_bounded_memory(tmp_path):
    f = tmp_path / "lines"
    f.write_bytes(b"short\n" + b"x" * 5000 + b"\nlast")
    with safeio.open_regular(f) as fh:
        assert list(safeio.iter_lines(fh, 100)) == [b"short\n", None, b"last"]


def test_refusal_reads_as_one_line_naming_the_file(fifo):
    with pytest.raises(OSError) as info:
        safeio.open_regular(fifo)
    assert str(info.value) == f"{fifo}: not a regular file (a FIFO)"
    assert info.value.filename == str(fifo)
