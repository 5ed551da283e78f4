"""aclDataType: names, enum values, host storage, promotion and castability — all read from specs/.

Rounding to narrow floats lives here too because it is subtle: ml_dtypes converts float64 to
bfloat16 through float32, which rounds twice and is wrong for values near a bf16 half-way point.
`round_to` rounds float64 to float32 with round-to-odd first (exact for the final RNE step, since
float32 keeps more than two extra bits), then lets ml_dtypes / numpy do round-to-nearest-even.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import ml_dtypes
import numpy as np
import yaml

from ... import specs


class DtypeError(ValueError):
    """An unknown dtype name or value."""


@dataclass(frozen=True)
class DType:
    name: str  # enum name without ACL_ prefix: FLOAT, FLOAT16, BF16, ...
    value: int  # the aclDataType number
    short: str  # f32, f16, bf16, ...: used in case ids
    category: str  # bool | int | float | complex | other
    numpy_name: str  # numpy / ml_dtypes type name, or "bytes" for opaque storage

    @property
    def np(self) -> np.dtype:
        """Host storage dtype (uint8 bytes where numpy has no such type)."""
        if self.numpy_name == "bytes":
            return np.dtype(np.uint8)
        if hasattr(ml_dtypes, self.numpy_name):
            return np.dtype(getattr(ml_dtypes, self.numpy_name))
        return np.dtype(self.numpy_name)

    @property
    def opaque(self) -> bool:
        return self.numpy_name == "bytes"

    @property
    def is_float(self) -> bool:
        return self.category == "float"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class DtypeTables:
    by_name: dict[str, DType]
    aliases: dict[str, str]
    promotion: dict[tuple[str, str], str]
    cast_deny: tuple[tuple[frozenset[str], frozenset[str]], ...]

    def get(self, name: str) -> DType:
        key = str(name).upper()
        key = self.aliases.get(key, key)
        if key.startswith("ACL_") and key[4:] in self.by_name:
            key = key[4:]
        if key in self.by_name:
            return self.by_name[key]
        for dt_ in self.by_name.values():  # the short names of case ids: f16, bf16, i32, ...
            if dt_.short == str(name).lower():
                return dt_
        raise DtypeError(f"unknown dtype {name!r}")

    def names(self) -> list[str]:
        return list(self.by_name)

    def promote(self, a: str, b: str) -> str | None:
        """PromoteType(a, b); None where the library returns DT_UNDEFINED."""
        if a == b:
            return a
        return self.promotion.get((a, b))

    def can_cast(self, src: str, dst: str) -> bool:
        """CanCast(src, dst) of libnnopbase."""
        cs, cd = self.by_name[src].category, self.by_name[dst].category
        return not any(cs in f and cd in t for f, t in self.cast_deny)


@cache
def tables() -> DtypeTables:
    """The dtype tables of specs/dtypes.yaml and specs/promotion.yaml (read once)."""
    root = specs.root()
    raw = yaml.safe_load((root / "dtypes.yaml").read_text(encoding="utf-8"))
    by_name = {
        d["name"]: DType(d["name"], int(d["value"]), d["short"], d["category"], d["numpy"])
        for d in raw["dtypes"]
    }
    promo_raw = yaml.safe_load((root / "promotion.yaml").read_text(encoding="utf-8"))
    order = promo_raw["promotion"]["order"]
    promotion: dict[tuple[str, str], str] = {}
    for a, row in zip(order, promo_raw["promotion"]["matrix"], strict=True):
        for b, res in zip(order, row, strict=True):
            promotion[(a, b)] = res
    deny = tuple(
        (frozenset(d["from"]), frozenset(d["to"])) for d in promo_raw["castability"]["deny"]
    )
    return DtypeTables(by_name, dict(raw.get("aliases", {})), promotion, deny)


def get(name: str) -> DType:
    return tables().get(name)


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format as the rounding and comparison code needs it: the one
    table of formats (the reference's midpoint test, the compiled rounding, the comparison and
    the value generators all read it; ml_dtypes.finfo is asked nowhere else)."""

    name: str
    mant: int  # stored mantissa bits (the precision p is mant + 1)
    emin: int  # exponent of the smallest normal
    emax: int  # exponent of the largest finite
    nbits: int  # storage bits
    max: float  # largest finite value
    tiny: float  # smallest normal
    smallest_subnormal: float

    @property
    def p(self) -> int:
        """Precision in bits, the implicit one included."""
        return self.mant + 1

    @property
    def all_ones(self) -> int:
        """The exponent field of infinity and NaN."""
        return (1 << (self.nbits - 1 - self.mant)) - 1


