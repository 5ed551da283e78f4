"""Shape rules: a tensor parameter's `shape:` (docs/spec-format.md "Shape rules").

A rule computes a tensor's shape from the shapes of other tensors (earlier in the parameter list,
or later: a gradient that comes before the input it is half of; `rule_order` derives them in an
order where every tensor read comes first, and refuses a cycle) and from int, int_array and bool
parameters. The text is parsed by the small grammar below, never
executed; a conditional rule's `when:` goes through the expression language's whitelist.

    rule  := NAME                          same shape as tensor NAME
           | scalar                        rank 0
           | broadcast(NAME, NAME, ...)    the broadcast shape
           | reduce(NAME, DIMS, KEEP)      DIMS: `all`, an int, [int, ...] or an int / int_array
                                           parameter; KEEP: true / false or a bool parameter;
                                           NAME may be broadcast(NAME, ...) (the reduced shape
                                           of a broadcast: a loss's mean over dim 0)
           | split(NAME, DIM, INT)         size along DIM divided by INT (DIM: int or int param)
           | [ITEM, ...]                   ITEM: NAME.K (size K of NAME, negative K wraps) or INT
    YAML  := rule | [{when: EXPR, value: rule}, ..., {when: otherwise, value: rule}]

`shape_of(rule, shapes, attrs)` is the one public evaluator: the case generator, the checks
(shape_is), the reference, the ATK importer and the backends all ask it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .expr.language import MAX_DIMS, NUMEL, SIZE, Expr, ExprError, compile_expr

FORMS = ("same", "scalar", "broadcast", "reduce", "split", "list")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_INT = r"-?\d+"


class ShapeSyntaxError(ValueError):
    """A rule's text does not parse (the linter reports it at the rule's line)."""


class ShapeError(ValueError):
    """A rule that cannot be met by a call's shapes (a dim out of range, an odd split, shapes
    that do not broadcast, no `when` holding)."""


@dataclass(frozen=True)
class ShapeTerm:
    """One unconditional rule. `names`: the tensors read; `dims`: reduce's dims (a tuple of
    ints, a parameter's name, or "all") or split's dim (an int or a name); `keepdim`: a bool or
    a bool parameter's name; `n`: split's divisor; `items`: a list rule's (tensor, k) or
    (None, size) pairs."""

    form: str
    names: tuple[str, ...] = ()
    dims: Any = None
    keepdim: bool | str = False
    n: int = 1
    items: tuple[tuple[str | None, int], ...] = ()
    text: str = ""
    of: ShapeTerm | None = None  # reduce over a broadcast: reduce(broadcast(a, b), dims, keep)

    def params(self) -> tuple[str, ...]:
        """The non-tensor parameters the term reads."""
        out = []
        if isinstance(self.dims, str) and self.dims != "all":
            out.append(self.dims)
        if isinstance(self.keepdim, str):
            out.append(self.keepdim)
        return tuple(out)


@dataclass(frozen=True)
class ShapeRule:
    """A `shape:` field: (condition, term) pairs tried in order, None for `otherwise`."""

    cases: tuple[tuple[Expr | None, ShapeTerm], ...]

    @property
    def tensors(self) -> tuple[str, ...]:
        """Every tensor any branch reads, in order of first mention."""
        return tuple(dict.fromkeys(n for _, t in self.cases for n in t.names))

    @property
    def params(self) -> tuple[str, ...]:
        """Every non-tensor parameter the rule reads (dims, keepdim, `when` names)."""
        names: list[str] = []
        for cond, t in self.cases:
            names += sorted(cond.names) if cond is not None else []
            names += t.params()
        return tuple(dict.fromkeys(names))

    def terms(self) -> tuple[ShapeTerm, ...]:
        return tuple(t for _, t in self.cases)

    def __str__(self) -> str:
        if len(self.cases) == 1 and self.cases[0][0] is None:
            return self.cases[0][1].text
        return "; ".join(
            f"when {c.source if c is not None else 'otherwise'}: {t.text}" for c, t in self.cases
        )


def parse_term(text: Any) -> ShapeTerm:
    """One rule's text (see the module docstring); raises ShapeSyntaxError."""
    if isinstance(text, list):  # YAML's own list: [self.0, 3]
        text = "[" + ", ".join(str(x) for x in text) + "]"
    if not isinstance(text, str) or not text.strip():
        raise ShapeSyntaxError(f"a shape rule is text, not {text!r}")
    s = text.strip()
    if len(s) > 400:
        raise ShapeSyntaxError("a shape rule longer than 400 characters")
    if s == "scalar":
        return ShapeTerm("scalar", text=s)
    if re.fullmatch(_NAME, s):
        return ShapeTerm("same", (s,), text=s)
    if s.startswith("[") and s.endswith("]"):
        items: list[tuple[str | None, int]] = []
        for part in _split_args(s[1:-1], s):
            if m := re.fullmatch(rf"({_NAME})\.({_INT})", part):
                items.append((m.group(1), int(m.group(2))))
            elif re.fullmatch(r"\d+", part):
                items.append((None, int(part)))
            else:
                raise ShapeSyntaxError(f"{part!r} in {s!r}: a size is NAME.K or an integer")
        names = tuple(dict.fromkeys(n for n, _ in items if n is not None))
        return ShapeTerm("list", names, items=tuple(items), text=s)
    m = re.fullmatch(rf"({_NAME})\s*\((.*)\)", s, re.S)
    if not m:
        raise ShapeSyntaxError(
            f"{s!r} is not a shape rule (a tensor name, scalar, broadcast(...), reduce(...), "
            "split(...) or [sizes])"
        )
    fn, args = m.group(1), _split_args(m.group(2), s)
    if fn == "broadcast":
        if not args or not all(re.fullmatch(_NAME, a) for a in args):
            raise ShapeSyntaxError(f"{s!r}: broadcast takes tensor names")
        return ShapeTerm("broadcast", tuple(args), text=s)
    if fn == "reduce":
        if len(args) != 3:
            raise ShapeSyntaxError(f"{s!r}: reduce(tensor, dims, keepdim)")
        of = None
        if not re.fullmatch(_NAME, args[0]):
            of = parse_term(args[0])  # reduce(broadcast(a, b), 0, false)
            if of.form != "broadcast":
                raise ShapeSyntaxError(
                    f"{s!r}: reduce's first argument is a tensor or broadcast(...)"
                )
        names = of.names if of is not None else (args[0],)
        return ShapeTerm(
            "reduce", names, dims=_dims(args[1], s), keepdim=_keep(args[2], s), text=s, of=of
        )
    if fn == "split":
        if len(args) != 3 or not re.fullmatch(_NAME, args[0]):
            raise ShapeSyntaxError(f"{s!r}: split(tensor, dim, n)")
        dim = _dims(args[1], s)
        if dim == "all" or (isinstance(dim, tuple) and len(dim) != 1):
            raise ShapeSyntaxError(f"{s!r}: split's dim is one int or an int parameter")
        if not re.fullmatch(r"\d+", args[2]) or int(args[2]) < 1:
            raise ShapeSyntaxError(f"{s!r}: split's n is a positive integer")
        d = dim[0] if isinstance(dim, tuple) else dim
        return ShapeTerm("split", (args[0],), dims=d, n=int(args[2]), text=s)
    raise ShapeSyntaxError(f"{s!r}: unknown shape function {fn!r} (broadcast, reduce, split)")


