"""The typed IR a checked spec expression is lowered into once (conformance/spec/expr/language.py
checks the text and lowers it): the whitelisted node kinds only, with constants and function names
resolved. Every evaluator walks this IR through conformance/spec/expr/walk.py; none reads Python's
`ast` again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# the operators, by the name an arithmetic's method carries
BINARY = ("add", "sub", "mul", "div", "pow")
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")


@dataclass(frozen=True)
class Num:
    """A literal: a bool, or a number as written (an int stays an int; each arithmetic converts)."""

    value: bool | int | float


@dataclass(frozen=True)
class Const:
    """A named constant of the language (pi, e, inf, nan), with its float64 value."""

    name: str
    value: float


@dataclass(frozen=True)
class Var:
    """A parameter, input or `let` name, bound in the environment."""

    name: str


@dataclass(frozen=True)
class Text:
    """A string parameter compared with literals: name == "a", name != "a", name in ("a", "b")."""

    name: str
    negate: bool  # != or not in
    choices: frozenset[str]


@dataclass(frozen=True)
class Unary:
    op: str  # "neg" or "not"
    x: Node


@dataclass(frozen=True)
class Binary:
    op: str  # one of BINARY
    a: Node
    b: Node


@dataclass(frozen=True)
class Compare:
    """A comparison chain: operands[0] ops[0] operands[1] ops[1] ... (all must hold)."""

    ops: tuple[str, ...]  # each one of COMPARE
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Logic:
    op: str  # "and" or "or"
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Where:
    cond: Node
    a: Node
    b: Node


@dataclass(frozen=True)
class Call:
    """A function of the language (FUNCTIONS in language.py) other than where."""

    fn: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Reduce:
    """A reduction of the language (REDUCTIONS in language.py) of `x` over dims: literal dims
    (`dims`, negative ones wrap), an int or int_array parameter (`param`), or every dim (both
    None). Inside an expression its value broadcasts back over the reduced dims (keepdim)."""

    fn: str
    x: Node
    dims: tuple[int, ...] | None = None
    param: str | None = None


@dataclass(frozen=True)
class Along(Reduce):
    """A row operation along one dim that reduces nothing (a gather, a position): like a
    reduction it is evaluated by rows, its dim among the formula's reduced dims (or, without
    reductions, the rows are the dims these operations run along), and where the dim lies in a
    row is handed to it (walk.GATHER: stride and size)."""


@dataclass(frozen=True)
class Gather(Along):
    """`gather(x, target, dim)`: x's element at position `index` along `dim` (a literal dim or an
    int parameter). A row operation like a reduction (fn "gather", the row being `dim`): the
    value at an element is `x` at the element of its row whose position along the row is the
    index's value there; an index that is not an integer in [0, row length) gives NaN."""

    index: Node | None = None


@dataclass(frozen=True)
class Position(Along):
    """`position(dim)`: each element's index along `dim` (a literal dim or an int parameter) as
    an integer, 0 to size - 1 -- the one-hot of a target is `position(dim) == target`. A row
    operation (fn "position"); `x` is a placeholder (Num(0)) no arithmetic evaluates."""


@dataclass(frozen=True)
class Cumsum(Along):
    """`cumsum(x, dim)`: at each element, the sum of `x` over the elements of its row along
    `dim` up to and including it (a literal dim or an int parameter). A row operation (fn
    "cumsum") like a gather: it reduces nothing, each element has its own prefix."""


def position(dims: tuple[int, ...] | None = None, param: str | None = None) -> Position:
    """The Position node along a literal dim or an int parameter's."""
    return Position("position", Num(0), dims=dims, param=param)


@dataclass(frozen=True)
class Outer:
    """`outer(x)`, inside a reduction's argument only: `x` evaluated at the element the
    innermost reduction around it is computed for, while the rest of the argument runs over
    the reduced elements -- a reduction whose term reads two elements of one row (a pairwise
    sum: `sum(maximum(0, outer(y) - x), -1)` at element j is the sum over i of
    max(0, y_j - x_i)). Such a reduction has one value per element, not one per row (see
    `paired`)."""

    x: Node


@dataclass(frozen=True)
class Half:
    """`half(x, dim, k)`: the k-th (0: first, 1: second) half of the tensor input `x` along a
    literal dim (`dim`, negative wraps) or an int parameter's (`param`). The walker reads it as
    a name, `key`, that the evaluator binds to the half's values (conformance/spec/split.py)."""

    x: str
    k: int
    dim: int | None = None
    param: str | None = None

    @property
    def key(self) -> str:
        return f"half({self.x}, {self.param if self.param is not None else self.dim}, {self.k})"


