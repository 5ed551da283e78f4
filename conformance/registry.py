"""The set of loaded operator specs, looked up by any of an op's names."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

from conformance.loader import SpecError, default_spec_files, load_spec
from conformance.spec import OpSpec


class UnknownOp(KeyError):
    def __init__(self, name: str, known: Iterable[str]):
        self.name = name
        self.known = sorted(known)
        lowered = str(name).lower()
        close = [k for k in self.known if k.startswith(lowered)] or difflib.get_close_matches(
            str(name), self.known, n=1, cutoff=0.6
        )
        hint = f"; did you mean {close[0]}?" if close else ""
        super().__init__(f"unknown operator {name!r}; known: {', '.join(self.known)}{hint} "
                         "('aclnn-conform specs list' shows them)")  # fmt: skip

    def __str__(self) -> str:
        return self.args[0]


def _key(name: str) -> str:
    """aclnnEluBackward, EluBackward, elu_backward and elu-backward all give 'elubackward'."""
    k = name.strip().lower().replace("_", "").replace("-", "")
    return k[5:] if k.startswith("aclnn") else k


class Registry:
    def __init__(self, op_specs: Iterable[OpSpec]):
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


def load_registry(paths: Iterable[str | Path] | None = None) -> Registry:
    """Load the given spec files (default: every specs/ops/*.yaml); raises SpecError."""
    files = [Path(p) for p in paths] if paths is not None else default_spec_files()
    problems = []
    loaded = []
    for f in files:
        try:
            loaded.append(load_spec(f))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    return Registry(loaded)


@cache
def default_registry() -> Registry:
    return load_registry()
