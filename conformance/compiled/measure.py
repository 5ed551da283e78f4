"""The comparison's per-chunk pass, compiled: one parallel loop instead of ~30 numpy passes.

Why: at vendor scale (10^8 elements and more) the numpy pass of accumulate.py spends seconds per
2^26 elements on temporaries. This numba loop reads the float64 golden and the backend's output
bits once, rounds the golden to the output format itself (RNE, subnormals and overflow included),
and leaves per-partition counts, maxima, the sequential per-BLOCK MERE sums and the k worst
candidates, which accumulate.py merges. The figures are the numpy pass's, bit for bit
(tests/test_measure.py), so records do not depend on whether numba is installed.

Only imported where numba is (the `fast` extra); real floating outputs of the formats in
conformance.acl.dtypes.IEEE_FLOATS take it, everything else the numpy pass (complex outputs too: a part's error is relative to the
element's magnitude, accumulate._magnitude).
"""

from __future__ import annotations

import math

import numpy as np
from numba import get_num_threads, njit, prange

from .intrinsics import as_bits, as_double, select, small_to_double

_TINY = float(np.finfo(np.float64).tiny)


@njit(cache=True, inline="always", error_model="numpy")
def _decode(mag, p, all_ones, pow2):  # pragma: no cover - compiled
    """The value of a format's magnitude bits (exponent and mantissa fields), as float64."""
    e = mag >> p
    if e == all_ones:
        return np.inf if (mag & ((np.int64(1) << p) - 1)) == 0 else np.nan
    if e == 0:
        return float(mag) * pow2[0]
    return float((mag & ((np.int64(1) << p) - 1)) + (np.int64(1) << p)) * pow2[e]


@njit(cache=True, inline="always", error_model="numpy")
def round_narrow(mag64, p, emin, all_ones):  # pragma: no cover - compiled
    """A finite float64's magnitude bits rounded RNE to the format's magnitude bits, in integers:
    subnormal results and overflow to infinity included. The one compiled rounding to a narrow
    format (the comparison's and the evaluation kernels', through narrow_bits); numpy's is
    conformance.acl.dtypes.round_to."""
    e = (mag64 >> 52) - 1023
    if e < emin - p - 1:  # below half the smallest subnormal (a tie there goes to zero too)
        return np.int64(0)
    if e >= emin:  # normal: rebias the exponent field, then drop 52 - p bits
        x = mag64 - (np.int64(1023 + emin - 1) << 52)
        shift = 52 - p
    else:  # subnormal: the whole significand, shifted further by the exponent's deficit
        x = (mag64 & ((np.int64(1) << 52) - 1)) | (np.int64(1) << 52)
        shift = 52 - p + (emin - e)
    r = (x + ((np.int64(1) << (shift - 1)) - 1) + ((x >> shift) & 1)) >> shift
    return min(r, all_ones << p)


@njit(cache=True, inline="always", error_model="numpy")
def narrow_bits(r, p, emin, all_ones, nbits):  # pragma: no cover - compiled
    """A float64 rounded RNE to a 16-bit format's bits (FLOAT16, BF16): NaN the quiet NaN."""
    b = as_bits(r)
    mag = b & 0x7FFFFFFFFFFFFFFF
    sign = (b >> 63) & 1
    if mag > 0x7FF0000000000000:  # NaN: the quiet NaN
        m = (all_ones << p) | (1 << (p - 1))
    elif mag == 0x7FF0000000000000:
        m = all_ones << p
    else:
        m = round_narrow(mag, p, emin, all_ones)
    return np.uint16((sign << (nbits - 1)) | m)