def _split_args(body: str, whole: str) -> list[str]:
    """Comma-separated arguments, a [...] list or a (...) call kept whole."""
    out, depth, cur = [], 0, ""
    for ch in body:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth < 0:
                raise ShapeSyntaxError(f"{whole!r}: unbalanced brackets")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if depth:
        raise ShapeSyntaxError(f"{whole!r}: unbalanced brackets")
    if cur.strip() or out:
        out.append(cur.strip())
    if any(not a for a in out):
        raise ShapeSyntaxError(f"{whole!r}: an empty argument")
    return out


def _dims(a: str, whole: str) -> tuple[int, ...] | str:
    if a == "all" or re.fullmatch(_NAME, a):
        return a
    if re.fullmatch(_INT, a):
        return (int(a),)
    if a.startswith("[") and a.endswith("]"):
        parts = [p.strip() for p in a[1:-1].split(",") if p.strip()]
        if all(re.fullmatch(_INT, p) for p in parts):
            return tuple(int(p) for p in parts)
    raise ShapeSyntaxError(f"{whole!r}: dims {a!r} is `all`, an int, [ints] or a parameter")


def _keep(a: str, whole: str) -> bool | str:
    if a in ("true", "True"):
        return True
    if a in ("false", "False"):
        return False
    if re.fullmatch(_NAME, a):
        return a
    raise ShapeSyntaxError(f"{whole!r}: keepdim {a!r} is true, false or a bool parameter")


def parse_rule(value: Any, known: Iterable[str] = (), strings: Iterable[str] = ()) -> ShapeRule:
    """A `shape:` field: a rule, or a list of {when, value} (the last `when: otherwise`).
    `known` / `strings`: the parameters a `when` may read. Raises ShapeSyntaxError."""
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        return ShapeRule(((None, parse_term(value)),))
    cases: list[tuple[Expr | None, ShapeTerm]] = []
    for i, item in enumerate(value):
        if set(item) != {"when", "value"}:
            raise ShapeSyntaxError(f"case {i + 1}: each case is {{when: ..., value: ...}}")
        when = item["when"]
        cond = None
        if when != "otherwise":
            try:
                cond = compile_expr(when, known, strings)
            except ExprError as exc:
                raise ShapeSyntaxError(f"case {i + 1}: when {when!r}: {exc.message}") from None
        elif i != len(value) - 1:
            raise ShapeSyntaxError(f"case {i + 1}: `when: otherwise` must be the last case")
        cases.append((cond, parse_term(item["value"])))
    return ShapeRule(tuple(cases))


