"""The comparison's statistics, accumulated chunk by chunk (the rules: conformance/judge/compare.py).

A 2^28-element output cannot afford the dozen full-size float64 temporaries of a whole-array
comparison, so the judge feeds the golden and the backend's output in chunks of the output's
flat C order, and only the figures survive a chunk: counts, maxima, the MERE sum and the k worst
candidates. The figures do not depend on the chunk size: counts and maxima are exact, the MERE
terms are summed per BLOCK of elements aligned to the output's flat index (every chunk starts on
a block boundary) and the block sums added with math.fsum (correctly rounded, order-free), and
the worst elements are chosen by a total order (ulp, abs error, then lowest index).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..acl import dtypes
from ..acl.views import BLOCK, ranges
from ..compiled import mode as compiled_mode
from ..spec.tolerances import Policy
from .compare import _TINY, MERE_EPS, Comparison, Stats, Worst, _as_parts, _top, ulp_distance


def _magnitude(parts: np.ndarray) -> np.ndarray:
    """Per part of complex values laid out (re, im, re, im, ...): the element's magnitude |z|,
    which each part's error is relative to (as numpy.isclose and torch.isclose compare complex
    values: a part that cancels to near 0 is not judged by its own tiny size); a part's own |x|
    where the magnitude is not finite (a NaN or infinite part)."""
    pairs = parts.reshape(-1, 2)
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.repeat(np.hypot(pairs[:, 0], pairs[:, 1]), 2)
    own = np.abs(parts)
    return np.where(np.isfinite(mag), mag, own)


def _block_sums(terms: np.ndarray) -> np.ndarray:
    """Sums per BLOCK, added in index order (cumsum), as conformance.compiled.measure adds them."""
    full = terms.size - terms.size % BLOCK
    sums = np.cumsum(terms[:full].reshape(-1, BLOCK), axis=1)[:, -1] if full else np.zeros(0)
    if full < terms.size:
        sums = np.append(sums, np.cumsum(terms[full:])[-1])
    return sums


CHUNK = 1 << 20  # output elements per chunk of a whole-array comparison


def _compiled(total: int) -> Any:
    """conformance.compiled.measure where the one switch (conformance/compiled/mode.py) says the
    compiled path, else None."""
    if not compiled_mode.wanted(total):
        return None
    try:
        from ..compiled import measure
    except ImportError:  # numba is the optional `fast` extra
        return None
    return measure


class Accumulator:
    """Feed `add(start, golden, actual)` with flat chunks in any order, then `result()`."""

    chunk = CHUNK

    def __init__(
        self,
        dtype: str,
        policy: Policy,
        shape: tuple[int, ...],
        inputs: dict[str, np.ndarray] | None = None,
        n_worst: int = 5,
    ):
        self.dt = dtypes.get(dtype)
        self.policy = policy
        self.scalar = len(shape) == 0  # measured as shape (1,), reported without the index
        self.shape = tuple(shape) if shape else (1,)
        self.complex = self.dt.category == "complex"
        self.part = (
            dtypes.get("DOUBLE" if self.dt.name == "COMPLEX128" else "FLOAT")
            if self.complex
            else self.dt
        )
        self.index_shape = (*self.shape, 2) if self.complex else self.shape
        ins = {k: np.asarray(v) for k, v in (inputs or {}).items()}
        if self.scalar:
            ins = {k: np.reshape(v, 1) for k, v in ins.items() if v.ndim == 0}
        self.inputs = {k: v for k, v in ins.items() if v.shape == self.shape}
        self.n_worst = n_worst
        self.n = self.compared = self.mismatches = self.nan_mis = self.inf_mis = 0
        self.small = self.n_measured = 0
        self.max_abs = self.max_rel = self.mare = self.max_ulp = 0.0
        self.block_sums: list[np.ndarray] = []
        self.candidates: list[tuple[float, float, int, float, float, float]] = []
        fmt = None if self.part.opaque else self.part.name
        self.compiled = _compiled(math.prod(self.shape))
        if self.compiled is not None and fmt in dtypes.IEEE_FLOATS and not self.complex:
            self.format = dtypes.float_format(fmt)
            self.pow2 = self.compiled.powers(self.format.mant, self.format.emin, self.format.nbits)
            # compiled (or loaded from numba's cache) now, before a judge's clock starts: the
            # first compilation on a machine takes 20-25 s on 2 cores, the work it times not
            self._measure_pass(np.zeros(1), np.zeros(1, self.part.np))
        else:
            self.compiled = None

    def add(self, start: int, golden: np.ndarray, actual: np.ndarray) -> None:
        """Measure flat elements [start, start + len) (start: a multiple of flat.BLOCK)."""
        g_in, a_in = np.asarray(golden).reshape(-1), np.asarray(actual).reshape(-1)
        if self.compiled is not None and a_in.dtype == self.dt.np and g_in.dtype.kind in "fc":
            return self._measure_compiled(start * (2 if self.complex else 1), g_in, a_in)
        scale = None
        if self.complex:
            g, a = _as_parts(g_in).reshape(-1), _as_parts(a_in).reshape(-1)
            start *= 2
            scale = _magnitude(g)
        elif np.iscomplexobj(g_in) or np.iscomplexobj(a_in):
            raise ValueError(f"complex values for the real output dtype {self.dt.name}")
        else:
            g, a = np.asarray(g_in, dtype=np.float64), np.asarray(a_in, dtype=np.float64)
        differ = None
        if self.policy.exact and g_in.dtype.kind in "biu" and a_in.dtype.kind in "biu":
            differ = g_in != a_in  # exact even where float64 would round large integers
        self._measure(start, g, a, differ, scale)

    def _measure(
        self, start: int, g: np.ndarray, a: np.ndarray, differ: Any, scale: np.ndarray | None = None
    ) -> None:
        """`scale`: the magnitude each element's error is relative to (|g| when None)."""
        part, policy = self.part, self.policy
        floating = part.is_float and not part.opaque
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            g_store = dtypes.round_to(g, part) if floating else g  # golden in the output dtype
            g_nan, a_nan = np.isnan(g), np.isnan(a)
            g_inf, a_inf = np.isinf(g_store), np.isinf(a)
            nan_mis = g_nan != a_nan
            finite = ~(g_nan | g_inf)
            inf_mis = ~(g_nan | a_nan) & (g_inf | a_inf)
            at = np.flatnonzero(inf_mis)  # both sides non-NaN, one infinite: compare the values
            inf_mis[at] = a[at] != np.asarray(g_store[at], np.float64)
            a_bad = a_nan | a_inf
            ulp = None
            if floating:
                ulp = ulp_distance(g_store, dtypes.round_to(a, part))
                ulp[~finite | a_bad] = np.nan
            abs_err = np.abs(a - g)
            abs_err[finite & a_nan] = np.inf
            abs_err[~finite] = np.nan
            buf = np.abs(g) if scale is None else scale
            small = finite & (buf < policy.small_threshold)
            normal = finite & ~small
            measured = normal & ~a_bad  # a NaN/inf actual already fails as a NaN/inf mismatch
            terms = np.divide(abs_err, buf + MERE_EPS)
            terms[~measured] = 0.0
            rel_err = np.divide(abs_err, np.maximum(buf, _TINY))
            if policy.exact:
                mism = finite & (differ if differ is not None else a != g)
            else:
                mism = (small & (abs_err > policy.small_atol)) | (normal & (rel_err > policy.rel))
            if ulp is None:
                ulp = abs_err.copy()
                ulp[a_bad] = np.nan
        counts = [
            int(np.count_nonzero(m)) for m in (finite, normal, mism, nan_mis, inf_mis, measured)
        ]
        maxima = (
            np.max(abs_err, where=finite, initial=0.0),
            np.max(rel_err, where=measured, initial=0.0),
            np.max(terms, initial=0.0),
            np.max(ulp, where=~np.isnan(ulp), initial=0.0),
        )
        self._tally(g.size, counts, maxima, _block_sums(terms))
        self._candidates(start, g, a, abs_err, rel_err, ulp, nan_mis | inf_mis)

    def _tally(self, n: int, counts: list[int], maxima: Any, block_sums: np.ndarray) -> None:
        """Add a chunk's figures. counts: compared, normal, mismatches, NaN and inf mismatches,
        measured; maxima: abs error, rel error, MERE term (MARE), ulp."""
        compared, normal, mism, nan_mis, inf_mis, measured = counts
        self.n += n
        self.compared += compared
        self.small += compared - normal
        self.mismatches += mism
        self.nan_mis += nan_mis
        self.inf_mis += inf_mis
        self.n_measured += measured
        self.block_sums.append(block_sums)
        max_abs, max_rel, mare, max_ulp = (float(v) for v in maxima)
        self.max_abs, self.max_rel = max(self.max_abs, max_abs), max(self.max_rel, max_rel)
        self.mare, self.max_ulp = max(self.mare, mare), max(self.max_ulp, max_ulp)

    def _candidates(self, start, g, a, abs_err, rel_err, ulp, special) -> None:
        """Keep this chunk's n_worst: NaN/inf mismatches first, then by ulp, then abs_err."""
        key1, key2 = ulp, abs_err.copy()
        for key in (key1, key2):
            np.nan_to_num(key, copy=False, nan=-1.0, posinf=np.inf)
            key[special] = np.inf
        dull = ~((key1 > 0) | (key2 > 0))  # equal elements (and matching NaN/inf): not listed
        key1[dull] = key2[dull] = -np.inf
        for i in _top(key1, key2, self.n_worst):
            if key1[i] == -np.inf:
                break
            self._keep(
                float(key1[i]),
                float(key2[i]),
                start + int(i),
                float(g[i]),
                float(a[i]),
                float(rel_err[i]),
            )

    def _keep(self, *candidate: Any) -> None:
        self.candidates.append(candidate)  # type: ignore[arg-type]
        if len(self.candidates) > 64 * max(self.n_worst, 1):
            self.candidates = self._best()

    def _best(self) -> list[tuple[float, float, int, float, float, float]]:
        return sorted(self.candidates, key=lambda c: (-c[0], -c[1], c[2]))[: self.n_worst]

    def _measure_compiled(self, start: int, g_in: np.ndarray, a_in: np.ndarray) -> None:
        """The same figures as _measure, from conformance.compiled.measure's single compiled pass."""
        if self.complex:
            g = np.ascontiguousarray(_as_parts(g_in).reshape(-1))
            a_store = np.ascontiguousarray(a_in).view(self.part.np)
        elif g_in.dtype.kind == "c":
            raise ValueError(f"complex values for the real output dtype {self.dt.name}")
        else:
            g, a_store = np.ascontiguousarray(g_in, np.float64), np.ascontiguousarray(a_in)
        cnt, mx, bsum, tk, ti, tv = self._measure_pass(g, a_store)
        self._tally(g.size, [int(c) for c in cnt.sum(axis=0)], mx.max(axis=0, initial=0.0), bsum)
        if self.n_worst <= 0:
            return
        for part, j in zip(*np.nonzero(ti >= 0), strict=True):
            i = int(ti[part, j])
            self._keep(
                float(tk[part, j, 0]),
                float(tk[part, j, 1]),
                start + i,
                float(g[i]),
                float(tv[part, j, 0]),
                float(tv[part, j, 1]),
            )

    def _measure_pass(self, g: np.ndarray, a_store: np.ndarray) -> tuple[np.ndarray, ...]:
        f = self.format
        p, emin, emax, nbits = f.mant, f.emin, f.emax, f.nbits
        pol, k = self.policy, max(self.n_worst, 1)
        return self.compiled.measure(  # type: ignore[union-attr]
            g,
            g.view(np.int64),
            a_store.view(f"i{a_store.itemsize}"),
            self.pow2,
            p,
            emin,
            emax,
            nbits,
            bool(pol.exact),
            float(pol.small_threshold),
            float(pol.small_atol),
            float(pol.rel),
            MERE_EPS,
            BLOCK,
            k,
            self.compiled.parts(),  # type: ignore[union-attr]
        )

    def stats(self) -> Stats:
        sums = np.concatenate(self.block_sums) if self.block_sums else np.zeros(0)
        mere = math.fsum(sums.tolist()) / self.n_measured if self.n_measured else 0.0
        return Stats(
            n=self.n,
            compared=self.compared,
            max_abs=self.max_abs,
            max_rel=self.max_rel,
            mere=mere,
            mare=self.mare,
            max_ulp=self.max_ulp,
            mismatches=self.mismatches,
            mismatch_ratio=self.mismatches / self.compared if self.compared else 0.0,
            nan_mismatches=self.nan_mis,
            inf_mismatches=self.inf_mis,
            small_value_count=self.small,
        )

    def result(self) -> Comparison:
        stats, policy = self.stats(), self.policy
        reasons: list[str] = []
        if stats.nan_mismatches:
            reasons.append(f"{stats.nan_mismatches} NaN mismatch(es): NaN positions differ")
        if stats.inf_mismatches:
            reasons.append(
                f"{stats.inf_mismatches} inf mismatch(es): +-inf position or sign differ"
            )
        n_mism, compared = stats.mismatches, stats.compared
        if policy.exact:
            if n_mism:
                reasons.append(f"exact: {n_mism} of {compared} elements differ")
        elif compared:
            if stats.mismatch_ratio > policy.max_ratio:
                reasons.append(
                    f"mismatch ratio {stats.mismatch_ratio:.6g} ({n_mism}/{compared}) > "
                    f"max_ratio {policy.max_ratio:.6g}"
                )
            normal = compared - stats.small_value_count
            if normal and not stats.mere < policy.mere:
                reasons.append(f"MERE {stats.mere:.6g} >= {policy.mere:.6g}")
            if normal and not stats.mare < policy.mare:
                reasons.append(f"MARE {stats.mare:.6g} >= {policy.mare:.6g}")
            if policy.max_ulp is not None and stats.max_ulp > policy.max_ulp:
                reasons.append(f"max ulp {stats.max_ulp:.6g} > max_ulp {policy.max_ulp:.6g}")
        return Comparison(passed=not reasons, stats=stats, worst=self.worst(), reasons=reasons)

    def worst(self) -> list[Worst]:
        out = []
        for k1, k2, flat, g, a, rel in self._best():
            idx = tuple(int(i) for i in np.unravel_index(flat, self.index_shape))
            vals: dict[str, float] = {}
            for name, arr in self.inputs.items():
                v = arr[idx[: len(self.shape)]]
                if np.iscomplexobj(v):
                    vals[f"{name}.real"], vals[f"{name}.imag"] = float(v.real), float(v.imag)
                else:
                    vals[name] = float(v)
            w = Worst(
                index=idx,
                expected=g,
                actual=a,
                abs_err=np.nan if np.isnan(rel) else k2,
                rel_err=rel,
                ulp=k1 if 0 <= k1 < np.inf else np.nan,
                inputs=vals,
            )
            if self.scalar:
                w.index = w.index[1:]
            out.append(w)
        return out


def compare(
    golden: Any,
    actual: Any,
    dtype: str,
    policy: Policy,
    inputs: dict[str, np.ndarray] | None = None,
    n_worst: int = 5,
) -> Comparison:
    """Compare `actual` (output dtype `dtype`) with `golden` under `policy`; see module doc.

    Whole arrays, measured chunk by chunk (the Accumulator above): the figures are the same
    whatever the chunk size, so a streamed comparison of a huge output reports what this does."""
    g_in, a_in = np.asarray(golden), np.asarray(actual)
    if g_in.shape != a_in.shape:
        raise ValueError(f"shape mismatch: expected {g_in.shape}, actual {a_in.shape}")
    acc = Accumulator(dtype, policy, g_in.shape, inputs, n_worst)
    g_flat, a_flat = g_in.reshape(-1), a_in.reshape(-1)
    for start, stop in ranges(g_flat.size, acc.chunk):
        acc.add(start, g_flat[start:stop], a_flat[start:stop])
    return acc.result()
