"""Flat element ranges of a tensor's view, read and written without materializing the view.

Large cases are evaluated and compared chunk by chunk in the C order of the output's shape. An
input broadcast to that shape, or a strided view, has no flat slice: `np.ravel` would copy all of
it. A FlatView gives elements [start, stop) of the view in that order: a slice of the storage
when the view is contiguous, else a gather through the offsets computed for that range only.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .call import TensorArg, contiguous_strides

BLOCK = 1024  # chunk boundaries fall on multiples of this (reductions are summed per block)


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def ranges(total: int, chunk: int) -> Iterator[tuple[int, int]]:
    """[start, stop) ranges of at most `chunk` elements (a multiple of BLOCK) covering total."""
    chunk = max(BLOCK, chunk - chunk % BLOCK)
    for start in range(0, total, chunk):
        yield start, min(start + chunk, total)


def _walk(
    idx: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...], offset: int
) -> np.ndarray:
    """Storage offsets of the flat indices idx of a view of `shape` and `strides` (C order)."""
    off = np.full(idx.size, offset, dtype=np.int64)
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n == 1:
            continue
        idx, r = np.divmod(idx, n)
        if s:
            off += r * s
    return off


class FlatView:
    """Elements of `t`'s view broadcast to `shape`, by flat index in C order."""

    def __init__(self, t: TensorArg, shape: tuple[int, ...]):
        self.storage = t.storage
        self.shape = tuple(int(s) for s in shape)
        pad = len(self.shape) - len(t.shape)
        if pad < 0:
            raise ValueError(f"cannot view shape {t.shape} as {self.shape}")
        strides = [0] * pad + [0 if n == 1 else s for n, s in zip(t.shape, t.strides, strict=True)]
        for own, want in zip(t.shape, self.shape[pad:], strict=True):
            if own not in (1, want):
                raise ValueError(f"cannot broadcast shape {t.shape} to {self.shape}")
        self.strides = tuple(strides)
        self.offset = int(t.offset)
        self.size = numel(self.shape)
        self._patterns: dict[int, np.ndarray] = {}  # trailing dims from k: their offsets
        same = tuple(t.shape) == self.shape
        self.contiguous = same and tuple(t.strides) == contiguous_strides(self.shape)

    def offsets(self, start: int, stop: int) -> np.ndarray:
        """Storage indices of flat elements [start, stop): the trailing dims' pattern (their
        offsets within one block of them, computed once) added to each block's base, the
        leading dims' offset of that block (one divmod walk over blocks, not elements: a
        broadcast gradient's offsets cost an addition per element)."""
        count = stop - start
        k, size = len(self.shape), 1
        while k > 0 and size * self.shape[k - 1] <= max(count, 1):
            k, size = k - 1, size * self.shape[k - 1]
        if size <= 1:
            return _walk(
                np.arange(start, stop, dtype=np.int64), self.shape, self.strides, self.offset
            )
        pattern = self._patterns.get(k)
        if pattern is None:
            pattern = self._patterns[k] = _walk(
                np.arange(size, dtype=np.int64), self.shape[k:], self.strides[k:], 0
            )
        b0, b1 = start // size, (stop - 1) // size + 1
        base = _walk(
            np.arange(b0, b1, dtype=np.int64), self.shape[:k], self.strides[:k], self.offset
        )
        return (base[:, None] + pattern[None, :]).reshape(-1)[start - b0 * size : stop - b0 * size]

    def get(self, start: int, stop: int) -> np.ndarray:
        """Elements [start, stop) as a 1-D array (a view of the storage where it can be)."""
        if self.contiguous:
            return self.storage[self.offset + start : self.offset + stop]
        return self.storage[self.offsets(start, stop)]

    def set(self, start: int, stop: int, values: np.ndarray) -> None:
        """Store `values` (already in the storage's dtype) at elements [start, stop)."""
        if self.contiguous:
            self.storage[self.offset + start : self.offset + stop] = values
        else:
            self.storage[self.offsets(start, stop)] = values
