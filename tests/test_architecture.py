"""The package's architecture (docs/architecture.md), checked on the installed package's source.

The import graph is read with `ast` from every module under `aclnn_conformance`: imports inside
functions count, relative imports are resolved, `if TYPE_CHECKING:` imports count for the layer
order (a type is a dependency too) but not for cycles (they never run). Two rules:

- no cycle between modules (a strongly connected component of more than one module);
- no import against the layer order of LAYERS: a module imports only from its own layer or a
  lower one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import aclnn_conformance.cli
import pytest

NS = "aclnn_conformance"
TOPS = ("cli", "conformance", "reference", "reports", "specs")
REPO = Path(__file__).resolve().parent.parent

# lowest first; a module belongs to the longest prefix listed (docs/architecture.md says why)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("specs",),
    ("conformance.files",),
    ("conformance.acl",),
    ("conformance.compiled",),
    ("conformance.spec",),
    ("conformance.cases",),
    ("conformance.judge",),
    ("conformance.run",),
    ("conformance.vendor",),
    ("conformance",),  # the pytest plugin and its suite
    ("reference",),
    ("reports",),
    ("cli",),
)


def package_roots() -> dict[str, Path]:
    """Each top-level folder of the installed package (the checkout, editable-installed)."""
    import importlib

    out = {}
    for top in TOPS:
        mod = importlib.import_module(f"{NS}.{top}")
        out[top] = Path(mod.__file__).parent
    return out


def modules() -> dict[str, tuple[Path, bool]]:
    """dotted name (without the namespace) -> (file, is a package)."""
    out = {}
    for top, root in package_roots().items():
        for f in sorted(root.rglob("*.py")):
            parts = [top, *f.relative_to(root).with_suffix("").parts]
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (f, is_pkg)
    return out


def _imports(tree: ast.AST) -> list[tuple[ast.AST, bool]]:
    """Every import statement, with whether it sits under `if TYPE_CHECKING:`."""
    out = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            t = typing_only or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            )
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, typing_only))
            visit(child, t)

    visit(tree, False)
    return out


def _owner(name: str, mods: dict) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.AST, name: str, is_pkg: bool, where: str) -> list[str]:
    """The project modules (dotted, without the namespace) an import statement names."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = name.split(".") if is_pkg else name.split(".")[:-1]
            pkg = pkg[: len(pkg) - (node.level - 1)]
            base = ".".join([NS, *pkg] + ([base] if base else []))
        names = [f"{base}.{a.name}" for a in node.names]
    out = []
    for t in names:
        if t.startswith(NS + "."):
            out.append(t[len(NS) + 1 :])
        elif t.split(".")[0] in TOPS:
            raise AssertionError(f"{where}: imports {t} by its old top-level name")
    return out


def graph() -> dict[str, dict[str, bool]]:
    """module -> {imported module: only under TYPE_CHECKING}."""
    mods = modules()
    edges: dict[str, dict[str, bool]] = {}
    for name, (f, is_pkg) in mods.items():
        out: dict[str, bool] = {}
        for node, typing_only in _imports(ast.parse(f.read_text(encoding="utf-8"))):
            for t in _targets(node, name, is_pkg, f"{f}:{node.lineno}"):
                owner = _owner(t, mods)
                if owner and owner != name and not name.startswith(owner + "."):
                    out[owner] = out.get(owner, True) and typing_only
        edges[name] = out
    return edges


def layer(name: str) -> int:
    best, where = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best:
                best, where = len(p), i
    assert where >= 0, f"{name}: in no layer of LAYERS (tests/test_architecture.py)"
    return where


def cycles(edges: dict[str, dict[str, bool]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), runtime imports only."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, typing_only in edges[v].items():
            if typing_only:
                continue
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out


def test_the_package_is_installed_under_one_name():
    """The checkout's folders are the installed package (editable), not top-level names."""
    assert Path(aclnn_conformance.cli.__file__).parent == REPO / "cli"


def test_no_import_cycle():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_imports_follow_the_layer_order():
    wrong = [
        f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
        for a, targets in graph().items()
        for b in targets
        if layer(b) > layer(a)
    ]
    assert not wrong, "imports against the layer order (docs/architecture.md):\n" + "\n".join(wrong)


def test_every_module_is_in_a_layer_and_every_package_says_what_it_holds():
    for name, (f, is_pkg) in modules().items():
        layer(name)
        if is_pkg and name.startswith("conformance"):
            assert ast.get_docstring(ast.parse(f.read_text(encoding="utf-8"))), (
                f"{f}: a package's __init__.py says what it holds"
            )


def test_the_architecture_doc_lists_every_module():
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"[\w/]+\.py", doc))
    missing = [
        str(f.relative_to(REPO))
        for f, _ in modules().values()
        if f.name != "__init__.py"
        and f.relative_to(REPO).parts[0] == "conformance"
        and f.name not in {Path(p).name for p in listed}
    ]
    assert not missing, f"docs/architecture.md does not list: {missing}"


OLD = re.compile(r"^\s*(?:from|import)\s+(cli|conformance|reference|reports|specs)\b", re.M)


@pytest.mark.parametrize(
    "path", sorted(p.relative_to(REPO) for p in (REPO / "tests").rglob("*.py"))
)
def test_tests_import_the_installed_names(path):
    """A test that imported `conformance.x` would load a second copy of the module from the
    checkout (pytest puts the repository on sys.path): every import goes through the package."""
    text = (REPO / path).read_text(encoding="utf-8")
    hits = [m.group(0).strip() for m in OLD.finditer(text)]
    assert not hits, f"{path}: old top-level imports {hits}"
