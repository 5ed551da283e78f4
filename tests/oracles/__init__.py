"""Independent per-operator test oracles: one module per spec, `tests/oracles/<spec name>.py`.

Each module is written by hand from the vendor docs (shared/seeds/) and the fact sheet
(shared/research/aclnn-facts.md). It must never import the code under test (conformance/,
reference/, reports/, cli/) nor read the specs (tests/test_oracles.py checks its imports): its
formulas, dtype lists and error tables are what the specs are checked against. Helpers shared by
the modules live in `tests/oracles/_common.py` (a name starting with `_` is not an oracle).

An operator of the registry without a module here is checked by the op-generic tests only;
tests/test_oracles.py lists such operators (a warning, not a failure) and fails on a module whose
name is not an operator of the registry (a stale oracle).

The interfaces, by the module's KIND:

- KIND = "elementwise" (default for new modules; forward and backward ops of the activation
  family): the exact value of one output element from the input elements.
      OUT: str, INPUTS: tuple[str, ...] (tensor inputs in C order), PRODUCTS: tuple[str, ...]
      value(t, s) -> mpf | float     t: {input: the element's exact value as an mpmath mpf},
                                     s: the non-tensor arguments (a FLOAT scalar as the float32
                                     it holds); a float for an IEEE special (nan, +-inf)
      SETTINGS: list[dict]           full non-tensor argument dicts to test
      DOMAIN: {input: (lo, hi)}      uniform draw range per tensor input
      SPECIAL: list[float]           values every tensor input is also tried at
      allowed(param, product) -> set[str]   the doc's dtype list of a tensor parameter
      base_scalars() -> dict         the non-tensor arguments of a valid call
      out_dtype(dtype) -> str        (optional) the output dtype of inputs of `dtype`
                                     (default: the same)
  tests/test_family_oracles.py runs them.
- KIND = "loss" (the forward losses with a `reduction` 0 none / 1 mean / 2 sum): the exact loss
  of one element, reduced by the test.
      OUT, INPUTS, PRODUCTS, SETTINGS, DOMAIN, allowed, base_scalars: as "elementwise"
      REDUCTION: str                 the int parameter naming the reduction
      element(t, s) -> mpf           l_n of one element of the broadcast inputs
      shapes(sa, sb) -> dict         (optional) each input's shape from the test's pair of
                                     shapes (default: the first input sa, the second sb, the
                                     rest sa), for inputs that must share a shape
  tests/test_loss_oracles.py runs them.
- KIND = "halves" (the GLU family: a tensor split in halves along a dim): the exact output
  element(s) from the halves' elements.
      SPLIT: str (the tensor split), DIM: str (its dim parameter), GRAD: str | None (an input
      of the half's shape), OUT: str, FULL_OUT: bool (out has SPLIT's shape, written per half,
      else the half's shape), PRODUCTS, allowed(param, product), base_scalars()
      value(a, b, g) -> mpf, or (first half's mpf, second half's) when FULL_OUT
      DIM may be an int instead: the op always splits that dim (no dim parameter; aclnnGeluMul's
      last dim); TENSORS (optional): {tensor input: shape} filled with the setting's value of
      that name in the dtype under test (aclnnFatreluMul's one-element threshold)
  tests/test_split.py runs them on every dim of ranks 1-4.
- KIND = "classes" (a class dim and an integer target: the NLL backwards): the exact output
  from whole input arrays.
      OUT, PRODUCTS, allowed(param, product): as "elementwise"
      SHAPES: tuple of self's shapes to test, DIM: the class dim
      draw(rng, shape, reduction, ignore) -> {tensor input: float64 / int64 array}
      value(arrays, s) -> object array of mpf (OUT's shape; s: reduction, ignoreIndex)
  tests/test_class_oracles.py runs them.
- KIND = "rows" (several outputs per row of 2-D inputs of one shape, no attributes:
  aclnnSoftmaxCrossEntropyWithLogits): the exact outputs from whole input arrays.
      INPUTS: tuple (tensor inputs, C order; the first gives the dtype list), OUTS: tuple,
      PRODUCTS, allowed(param, product): as "elementwise"
      SHAPES: tuple of the inputs' (N, C) shapes to test
      draw(rng, shape) -> {tensor input: float64 array}
      value(arrays) -> {output: object array of mpf or IEEE special floats, the output's shape}
  tests/test_row_oracles.py runs them.
- KIND = "smoothed_classes" (a class dim of 2-D inputs, an integer target with an ignore
  index, a class weight, a reduction and a label smoothing: aclnnCrossEntropyLoss and its
  grad): the exact outputs from whole input arrays.
      OUTS: tuple, PRODUCTS, allowed(param, product): as "rows"
      SHAPES: tuple of the input's (N, C) shapes to test
      REDUCTIONS: tuple of reduction values, SMOOTHING: tuple of label smoothings to test
      draw(rng, shape, reduction, ignore, weighted) -> {tensor input: float64 / int64 array}
      value(arrays, s) -> {output: object array of mpf or IEEE special floats} (s: the call's
                          reduction, ignoreIndex, labelSmoothing)
  tests/test_smoothed_class_oracles.py runs them.
- KIND = "dim_rows" (tensor inputs of one shape, an int dim parameter, one output of that
  shape, each output slice along dim computed from the inputs' slices: aclnnSoftmax,
  aclnnLogSoftmax and their backwards): the exact output from whole input arrays.
      INPUTS: tuple (tensor inputs, C order; the first gives the dtype list), OUT: str,
      DIM: str (the dim parameter; negative dims wrap, a rank-0 input counts as rank 1),
      PRODUCTS, allowed(param, product): as "elementwise" (DOUBLE included where the doc has it)
      SHAPES: tuple of the inputs' shapes to test (ranks 0 to 4; every dim of each is tested)
      draw(rng, shape) -> {tensor input: float64 array}
      value(arrays, dim) -> object array of mpf or IEEE special floats, the output's shape
                          (mpmath per slice along dim at the caller's working precision)
  tests/test_dim_row_oracles.py runs them.
- KIND = "target_lists" (a class dim whose integer target lists each row's classes, ended by
  -1, an int reduction 0 none / 1 mean / 2 sum, and several outputs: aclnnMultilabelMarginLoss):
  the exact outputs from whole input arrays.
      OUTS: tuple, PRODUCTS, allowed(param, product): as "rows" (allowed also for the target)
      SHAPES: tuple of self's shapes to test (ranks 0 to 2; target has self's shape)
      REDUCTIONS: tuple of reduction values
      draw(rng, shape) -> {self: float64 array, target: int64 array}
      value(arrays, reduction) -> {output: object array of Fractions (inf where infinite) or a
                                  float array, in that output's shape}
      HARD: list of (self rows, target rows): hand-picked 2-D inputs (ties, magnitudes, IEEE
            specials, repeated targets, rows of -1 alone and with no -1)
  tests/test_target_list_oracles.py runs them.
- no KIND (the "gradient" interface of the five seed ops), below.

The gradient interface (every name is required unless marked optional). `s` is always a dict of the call's
non-tensor arguments by parameter name, a FLOAT scalar given as the float32 value it holds.

Call shape
  X: str                   the input tensor the derivative depends on (the other is gradOutput)
  OUT: str                 the output tensor
  PRODUCTS: tuple[str,...] the products of the docs, in the docs' order

Formula (tests/test_engine_vs_mpmath.py)
  DTYPES: tuple[str,...]   dtypes checked against mpmath (every tensor of one dtype)
  factor(x: float, s) -> (branch id, f)
                           gradInput = gradOutput * f for one element x of X: f is an mpmath mpf
                           exact at the current mpmath precision, a float (an IEEE special: the
                           result is then gradOutput * float64(f)), or ZERO_RESULT (the constant 0)
  BRANCHES: {branch id: (settings, gen)}
                           each formula branch's scalar settings and a generator
                           gen(rng, n, s) -> float64 array of x values meant to fall in it
  SPECIAL_SETTINGS: list[dict]           settings for the special-value grid
  special_x(s, dtype, neighbours) -> list[float]
                           the branch boundaries for a setting; neighbours(v, dtype) gives v
                           rounded to the dtype and two representable values either side
  SPECIAL_POINTS: {point id: (overrides, x(s))}
                           each spec special point: its `with:` arguments and the x it names
  MIXED: list[(gradOutput dtype, x dtype, output dtype, setting)]  one rounding after promotion
  REGRESSIONS: list[Regression]          single elements float64 alone gets wrong

Error rules (tests/test_error_rules.py)
  NULLABLE: list[str]      the parameters a null pointer is reported for (161001)
  allowed(param, product) -> set[str]    the dtype list of a tensor or scalar parameter
  base_scalars() -> dict   the non-tensor arguments of a valid call (Scalar(dtype, value) for an
                           aclScalar, bool and str as they are)
  SCALAR_RULES: list[(params, clause, bad dtypes or None)]
                           the dtype rule of each scalar (None: the dtypes allowed() does not list)
  dtype_case(key, param, dtype) -> (clause, changes)   (optional) the clause a disallowed dtype
                           of one tensor (key g, x or o) hits and the call's changes
  error_cases(case)        the op's own calls: case(product, desc, status, clause=None, *, g=,
                           x=, o=, gs=, xs=, os=, **argument changes), see test_error_rules.case
  UNREACHABLE: {clause: reason}          checks no call can be the first to fail

Case generation (tests/test_generate.py)
  dtype_combos(product) -> set[tuple[(param, dtype), ...]]   every valid tensor dtype assignment
  scalar_dtypes(product, param) -> set[str]                  the dtypes a scalar may have
  POINT_VALUES: {point id: float}        each special point's value before rounding, with the
                                         spec's defaults and `with:` arguments
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def names() -> list[str]:
    """The oracle modules present, by spec name (helpers starting with `_` left out)."""
    return sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if not m.name.startswith("_"))


def load(spec_name: str) -> ModuleType | None:
    """The oracle module of the spec `spec_name`, or None when it has none."""
    if spec_name.startswith("_") or spec_name not in names():
        return None
    return importlib.import_module(f"{__name__}.{spec_name}")


def kind(mod: ModuleType) -> str:
    """The interface a module implements: "elementwise" or "gradient"."""
    return getattr(mod, "KIND", "gradient")


def of(spec_names, of_kind: str = "gradient") -> dict[str, ModuleType]:
    """{spec name: oracle module} for those of `spec_names` that have one of the interface
    `of_kind`, in their order."""
    out = {}
    for name in spec_names:
        mod = load(name)
        if mod is not None and kind(mod) == of_kind:
            out[name] = mod
    return out