def _wrap(d: int, rank: int, what: str) -> int:
    top = max(rank, 1)
    if not -top <= d < top:
        raise ShapeError(f"{what}: dim {d} is out of range for rank {rank}")
    return d % top


def term_shape(
    term: ShapeTerm, shapes: Mapping[str, tuple[int, ...]], attrs: Mapping[str, Any]
) -> tuple[int, ...]:
    """One term's shape; ShapeError where the call's shapes cannot meet it."""
    got = {n: tuple(int(x) for x in shapes[n]) for n in term.names if n in shapes}
    missing = [n for n in term.names if n not in got]
    if missing:
        raise ShapeError(f"{term.text}: tensor {missing[0]} has no shape (null?)")
    if term.form == "scalar":
        return ()
    if term.form == "same":
        return got[term.names[0]]
    if term.form == "broadcast":
        try:
            return tuple(int(n) for n in np.broadcast_shapes(*got.values()))
        except ValueError:
            raise ShapeError(
                f"{term.text}: shapes do not broadcast: "
                + " vs ".join(str(list(s)) for s in got.values())
            ) from None
    if term.form == "list":
        out = []
        for name, k in term.items:
            if name is None:
                out.append(k)
            else:
                s = got[name]
                if not -len(s) <= k < len(s):
                    raise ShapeError(f"{term.text}: {name} has no size {k} (rank {len(s)})")
                out.append(s[k])
        return tuple(out)
    x = term_shape(term.of, shapes, attrs) if term.of is not None else got[term.names[0]]
    if term.form == "split":
        d = _value(term.dims, attrs, term)
        if isinstance(d, list | tuple):
            raise ShapeError(f"{term.text}: split's dim must be one int, not {d!r}")
        k = _wrap(int(d), len(x), term.text)
        if len(x) == 0 or x[k] % term.n:
            raise ShapeError(f"{term.text}: size {x[k] if x else 1} is not divisible by {term.n}")
        return x[:k] + (x[k] // term.n,) + x[k + 1 :]
    # reduce
    if term.dims == "all":
        dims = tuple(range(len(x)))
    else:
        v = _value(term.dims, attrs, term)
        raw = [int(d) for d in (v if isinstance(v, list | tuple) else [v])]
        dims = tuple(_wrap(d, len(x), term.text) for d in raw)
        if len(set(dims)) != len(dims):
            raise ShapeError(f"{term.text}: dims {raw} name a dim twice")
        dims = tuple(d for d in dims if d < len(x))  # rank 0: dim 0 / -1 is its one element
    keep = bool(_value(term.keepdim, attrs, term))
    if keep:
        return tuple(1 if i in dims else n for i, n in enumerate(x))
    return tuple(n for i, n in enumerate(x) if i not in dims)


def _value(v: Any, attrs: Mapping[str, Any], term: ShapeTerm) -> Any:
    if isinstance(v, str) and v != "all":
        if attrs.get(v) is None:
            raise ShapeError(f"{term.text}: parameter {v} has no value")
        return attrs[v]
    return v


def shape_of(
    rule: ShapeRule, shapes: Mapping[str, tuple[int, ...]], attrs: Mapping[str, Any]
) -> tuple[int, ...]:
    """The shape `rule` gives, from the tensors' `shapes` (name -> shape) and the non-tensor
    parameters' values `attrs` (name -> int, list of ints, bool or string). Raises ShapeError
    where the shapes cannot meet it (say why)."""
    env = dict(attrs)
    for name, s in shapes.items() if len(rule.cases) > 1 else ():  # numel(x), size(x, k)
        env[NUMEL.format(name)] = math.prod(int(n) for n in s)
        dims = tuple(s) or (1,)
        for k in range(-min(len(dims), MAX_DIMS), min(len(dims), MAX_DIMS)):
            env[SIZE.format(name, k)] = int(dims[k])
    for cond, term in rule.cases:
        if cond is None or bool(np.all(cond.evaluate(env))):
            return term_shape(term, shapes, attrs)
    raise ShapeError(f"shape rule {rule}: no `when` holds")


def rule_order(params: Iterable[Any]) -> list[Any]:
    """The parameters with a shape rule (objects with .name and .shape) in an order where each
    comes after the ruled tensors its rule reads (parameter order where it can); ValueError
    naming the tensors of a cycle."""
    ruled = {p.name: p for p in params if getattr(p, "shape", None) is not None}
    done: list[Any] = []
    todo = list(ruled.values())
    while todo:
        ready = [p for p in todo if not (set(p.shape.tensors) & {q.name for q in todo})]
        if not ready:
            names = ", ".join(p.name for p in todo)
            raise ValueError(f"the shape rules of {names} read each other (a cycle)")
        done.append(ready[0])
        todo.remove(ready[0])
    return done
