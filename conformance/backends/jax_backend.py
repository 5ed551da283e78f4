"""JAX as a backend: an independent implementation, by differentiating forward functions.

Each operator's spec names, under `bindings.jax` (validated on load; errors name the file and
line), one of the forward functions of `forwards()` below, written with JAX's own functions, and
how the call's parameters feed it:

    bindings:
      jax:
        forward: elu                      # a key of FORWARD_PARAMS
        input: selfOrResult               # the tensor the forward takes (differentiated)
        grad: gradOutput                  # the cotangent
        params: {alpha: alpha, input_scale: inputScale}   # forward keyword -> spec parameter
        unsupported_when: isResult        # optional expression over scalars, bools and strings
        unsupported_reason: "..."         # optional: why, shown with the skip
        output: gradInput                 # optional: default the formula's output

The gradient is `jax.vjp` of the forward at the input, with the gradient tensor as cotangent, both
broadcast to the output's shape and converted to their promoted dtype as JAX promotes (bf16 and
fp16 computed in float32, as PyTorch's opmath and the Ascend kernels do; float64 with x64
enabled), then cast to the output dtype with JAX.
Starting the backend enables x64 and the CPU platform in `jax.config` for the whole process.

Tensors are read as logical views with numpy and the result is written into a copy of the
output storage through its view with numpy: layouts do not reach a kernel here, so `strided`
only means that the adapter handles any view correctly. JAX checks no aclnn parameters (status
"none"): a call it cannot compute at all returns ACLNN_ERR_PARAM_INVALID with JAX's message.
Null pointers are skipped, and so are the variants a binding marks unsupported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance import dtypes as dt
from conformance.backend import Backend, BackendError, Capabilities, module_available, preload
from conformance.call import Call, Outcome, ScalarArg, TensorArg
from conformance.expr import Expr, ExprError, compile_expr
from conformance.loader import status_codes
from conformance.registry import UnknownOp, default_registry
from conformance.rules import attribute_env
from conformance.spec import OpSpec
from conformance.yamlpos import YamlError
from conformance.yamlpos import load as load_yaml

INSTALL_HINT = "not installed — pip install 'aclnn-conformance[jax]'"
# forward name -> the keyword parameters it takes (all optional; the defaults are PyTorch's)
FORWARD_PARAMS: dict[str, tuple[str, ...]] = {
    "leaky_relu": ("negative_slope",),
    "hardshrink": ("lambd",),
    "softplus": ("beta", "threshold"),
    "gelu": ("approximate",),
    "elu": ("alpha", "scale", "input_scale"),
}


def forwards(jax: Any) -> dict[str, Any]:
    """The forward functions, written with JAX's own functions (`jax` imported by the caller)."""
    jnp = jax.numpy

    def leaky_relu(x, negative_slope=0.01):
        return jax.nn.leaky_relu(x, negative_slope)

    def hardshrink(x, lambd=0.5):
        # PyTorch's forward: 0 in the dead zone |x| <= lambd, x elsewhere (NaN passes through)
        return jnp.where(jnp.abs(x) <= lambd, jnp.zeros_like(x), x)

    def softplus(x, beta=1.0, threshold=20.0):
        # PyTorch's forward: x where x*beta > threshold, else log1p(exp(beta*x))/beta. The linear
        # side feeds 0 to the other branch so that its gradient is not 0 * inf = NaN.
        linear = x * beta > threshold
        safe = jnp.where(linear, jnp.zeros_like(x), x)
        return jnp.where(linear, x, jnp.log1p(jnp.exp(beta * safe)) / beta)

    def gelu(x, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate must be 'none' or 'tanh', not {approximate!r}")
        return jax.nn.gelu(x, approximate=approximate == "tanh")

    def elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
        # x <= 0 takes the exponential side (so x = 0 does, and NaN x takes the linear one, as in
        # PyTorch's kernel); the linear side feeds 0 to expm1 to keep its gradient finite.
        neg = x <= 0
        safe = jnp.where(neg, x, jnp.zeros_like(x))
        return jnp.where(neg, alpha * scale * jnp.expm1(safe * input_scale), scale * x)

    return {"leaky_relu": leaky_relu, "hardshrink": hardshrink, "softplus": softplus,
            "gelu": gelu, "elu": elu}  # fmt: skip


def _bits(a: np.ndarray) -> np.ndarray:
    """ml_dtypes arrays seen as same-width unsigned integers: numpy's as_strided (under
    TensorArg.view/write) rejects some of their dtypes (float8_e5m2 has typestr '<f1')."""
    return a.view(f"u{a.itemsize}") if a.dtype.type.__module__.startswith("ml_dtypes") else a


def _view(t: TensorArg) -> np.ndarray:
    """The logical elements of t (a numpy view, read-only)."""
    bits = TensorArg(t.dtype, t.shape, t.strides, t.offset, _bits(t.storage)).view()
    return bits.view(t.storage.dtype)


class BindingError(ValueError):
    """A malformed `bindings.jax` section; the message names the spec file and line."""


@dataclass(frozen=True)
class JaxBinding:
    forward: str
    input: str
    grad: str
    params: tuple[tuple[str, str], ...]
    output: str
    unsupported_when: Expr | None
    unsupported_reason: str


def parse_jax_binding(spec: OpSpec) -> JaxBinding | None:
    """`bindings.jax` of `spec` checked against its parameters; None when the spec has none."""
    if not spec.path:
        return None
    try:
        doc = load_yaml(spec.path)
    except YamlError as exc:
        raise BindingError(str(exc)) from None
    raw = ((doc.data.get("bindings") or {}) if isinstance(doc.data, dict) else {}).get("jax")
    if raw is None:
        return None
    base = ("bindings", "jax")

    def bad(key: tuple[Any, ...], msg: str) -> BindingError:
        path = ".".join(str(k) for k in (*base, *key))
        return BindingError(f"{doc.file}:{doc.line((*base, *key))}: {path}: {msg}")

    if not isinstance(raw, dict):
        raise bad((), "must be a mapping")
    fields = {"forward", "input", "grad", "params", "output", "unsupported_when",
              "unsupported_reason"}  # fmt: skip
    unknown = sorted(set(raw) - fields)
    if unknown:
        raise bad(
            (), f"unknown field(s) {', '.join(map(str, unknown))} ({', '.join(sorted(fields))})"
        )
    fwd = raw.get("forward")
    if fwd not in FORWARD_PARAMS:
        raise bad(("forward",), f"{fwd!r} is not a forward function (known: {', '.join(FORWARD_PARAMS)})")  # fmt: skip
    inputs = [p.name for p in spec.tensor_inputs]
    for key in ("input", "grad"):
        if raw.get(key) not in inputs:
            raise bad((key,), f"must name an input tensor of {spec.name} ({', '.join(inputs)})")
    outs = [p.name for p in spec.outputs]
    output = raw.get("output", spec.formula.output)
    if output not in outs:
        raise bad(("output",), f"must name an output tensor of {spec.name} ({', '.join(outs)})")
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        raise bad(("params",), "must map forward keywords to parameter names")
    attrs = [p.name for p in spec.attributes]
    for key, name in params.items():
        if key not in FORWARD_PARAMS[fwd]:
            raise bad(("params", key), f"{fwd} takes no {key!r} (takes: {', '.join(FORWARD_PARAMS[fwd])})")  # fmt: skip
        if name not in attrs:
            raise bad(("params", key), f"{name!r} is not a scalar, bool or string parameter of {spec.name}")  # fmt: skip
    when = None
    if raw.get("unsupported_when") is not None:
        strings = [p.name for p in spec.attributes if p.kind == "string"]
        try:
            when = compile_expr(raw["unsupported_when"], attrs, strings)
        except ExprError as exc:
            raise bad(("unsupported_when",), exc.message) from None
    reason = str(raw.get("unsupported_reason") or f"unsupported_when {raw.get('unsupported_when')!r} holds")  # fmt: skip
    return JaxBinding(fwd, raw["input"], raw["grad"], tuple(params.items()), output, when, reason)


class JaxBackend(Backend):
    """JAX on CPU with x64 enabled: gradients of forward functions by jax.vjp."""

    name = "jax"
    capabilities = Capabilities(status="none", strided=True, empty=True)

    def __init__(self, **options: Any):
        super().__init__(**options)
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        self.jax = jax
        self.forwards = forwards(jax)
        self._bindings: dict[tuple[str, str], JaxBinding | None] = {}
        preload(self.binding, BindingError)

    @classmethod
    def availability(cls, **options: Any) -> tuple[bool, str]:
        return module_available("jax", INSTALL_HINT)

    def version(self) -> str:
        import jaxlib

        return f"jax {self.jax.__version__} (jaxlib {jaxlib.__version__}, cpu, x64)"

    def binding(self, spec: OpSpec) -> JaxBinding | None:
        key = (spec.name, spec.sha256)
        if key not in self._bindings:
            self._bindings[key] = parse_jax_binding(spec)
        return self._bindings[key]

    def supports(self, call: Call) -> str | None:
        why = super().supports(call)
        if why:
            return why
        try:
            spec = default_registry().get(call.op)
        except UnknownOp as exc:
            return str(exc)
        b = self.binding(spec)
        if b is None:
            return f"{self.name}: {spec.path} has no bindings.jax section"
        for name, arg in call.args.items():
            if arg is None:
                return f"{self.name} has no null pointers ({name} is null)"
            if isinstance(arg, TensorArg | ScalarArg) and dt.get(arg.dtype).opaque:
                return f"{self.name} has no opaque {arg.dtype} values ({name})"
        when = b.unsupported_when
        if when is not None and bool(np.all(when.evaluate(attribute_env(spec, call)))):
            return f"{self.name} cannot express this variant: {b.unsupported_reason}"
        return None

    def execute(self, call: Call) -> Outcome:
        spec = default_registry().get(call.op)
        b = self.binding(spec)
        if b is None:
            raise BackendError(f"{spec.path} has no bindings.jax section")
        outputs = {p.name: call.tensor(p.name).storage.copy() for p in spec.outputs}
        out = call.tensor(b.output)
        env = attribute_env(spec, call)
        params = {key: env[name] for key, name in b.params}
        try:
            result = self._gradient(b, _view(call.tensor(b.input)), _view(call.tensor(b.grad)),
                                    params, out)  # fmt: skip
        except Exception as exc:  # JAX cannot compute the call (shapes, dtypes, values)
            text = str(exc).strip().splitlines()
            message = text[0][:500] if text else type(exc).__name__
            return Outcome(status_codes()["ACLNN_ERR_PARAM_INVALID"], outputs,
                           f"jax cannot run the call: {message}")  # fmt: skip
        bits = _bits(outputs[b.output])  # the same memory
        TensorArg(out.dtype, out.shape, out.strides, out.offset, bits).write(_bits(result))
        return Outcome(0, outputs, "")

    def _gradient(
        self, b: JaxBinding, x: np.ndarray, g: np.ndarray, params: dict[str, Any], out: TensorArg
    ) -> np.ndarray:
        jax, jnp = self.jax, self.jax.numpy
        ctype = jnp.result_type(x.dtype, g.dtype)
        if not jnp.issubdtype(ctype, jnp.inexact):
            raise TypeError(f"cannot differentiate with respect to {ctype} values")
        if jnp.dtype(ctype).itemsize < 4:
            ctype = jnp.float32  # fp16/bf16 math in float32 ("opmath"), as real kernels do
        xs = jnp.broadcast_to(jnp.asarray(x).astype(ctype), out.shape)
        gs = jnp.broadcast_to(jnp.asarray(g).astype(ctype), out.shape)
        fwd = self.forwards[b.forward]
        y, vjp = jax.vjp(lambda v: fwd(v, **params), xs)
        (dx,) = vjp(gs.astype(y.dtype))
        return np.asarray(dx.astype(dt.get(out.dtype).np))
