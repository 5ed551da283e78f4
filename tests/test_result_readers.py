"""The readers of results read a record's fields (`rec.verdict`), never look them up by key:
Result has no mapping interface, and no renderer under reports/ calls `.get(` on a record or
subscripts one by a field name (an AST check: the names a function binds to a record are its
parameters annotated `Result` and the loop variables `rec`/`r`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from aclnn_conformance.conformance.judge.result import FIELDS, Result
from aclnn_conformance.conformance.judge.results import Stream

REPORTS = sorted((Path(__file__).resolve().parents[1] / "reports").glob("*.py"))
RECORD_NAMES = {"rec", "r", "record"}


def _record_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set(RECORD_NAMES)
    for arg in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
        if arg.annotation is not None and "Result" in ast.unparse(arg.annotation):
            names.add(arg.arg)
    return names


def _key_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, code) of every `.get(...)` on, or subscript by a string of, a record name."""
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        names = _record_names(fn)
        for node in ast.walk(fn):
            target = None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
            ):
                target = node.func.value
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                target = node.value if isinstance(node.slice.value, str) else None
            if isinstance(target, ast.Name) and target.id in names:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_result_has_no_mapping_interface():
    rec = Result("op/a2/f32/x", "pass", op="op")
    for name in ("get", "keys", "items", "__getitem__", "__contains__", "__setitem__"):
        assert not hasattr(rec, name), name
    with pytest.raises(TypeError):
        rec["verdict"]  # noqa: B018


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_no_report_reads_a_record_by_key(path):
    assert _key_reads(ast.parse(path.read_text("utf-8"))) == []


def test_the_key_read_check_finds_what_it_looks_for():
    src = (
        "def f(rec, c):\n    return rec.get('verdict'), c.get('stats')\n"
        "def g(x: Result):\n    return x['op']\n"
        "def h(meta: dict):\n    return meta['backend'], [r['id'] for r in meta]\n"
    )
    assert [line for line, _ in _key_reads(ast.parse(src))] == [2, 4, 6]
    assert FIELDS[:2] == ("id", "verdict")


def test_a_stream_yields_results_keeping_unknown_keys(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"id": "a", "verdict": "fail", "actual_status": null, "future_key": [1]}\n',
        encoding="utf-8",
    )
    (rec,) = list(Stream(path))
    assert isinstance(rec, Result) and rec.verdict == "fail"
    assert rec.extra == {"future_key": [1]} and rec.actual_status is None
    assert (
        rec.to_json() == '{"actual_status": null, "future_key": [1], "id": "a", "verdict": "fail"}'
    )