@dataclass(frozen=True)
class Concat:
    """`concat(a, b, dim)`: the value whose first half along dim is `a` and second half `b` (an
    output of the full size written per half). The walker evaluates it as
    where(`key` == 0, a, b), `key` naming the half index each element lies in, which the
    evaluator binds (conformance/spec/split.py)."""

    a: Node
    b: Node
    dim: int | None = None
    param: str | None = None

    @property
    def key(self) -> str:
        return f"concat({self.param if self.param is not None else self.dim})"


Node = (
    Num
    | Const
    | Var
    | Text
    | Unary
    | Binary
    | Compare
    | Logic
    | Where
    | Call
    | Reduce
    | Outer
    | Half
    | Concat
)


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of `node`."""
    if isinstance(node, Unary):
        return (node.x,)
    if isinstance(node, Binary):
        return (node.a, node.b)
    if isinstance(node, Compare):
        return node.operands
    if isinstance(node, Logic):
        return node.parts
    if isinstance(node, Where):
        return (node.cond, node.a, node.b)
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Gather):
        return (node.x, node.index)  # type: ignore[return-value]
    if isinstance(node, Position):
        return ()
    if isinstance(node, Reduce):
        return (node.x,)
    if isinstance(node, Concat):
        return (node.a, node.b)
    if isinstance(node, Outer):
        return (node.x,)
    return ()


# What a walk found, by the walked node's identity: a formula's nodes are immutable and live as
# long as its spec, and a run asks the same questions of the same formula for every case
# (millions of walks otherwise). The node itself is kept beside the answer, so an id reused
# after a node is freed never answers for another.
_MEMO: dict[tuple[str, int], tuple[Any, Any]] = {}
_MEMO_MAX = 1 << 16


def memo(kind: str, node: Any, compute: Any) -> Any:
    """compute(node), once per live object `node` (identity, not equality) and `kind`."""
    key = (kind, id(node))
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    value = compute(node)
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    _MEMO[key] = (node, value)
    return value


def _walk(node: Node) -> tuple[Node, ...]:
    out: list[Node] = []
    stack: list[Any] = [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(children(n))
    return tuple(out)


def walk(node: Node) -> tuple[Node, ...]:
    """`node` and every node below it."""
    return memo("walk", node, _walk)


def reductions(node: Node) -> tuple[Reduce, ...]:
    """The reductions in `node` (outermost first, each once)."""
    return memo("reduce", node, lambda x: tuple(n for n in walk(x) if isinstance(n, Reduce)))


def gathers(node: Node) -> tuple[Gather, ...]:
    """The gathers in `node`."""
    return memo("gather", node, lambda x: tuple(n for n in walk(x) if isinstance(n, Gather)))


def along(node: Node) -> tuple[Along, ...]:
    """The row operations along one dim in `node` (gathers, positions)."""
    return memo("along", node, lambda x: tuple(n for n in walk(x) if isinstance(n, Along)))


def paired(node: Reduce) -> bool:
    """Whether the reduction `node` is a paired one: its argument holds an `outer` of its own
    (not one inside a reduction nested in the argument, which is that reduction's), so that its
    value differs from element to element of a row."""
    return memo("paired", node, lambda n: bool(own_outers(n)))


def own_outers(node: Reduce) -> tuple[Outer, ...]:
    """The `outer` nodes that refer to the reduction `node`: in its argument, not inside a
    reduction or row operation nested there, nor inside another outer."""
    out: list[Outer] = []
    stack: list[Any] = [node.x]
    while stack:
        n = stack.pop()
        if isinstance(n, Outer):
            out.append(n)
        elif not isinstance(n, Reduce):
            stack.extend(children(n))
    return tuple(out)


def pair_nodes(node: Reduce) -> tuple[Reduce, ...]:
    """The reductions and row operations a paired reduction's argument evaluates over the
    reduced elements (those inside an `outer` are evaluated at the element the value is for)."""
    out: list[Reduce] = []
    stack: list[Any] = [node.x]
    while stack:
        n = stack.pop()
        if isinstance(n, Outer):
            continue
        if isinstance(n, Reduce):
            out.append(n)
        stack.extend(children(n))
    return tuple(out)


def splits(node: Node) -> tuple[Half | Concat, ...]:
    """The halves and concatenations in `node` (outermost first)."""
    return memo("split", node, lambda x: tuple(n for n in walk(x) if isinstance(n, Half | Concat)))


def names_read(node: Node) -> frozenset[str]:
    """The names `node` reads (Var nodes, dim parameters, the tensors split in halves and the
    keys the halves and concatenations are bound under)."""
    return memo("names", node, _names_read)


def _names_read(node: Node) -> frozenset[str]:
    nodes = walk(node)
    out = {n.name for n in nodes if isinstance(n, Var)}
    out |= {n.param for n in nodes if isinstance(n, Reduce | Half | Concat) and n.param}
    out |= {n.x for n in nodes if isinstance(n, Half)}
    return frozenset(out | {n.key for n in nodes if isinstance(n, Half | Concat)})