@njit(parallel=True, cache=True, error_model="numpy")
def measure(g, gbits, abits, pow2, p, emin, emax, nbits, exact, thr, atol, rel, eps, block, k,
            nparts):  # fmt: skip  # pragma: no cover - compiled
    """One pass over a chunk; see the module doc. Returns (counts, maxima, block sums, worst).

    Each block is measured in a loop without branches, which vectorizes: it assumes both values
    are finite and normal in the output format (the common case), and keeps each element's
    figures in block buffers. The elements that are not (zeros, subnormals, NaN, infinities),
    and DOUBLE elements 2^52 ulps apart or more, are measured by the general code; then the
    block's terms are summed in index order, and its elements offered to the k worst only when
    its largest keys could enter."""
    m = g.size
    nblocks = (m + block - 1) // block
    bpp = (nblocks + nparts - 1) // nparts
    cnt = np.zeros((nparts, 6), np.int64)  # compared, normal, mismatches, nan, inf, measured
    mx = np.zeros((nparts, 4))  # max_abs, max_rel, mare, max_ulp
    tk = np.full((nparts, k, 2), -np.inf)  # (ulp key, abs key) of the kept candidates
    ti = np.full((nparts, k), -1, np.int64)
    tv = np.zeros((nparts, k, 2))  # (actual, rel_err) of the kept candidates
    bsum = np.zeros(nblocks)
    mag_mask = (np.int64(1) << (nbits - 1)) - 1
    all_ones = np.int64(emax - emin + 2)
    top = all_ones << p  # the format's infinity, as magnitude bits
    mag64_mask = (np.int64(1) << 63) - 1
    inf64 = np.int64(2047) << 52
    mant = (np.int64(1) << p) - 1
    rebias = np.int64(1023 + emin - 1) << 52
    shift = 52 - p
    half = np.int64(1) << (shift - 1) if shift > 0 else np.int64(1)
    expo = np.int64(1022 + emin)  # a normal's exponent field, format to float64
    for part in prange(nparts):
        tb, k1, k2 = np.empty(block), np.empty(block), np.empty(block)
        avb, rb = np.empty(block), np.empty(block)
        slow = np.empty(block, np.bool_)
        compared = normal = mism = nan_mis = inf_mis = measured = 0
        bab = brel = bmare = bulp = np.int64(0)  # bit maxima (of non-negative values) of the fast
        max_abs = max_rel = mare = max_ulp = 0.0  # ... and plain maxima of the rest
        low1, low2 = -np.inf, -np.inf  # the k-th kept candidate's keys
        for blk in range(part * bpp, min((part + 1) * bpp, nblocks)):
            lo = blk * block
            n = min(block, m - lo)
            nslow = 0
            m1b = m2b = np.int64(0)  # the block's largest keys (bits) of the fast elements
            for j in range(np.uint64(n)):  # unsigned: no negative-index
                i = np.uint64(lo) + j  # test, which would make every load a lane of its own
                gv = g[i]
                ab = np.int64(abits[i])
                aneg = np.int64(ab < 0)
                amag = ab & mag_mask
                ae = amag >> p
                gmag = gbits[i] & mag64_mask
                ge = (gmag >> 52) - 1023
                x = gmag - rebias  # a normal result: rebias the exponent, drop 52 - p bits (RNE)
                gr = gmag if nbits == 64 else (x + half - 1 + ((x >> shift) & 1)) >> shift
                av = as_double((aneg << 63) | ((ae + expo) << 52) | ((amag & mant) << shift))
                # the distance in ulps (through zero for opposite signs), exactly a float64
                # where d < 2^52: always, but for DOUBLE
                same = aneg == np.int64(gbits[i] < 0)
                d = abs(amag - gr) if same else amag + gr
                key1 = small_to_double(d)
                fast = (ae > 0) & (ae < all_ones) & (ge >= emin) & (ge <= emax) & (gr < top)
                fast = fast & (d >= 0) & (d < (1 << 52))
                abs_err = abs(av - gv)
                buf = abs(gv)
                rel_err = abs_err / max(buf, _TINY)
                term = abs_err / (buf + eps)
                small = buf < thr
                large = not small
                big = fast & large
                bad = (exact & (av != gv)) | (
                    (not exact) & ((small & (abs_err > atol)) | (large & (rel_err > rel)))
                )
                on = -np.int64(fast)  # all ones where fast
                # and two cases the general code would only count: both zero (compared), and
                # both the same infinity or both NaN (nothing): all-zero or all-inf outputs
                zeros = (amag == 0) & (gmag == 0)
                g_nan, a_nan = gv != gv, (ae == all_ones) & ((amag & mant) != 0)
                alike = (ge == 1024) & (ae == all_ones) & (g_nan == a_nan) & (g_nan | same)
                as_normal = big | (zeros & large)  # counted as normal, and measured
                compared += np.int64(fast | zeros)
                normal += np.int64(as_normal)
                measured += np.int64(as_normal)
                mism += np.int64(fast & bad)
                brel = max(brel, as_bits(rel_err) & -np.int64(big))
                bmare = max(bmare, as_bits(term) & -np.int64(big))
                m1b = max(m1b, as_bits(key1) & on)
                m2b = max(m2b, as_bits(abs_err) & on)
                tb[j] = select(big, term, 0.0)
                k1[j], k2[j] = select(fast, key1, -1.0), select(fast, abs_err, -1.0)
                avb[j], rb[j] = av, rel_err
                general = not (fast | zeros | alike)
                slow[j] = general
                nslow += np.int64(general)
            bulp, bab = max(bulp, m1b), max(bab, m2b)
            m1, m2 = as_double(m1b), as_double(m2b)
            for j in range(n if nslow else 0):
                if not slow[j]:
                    continue
                gv = g[lo + j]
                ab = np.int64(abits[lo + j])
                aneg = np.int64(ab < 0)
                amag = ab & mag_mask
                gb = gbits[lo + j]
                gneg = np.int64(gb < 0)
                gmag = gb & mag64_mask
                av = _decode(amag, p, all_ones, pow2) * (1.0 - 2.0 * aneg)
                if nbits == 64 or gv != gv:
                    gs = gv
                else:
                    gmag = round_narrow(gmag, p, emin, all_ones) if gmag < inf64 else all_ones << p
                    gs = _decode(gmag, p, all_ones, pow2) * (1.0 - 2.0 * gneg)
                g_nan, a_nan = gv != gv, av != av
                g_inf, a_inf = math.isinf(gs), math.isinf(av)
                finite = not (g_nan or g_inf)
                a_bad = a_nan or a_inf
                special = g_nan != a_nan
                if special:
                    nan_mis += 1
                elif not (g_nan or a_nan) and (g_inf or a_inf) and av != gs:
                    special = True
                    inf_mis += 1
                key1 = -1.0
                if finite and not a_bad:
                    if nbits == 64 and aneg != gneg:  # 2^63 apart or more: int64 would wrap
                        key1 = float(amag) + float(gmag)
                    else:
                        key1 = float(abs(amag * (1 - 2 * aneg) - gmag * (1 - 2 * gneg)))
                    max_ulp = max(max_ulp, key1)
                if not finite:
                    abs_err = np.nan
                elif a_nan:
                    abs_err = np.inf
                else:
                    abs_err = abs(av - gv)
                buf = abs(gv)
                rel_err = abs_err / max(buf, _TINY)
                tb[j] = 0.0
                if finite:
                    compared += 1
                    max_abs = max(max_abs, abs_err)
                    small = buf < thr
                    if not small:
                        normal += 1
                        if not a_bad:
                            measured += 1
                            term = abs_err / (buf + eps)
                            tb[j] = term
                            mare = max(mare, term)
                            max_rel = max(max_rel, rel_err)
                    if exact:
                        if av != gv:
                            mism += 1
                    elif (abs_err > atol) if small else (rel_err > rel):
                        mism += 1
                key2 = -1.0 if abs_err != abs_err else abs_err
                if special:
                    key1 = key2 = np.inf
                k1[j], k2[j], avb[j], rb[j] = key1, key2, av, rel_err
                m1, m2 = max(m1, key1), max(m2, key2)
            s = 0.0
            for j in range(n):  # in index order, as the numpy pass adds them
                s += tb[j]
            bsum[blk] = s
            if not (m1 > 0 or m2 > 0) or m1 < low1 or (m1 == low1 and m2 <= low2):
                continue  # no element of the block can enter the k worst
            for j in range(n):
                key1, key2 = k1[j], k2[j]
                if not (key1 > 0 or key2 > 0):
                    continue
                if key1 < low1 or (key1 == low1 and key2 <= low2):
                    continue  # indices rise within a partition: a tie keeps the earlier one
                i = lo + j
                c = k - 1
                while c > 0 and (
                    tk[part, c - 1, 0] < key1
                    or (tk[part, c - 1, 0] == key1 and tk[part, c - 1, 1] < key2)
                ):
                    tk[part, c, 0], tk[part, c, 1] = tk[part, c - 1, 0], tk[part, c - 1, 1]
                    tv[part, c, 0], tv[part, c, 1] = tv[part, c - 1, 0], tv[part, c - 1, 1]
                    ti[part, c] = ti[part, c - 1]
                    c -= 1
                tk[part, c, 0], tk[part, c, 1] = key1, key2
                ti[part, c] = i
                tv[part, c, 0], tv[part, c, 1] = avb[j], rb[j]
                low1, low2 = tk[part, k - 1, 0], tk[part, k - 1, 1]
        cnt[part, 0], cnt[part, 1], cnt[part, 2] = compared, normal, mism
        cnt[part, 3], cnt[part, 4], cnt[part, 5] = nan_mis, inf_mis, measured
        mx[part, 0] = max(max_abs, as_double(bab))
        mx[part, 1] = max(max_rel, as_double(brel))
        mx[part, 2] = max(mare, as_double(bmare))
        mx[part, 3] = max(max_ulp, as_double(bulp))
    return cnt, mx, bsum, tk, ti, tv


def powers(p: int, emin: int, nbits: int) -> np.ndarray:
    """pow2[e]: the weight of the lowest mantissa bit for biased exponent e (e = 0: subnormal)."""
    ne = 1 << (nbits - 1 - p)
    return np.array([math.ldexp(1.0, max(e, 1) + emin - 1 - p) for e in range(ne)])


def parts() -> int:
    """Partitions per chunk: a few per thread, so an uneven chunk still keeps every core busy."""
    return 4 * get_num_threads()
