"""Output paths that would destroy an input are refused before anything is read or written:
`report R --html R`, `run --results R --junit R`, a report over an expectations file or the
results' meta, two reports on one file, `--keep-outputs` inside the case directories.

Paths are compared as the file system sees them: symlinks resolved, and for files that exist,
the same inode (a hard link is the same file).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .errors import UserError

Named = tuple[str, Path | str | None]  # (option as the user wrote it, path or None)


def _real(p: Path | str) -> str:
    return os.path.realpath(os.fspath(p))


def same_file(a: Path | str, b: Path | str) -> bool:
    """a and b name one file (or would, once created)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they lead
        return _real(a) == _real(b)


def within(path: Path | str, folder: Path | str) -> bool:
    """path is folder or lies under it."""
    p, d = _real(path), _real(folder)
    return p == d or p.startswith(d.rstrip(os.sep) + os.sep)


def results_family(option: str, results: Path | str | None) -> list[Named]:
    """A results file and the files that go with it: its meta and its lock."""
    if results is None:
        return []
    return [
        (option, results),
        (f"{option} (its meta)", f"{results}.meta.json"),
        (f"{option} (its lock)", f"{results}.lock"),
    ]


def check_outputs(
    outputs: Sequence[Named],
    inputs: Sequence[Named] = (),
    *,
    output_dirs: Sequence[Named] = (),
    input_dirs: Sequence[Named] = (),
) -> None:
    """Refuse (UserError, exit 2, naming both options) an output file that is an input file or
    another output, and an output folder that is, or lies inside, an input folder or is an
    input file. Call before anything is created or deleted."""
    outs = [(o, Path(p)) for o, p in outputs if p is not None]
    ins = [(o, Path(p)) for o, p in inputs if p is not None]
    out_dirs = [(o, Path(p)) for o, p in output_dirs if p is not None]
    in_dirs = [(o, Path(p)) for o, p in input_dirs if p is not None]
    for k, (opt, path) in enumerate(outs):
        for iopt, ipath in ins:
            if same_file(path, ipath):
                raise UserError(
                    f"{opt} {path} is the same file as {iopt} {ipath}: writing it "
                    f"would destroy that input; give {opt} another file"
                )
        for oopt, other in outs[:k]:
            if same_file(path, other):
                raise UserError(
                    f"{opt} {path} is the same file as {oopt} {other}: one would "
                    "overwrite the other; give each its own file"
                )
    for opt, folder in out_dirs:
        for iopt, ipath in ins:
            if same_file(folder, ipath):
                raise UserError(
                    f"{opt} {folder} is the same path as {iopt} {ipath}; give "
                    f"{opt} a folder of its own"
                )
        for iopt, idir in in_dirs:
            if within(folder, idir):
                raise UserError(
                    f"{opt} {folder} is inside {iopt} {idir}: the outputs would "
                    f"be written among the inputs; give {opt} a folder outside "
                    "it"
                )
        for oopt, other in outs:
            if same_file(other, folder):
                raise UserError(f"{opt} {folder} is the same path as {oopt} {other}")
