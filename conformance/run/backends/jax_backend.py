"""JAX as a backend: an independent implementation, by differentiating the op's forward.

Each operator's spec gives, under `bindings.jax`, its forward function in the spec's own
expression language (conformance/spec/expr/language.py), evaluated with jax.numpy (conformance/spec/expr/arrays.py),
and how the call's tensors feed it:

    bindings:
      jax:
        forward: "where(self >= 0, self, negativeSlope * self)"   # sees `input` and attributes
        input: self                       # the tensor the forward takes (differentiated)
        grad: gradOutput                  # the cotangent
        unsupported_when: isResult        # optional expression over scalars, bools and strings
        unsupported_reason: "..."         # optional: why, shown with the skip
        output: gradInput                 # optional: default the formula's output

A forward op gives only `forward` (over all its tensor inputs and attributes): its output is the
forward's value, computed in the inputs' promoted dtype (fp16/bf16 in float32, an integer input
in the output's float dtype) and cast to the output dtype.

The gradient is `jax.vjp` of the forward at the input, with the gradient tensor as cotangent, both
broadcast to the output's shape and converted to their promoted dtype as JAX promotes (bf16 and
fp16 computed in float32, as PyTorch's opmath and the Ascend kernels do; float64 with x64
enabled), then cast to the output dtype with JAX. No operator is named in this module: adding
an op needs no Python. A wrong binding makes that op's cases `skip` with the reason.
Starting the backend enables x64 and the CPU platform in `jax.config` for the whole process.

Tensors are read as logical views with numpy and the result is written into a copy of the
output storage through its view with numpy: layouts do not reach a kernel here, so `strided`
only means that the adapter handles any view correctly. JAX checks no aclnn parameters (status
"none"): a call it cannot compute at all returns ACLNN_ERR_PARAM_INVALID with JAX's message.
Null pointers are skipped (a null the spec says stands for a default is that default), and so
are the variants a binding marks unsupported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...acl import dtypes as dt
from ...acl.call import Call, Outcome, ScalarArg, TensorArg
from ...spec.bindings import BindingCache, BindingError
from ...spec.expr import ir
from ...spec.expr.arrays import evaluate_with, jax_namespace
from ...spec.expr.language import Expr, ExprError, compile_expr
from ...spec.interpret import attribute_env, with_defaults
from ...spec.model import OpSpec
from ...spec.registry import UnknownOp
from ...spec.tables import status_codes
from ..backend import Backend, BackendError, Capabilities, module_available

INSTALL_HINT = "not installed — pip install 'aclnn-conformance[jax]'"


def _bits(a: np.ndarray) -> np.ndarray:
    """ml_dtypes arrays seen as same-width unsigned integers: numpy's as_strided (under
    TensorArg.view/write) rejects some of their dtypes (float8_e5m2 has typestr '<f1')."""
    return a.view(f"u{a.itemsize}") if a.dtype.type.__module__.startswith("ml_dtypes") else a


def _view(t: TensorArg) -> np.ndarray:
    """The logical elements of t (a numpy view, read-only)."""
    bits = TensorArg(t.dtype, t.shape, t.strides, t.offset, _bits(t.storage)).view()
    return bits.view(t.storage.dtype)


@dataclass(frozen=True)
class JaxBinding:
    forward: Expr
    input: str | None  # None with grad None: a forward op, evaluated over `inputs`
    grad: str | None
    output: str
    unsupported_when: Expr | None
    unsupported_reason: str
    inputs: tuple[str, ...]  # every tensor input (a forward op's forward reads them all)


def parse_jax_binding(spec: OpSpec) -> JaxBinding | None:
    """`bindings.jax` of `spec` checked against its parameters; None when the spec has none."""
    b = spec.bindings.get("jax")
    if b is None:
        return None
    raw = b.data
    inputs = [p.name for p in spec.tensor_inputs]
    forward_only = raw.get("input") is None and raw.get("grad") is None
    for key in () if forward_only else ("input", "grad"):
        if raw.get(key) not in inputs:
            raise b.error((key,), f"must name an input tensor of {spec.name} ({', '.join(inputs)})")
    outs = [p.name for p in spec.outputs]
    output = raw.get("output", spec.formula.output)
    if output not in outs:
        raise b.error(("output",), f"must name an output tensor of {spec.name} ({', '.join(outs)})")
    attrs = [p.name for p in spec.attributes]
    strings = [p.name for p in spec.attributes if p.kind == "string"]
    try:
        seen = inputs if forward_only else [raw["input"]]
        forward = compile_expr(raw["forward"], [*attrs, *seen], strings)
    except ExprError as exc:
        raise b.error(("forward",), f"{exc.message} in {raw['forward']!r}") from None
    if ir.splits(forward.ir):  # the adapter binds tensors, not the views a split makes
        raise b.error(
            ("forward",),
            "half()/concat() are not evaluated by the JAX adapter (it binds each input tensor "
            "whole, not the views a split makes): leave the op without a jax binding",
        )
    when = None
    if raw.get("unsupported_when") is not None:
        try:
            when = compile_expr(raw["unsupported_when"], attrs, strings)
        except ExprError as exc:
            raise b.error(("unsupported_when",), exc.message) from None
    reason = str(
        raw.get("unsupported_reason") or f"unsupported_when {raw.get('unsupported_when')!r} holds"
    )
    return JaxBinding(
        forward, raw.get("input"), raw.get("grad"), output, when, reason, tuple(inputs)
    )


class JaxBackend(Backend):
    """JAX on CPU with x64 enabled: gradients of forward functions by jax.vjp."""

    name = "jax"
    capabilities = Capabilities(status="none", strided=True, empty=True)

    def __init__(self, registry: Any = None, **options: Any):
        super().__init__(registry, **options)
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        self.jax = jax
        self.ns = jax_namespace(jax)
        self._bindings = BindingCache()

    binding_family = "jax"

    @classmethod
    def check_binding(cls, spec: OpSpec) -> None:
        """BindingError for a wrong `bindings.jax` (names, the forward's expression)."""
        parse_jax_binding(spec)

    @classmethod
    def availability(cls, **options: Any) -> tuple[bool, str]:
        return module_available("jax", INSTALL_HINT)

    def version(self) -> str:
        import jaxlib

        return f"jax {self.jax.__version__} (jaxlib {jaxlib.__version__}, cpu, x64)"

    def binding(self, spec: OpSpec) -> JaxBinding | None:
        """The checked binding of `spec` (cached); BindingError when it is wrong."""
        return self._bindings.get(spec, parse_jax_binding)

    def supports(self, call: Call) -> str | None:
        why = super().supports(call)
        if why:
            return why
        try:
            spec = self.spec(call)
            b = self.binding(spec)
        except (UnknownOp, BindingError) as exc:
            return f"{self.name}: {exc}"
        if b is None:
            return f"{self.name}: {spec.path} has no bindings.jax section"
        for name, arg in with_defaults(spec, call).args.items():
            if arg is None and not spec.param(name).nullable:
                return f"{self.name} has no null pointers ({name} is null)"
            if isinstance(arg, TensorArg | ScalarArg) and dt.get(arg.dtype).opaque:
                return f"{self.name} has no opaque {arg.dtype} values ({name})"
        others = [f.output for f in spec.formulas if f.output != b.output]
        if others:  # one forward expression computes one output
            return (
                f"{self.name}: bindings.jax computes {b.output} only; {spec.name} also "
                f"computes {', '.join(others)}"
            )
        when = b.unsupported_when
        if when is not None and bool(np.all(when.evaluate(attribute_env(spec, call)))):
            return f"{self.name} cannot express this variant: {b.unsupported_reason}"
        return None

    def execute(self, call: Call) -> Outcome:
        spec = self.spec(call)
        b = self.binding(spec)
        if b is None:
            raise BackendError(f"{spec.path} has no bindings.jax section")
        call = with_defaults(spec, call)  # a null standing for a default: the default
        outputs = {
            p.name: call.tensor(p.name).storage.copy()
            for p in spec.outputs
            if isinstance(call.args.get(p.name), TensorArg)
        }
        out = call.tensor(b.output)
        env = attribute_env(spec, call)
        try:
            if b.grad is None:
                tensors = {
                    n: _view(call.tensor(n)) for n in b.inputs if call.args.get(n) is not None
                }
                result = self._forward(b, tensors, env, out)
            else:
                result = self._gradient(
                    b, _view(call.tensor(b.input)), _view(call.tensor(b.grad)), env, out
                )
        except Exception as exc:  # JAX cannot compute the call (shapes, dtypes, values)
            text = str(exc).strip().splitlines()
            message = text[0][:500] if text else type(exc).__name__
            return Outcome(
                status_codes()["ACLNN_ERR_PARAM_INVALID"],
                outputs,
                f"jax cannot run the call: {message}",
            )
        bits = _bits(outputs[b.output])  # the same memory
        TensorArg(out.dtype, out.shape, out.strides, out.offset, bits).write(_bits(result))
        return Outcome(0, outputs, "")

    def _forward(
        self, b: JaxBinding, tensors: dict[str, np.ndarray], env: dict[str, Any], out: TensorArg
    ) -> np.ndarray:
        jnp = self.jax.numpy
        ctype = jnp.result_type(*(a.dtype for a in tensors.values()))
        if not jnp.issubdtype(ctype, jnp.inexact) and dt.get(out.dtype).is_float:
            ctype = dt.get(out.dtype).np  # integer inputs, float output (erfinv of an int)
        if jnp.dtype(ctype).itemsize < 4:
            ctype = jnp.float32  # fp16/bf16 math in float32 ("opmath"), as real kernels do
        xs = {
            n: jnp.broadcast_to(jnp.asarray(a).astype(ctype), out.shape) for n, a in tensors.items()
        }
        y = evaluate_with(b.forward, {**env, **xs}, self.ns)
        y = jnp.broadcast_to(jnp.asarray(y), out.shape)
        return np.asarray(y.astype(dt.get(out.dtype).np))

    def _gradient(
        self, b: JaxBinding, x: np.ndarray, g: np.ndarray, env: dict[str, Any], out: TensorArg
    ) -> np.ndarray:
        jax, jnp = self.jax, self.jax.numpy
        ctype = jnp.result_type(x.dtype, g.dtype)
        if not jnp.issubdtype(ctype, jnp.inexact):
            raise TypeError(f"cannot differentiate with respect to {ctype} values")
        if jnp.dtype(ctype).itemsize < 4:
            ctype = jnp.float32  # fp16/bf16 math in float32 ("opmath"), as real kernels do
        xs = jnp.broadcast_to(jnp.asarray(x).astype(ctype), out.shape)
        gs = jnp.broadcast_to(jnp.asarray(g).astype(ctype), out.shape)
        y, vjp = jax.vjp(lambda v: evaluate_with(b.forward, {**env, b.input: v}, self.ns), xs)
        (dx,) = vjp(gs.astype(y.dtype))
        return np.asarray(dx.astype(dt.get(out.dtype).np))
