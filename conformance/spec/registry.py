"""Loading operator specs: one file (lint, then the OpSpec, or SpecError with every problem), and
the set of loaded specs, looked up by any of an op's names."""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

from .lint import Problem, lint_file
from .model import OpSpec
from .tables import default_spec_files


class SpecError(ValueError):
    """A spec file with problems; `problems` has them all, one `file:line: message` each."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


# Specs already loaded in this process, by (resolved path, sha256 of the bytes): every command
# loads the whole registry (parsing YAML with positions is most of a short command's time), and
# a test session runs hundreds of commands. A changed file has another digest: linted again.
_LOADED: dict[tuple[str, str], OpSpec] = {}
_MAX_CACHED = 2 << 20  # the spec size limit of lint_file


def _content_key(path: Path) -> tuple[str, str] | None:
    """The cache key of a regular file within the size limit (None: lint it, do not cache)."""
    try:
        st = path.stat()
        if not path.is_file() or st.st_size > _MAX_CACHED:
            return None
        return str(path.resolve()), hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def load_spec(path: str | Path) -> OpSpec:
    """The spec of one file; SpecError lists every problem if there is any."""
    key = _content_key(Path(path))
    if key is not None and key in _LOADED:
        return _LOADED[key]
    spec, problems = lint_file(path)
    if problems or spec is None:
        raise SpecError(problems)
    if key is not None:
        _LOADED[key] = spec
    return spec


class UnknownOp(KeyError):
    def __init__(self, name: str, known: Iterable[str]):
        self.name = name
        self.known = sorted(known)
        lowered = str(name).lower()
        close = [k for k in self.known if k.startswith(lowered)] or difflib.get_close_matches(
            str(name), self.known, n=1, cutoff=0.6
        )
        hint = f"; did you mean {close[0]}?" if close else ""
        super().__init__(
            f"unknown operator {name!r}; known: {', '.join(self.known)}{hint} "
            "('aclnn-conform specs list' shows them)"
        )

    def __str__(self) -> str:
        return self.args[0]


def name_key(name: str) -> str:
    """The key two operator names clash on (see _key)."""
    return _key(name)


def _key(name: str) -> str:
    """aclnnSomeOpBackward, SomeOpBackward, some_op_backward and some-op-backward all give
    'someopbackward'."""
    k = name.strip().lower().replace("_", "").replace("-", "")
    return k[5:] if k.startswith("aclnn") else k


class Registry:
    def __init__(self, op_specs: Iterable[OpSpec], dirs: Iterable[str] = ()):
        # the extra spec folders it was loaded with: worker processes load the same
        self.dirs: tuple[str, ...] = tuple(str(Path(d).resolve()) for d in dirs)
        self.specs: dict[str, OpSpec] = {}
        for s in op_specs:
            self.specs[s.name] = s
        self._index = {}
        for s in self.specs.values():
            self._index[_key(s.name)] = s
            self._index[_key(s.op)] = s

    def get(self, name: str) -> OpSpec:
        try:
            return self._index[_key(name)]
        except KeyError:
            raise UnknownOp(name, self.specs) from None

    def __iter__(self) -> Iterator[OpSpec]:
        return iter(self.specs.values())

    def __len__(self) -> int:
        return len(self.specs)

    def names(self) -> list[str]:
        return list(self.specs)

    @property
    def sha256(self) -> str:
        """One hash over every spec file: recorded with cases and results."""
        h = hashlib.sha256()
        for s in sorted(self.specs.values(), key=lambda s: s.name):
            h.update(s.name.encode() + b"\0" + s.sha256.encode() + b"\0")
        return h.hexdigest()


SPECS_ENV = "ACLNN_CONFORM_SPECS"  # extra spec folders, separated like PATH


def spec_files(dirs: Iterable[str | Path] = ()) -> list[Path]:
    """The shipped spec files, then the `*.yaml` files of each extra folder (a file names
    itself); a folder that does not exist is a SpecError naming it."""
    files = list(default_spec_files())
    for d in dirs:
        p = Path(d)
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files.extend(sorted(p.glob("*.yaml")))
        else:
            raise SpecError(
                [Problem(str(p), 0, f"no such spec folder (from --specs or {SPECS_ENV})")]
            )
    return files


def env_spec_dirs() -> tuple[str, ...]:
    """The folders named by ACLNN_CONFORM_SPECS (os.pathsep-separated; empty parts ignored)."""
    return tuple(p for p in os.environ.get(SPECS_ENV, "").split(os.pathsep) if p.strip())


def load_registry(
    paths: Iterable[str | Path] | None = None, dirs: Iterable[str | Path] = ()
) -> Registry:
    """Load the given spec files (default: the shipped specs plus the folders `dirs`); raises
    SpecError for a bad spec and for two files that define the same operator."""
    dirs = tuple(dirs)
    files = [Path(p) for p in paths] if paths is not None else spec_files(dirs)
    problems = []
    loaded = []
    for f in files:
        try:
            loaded.append(load_spec(f))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    loaded = [s for base in loaded for s in (base, *base.variants)]
    seen: dict[str, OpSpec] = {}
    for s in loaded:
        for key in {_key(s.name), _key(s.op)}:
            first = seen.get(key)
            if first is not None and first is not s:
                problems.append(
                    Problem(
                        s.path,
                        1,
                        f"operator {s.name} ({s.op}) is already "
                        f"defined by {first.path}; rename one of them",
                    )
                )
            seen.setdefault(key, s)
    if problems:
        raise SpecError(problems)
    return Registry(loaded, dirs)


@cache
def registry_for(dirs: tuple[str, ...] = ()) -> Registry:
    """The shipped specs plus the spec folders `dirs` (cached per tuple of folders): what a
    worker process rebuilds from the folders its run was given."""
    return load_registry(dirs=dirs)


def default_registry() -> Registry:
    """The shipped specs plus the folders of ACLNN_CONFORM_SPECS: for the Python API and
    tests. The CLI and the pytest plugin build their registry from their options and pass it
    down."""
    return registry_for(tuple(str(Path(d).resolve()) for d in env_spec_dirs()))