@cache
def float_formats() -> dict[str, FloatFormat]:
    """FloatFormat of every float dtype with a host type (not the opaque 8/6/4-bit formats)."""
    out = {}
    for d in tables().by_name.values():
        if d.category != "float" or d.opaque:
            continue
        fi = ml_dtypes.finfo(d.np)
        out[d.name] = FloatFormat(
            d.name,
            int(fi.nmant),
            int(fi.minexp),
            int(fi.maxexp) - 1,
            int(fi.bits),
            float(fi.max),
            float(fi.smallest_normal),
            float(fi.smallest_subnormal),
        )
    return out


def float_format(name: str) -> FloatFormat:
    """The FloatFormat of a float dtype (DtypeError for any other)."""
    f = float_formats().get(get(name).name)
    if f is None:
        raise DtypeError(f"{name} is not a float format with a host type")
    return f


# the float outputs the reference rounds correctly from float64 (DOUBLE is faithful, or exact)
NARROW_FLOATS = ("FLOAT", "FLOAT16", "BF16")
# the IEEE-style formats (infinity and NaN in the all-ones exponent) the compiled code handles
IEEE_FLOATS = (*NARROW_FLOATS, "DOUBLE")


def _round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounding to odd: exact results stay, inexact ones get an odd mantissa."""
    y = x.astype(np.float32)
    with np.errstate(invalid="ignore"):
        inexact = np.isfinite(x) & (y.astype(np.float64) != x)
    bits = y.view(np.uint32)
    even = (bits & 1) == 0
    # An overflow to inf stays inf: anything that large overflows every narrower float too.
    fix = inexact & even & np.isfinite(y)
    if np.any(fix):
        # Move one ulp towards x: the neighbour on x's side has an odd mantissa.
        toward = np.where(y.astype(np.float64) < x, np.float32(np.inf), np.float32(-np.inf))
        y = np.where(fix, np.nextafter(y, toward), y)
    return y


def round_to(values: np.ndarray, dtype: DType, out: np.ndarray | None = None) -> np.ndarray:
    """Round float64 (or complex128) values once, correctly (RNE), to `dtype`'s host storage;
    out: write them there (the output's own storage: no second copy of a chunk) and return it."""
    target = dtype.np
    values = np.asarray(values)
    # numpy's own cast is the rounding (complex: each part once; past the range: inf)
    cast = dtype.category != "float" or target in (np.dtype(np.float64), np.dtype(np.float32))
    with np.errstate(invalid="ignore", over="ignore"):
        if cast and out is not None:
            np.copyto(out, values, casting="unsafe")
            return out
        if cast:
            rounded = values.astype(target)
        elif target == np.dtype(np.float16):  # numpy rounds double->half directly
            rounded = values.astype(np.float64, copy=False).astype(np.float16)
        else:
            rounded = _round_to_odd_f32(values.astype(np.float64, copy=False)).astype(target)
    if out is None:
        return rounded
    out[...] = rounded
    return out


def tag(names: Iterable[str]) -> str:
    """The dtype part of a case id: the short names in parameter order, once if all the same
    (`f16`, `f32.bf16.f32`; `-` for none). Case ids, records and reports all use this."""
    shorts = [get(n).short for n in names]
    if not shorts:
        return "-"
    return shorts[0] if len(set(shorts)) == 1 else ".".join(shorts)
