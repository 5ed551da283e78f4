"""Fuzzing and hostile inputs: specs, expressions and case files that are broken or malicious
always end in a clear error (ExprError / lint problems / CaseFileError / an `error` verdict),
never a traceback and never code execution, in bounded time and memory."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from aclnn_conformance import specs
from aclnn_conformance.conformance.cases.casedir import CaseFileError, read_case
from aclnn_conformance.conformance.spec.expr.language import ExprError, compile_expr
from aclnn_conformance.conformance.spec.lint import lint_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = ["x", "g", "alpha", "mode"]
SPEC = (specs.root() / "ops" / "elu_backward.yaml").read_text(encoding="utf-8")
HAND = Path(__file__).parent / "data" / "cases" / "hand"
FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])

HOSTILE = [
    "__import__('os').system('true')",
    "().__class__.__bases__[0].__subclasses__()",
    "x.real",
    "x[0]",
    "(lambda: 1)()",
    "[x for x in g]",
    "{x: 1 for x in g}",
    "(y := 1)",
    "getattr(x, 'real')",
    "eval('1')",
    "exec('1')",
    "open('/etc/passwd')",
    "f'{x}'",
    "exp(*g)",
    "exp(x=1)",
    "2**2**30",
    "x ** 1e9",
    "9" * 5000,
    "(" * 300 + "x" + ")" * 300,
    "-" * 3000 + "x",
    "+".join(["x"] * 2000),
    "x if g else alpha",
    "mode == 1",
    "'a' + 'b'",
    "x @ g",
    "x // g",
    "x % g",
    "x << 2",
    "not_a_name + 1",
    "\x00",
    "x\n+\ng\n;import os",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_expressions_are_rejected_quickly(text):
    t0 = time.perf_counter()
    with pytest.raises(ExprError):
        compile_expr(text, NAMES, ["mode"])
    assert time.perf_counter() - t0 < 1.0


@FUZZ
@given(st.text(min_size=1, max_size=200))
def test_any_text_compiles_or_raises_expr_error(text):
    try:
        e = compile_expr(text, NAMES, ["mode"])
    except ExprError:
        return
    assert e.names <= set(NAMES)


_atoms = st.sampled_from(["x", "g", "alpha", "1", "0.5", "inf", "nan", "pi", "-x"])
_ops = st.sampled_from(["+", "-", "*", "/", "<", "<=", "and", "or", "**", ".", "[", "(", ",", "%"])
_funcs = st.sampled_from(
    ["exp", "erf", "tanh", "where", "sqrt", "abs", "maximum", "__import__", "getattr", ""]
)


@st.composite
def expressions(draw, depth=0):
    if depth > 3 or draw(st.booleans()):
        return draw(_atoms)
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return f"({draw(expressions(depth + 1))} {draw(_ops)} {draw(expressions(depth + 1))})"
    args = draw(st.lists(expressions(depth + 1), min_size=0, max_size=3))
    return f"{draw(_funcs)}({', '.join(args)})"


@FUZZ
@given(expressions())
def test_grammar_shaped_expressions_compile_and_evaluate_or_raise(text):
    import numpy as np

    try:
        e = compile_expr(text, NAMES, ["mode"])
    except ExprError:
        return
    env = {
        "x": np.array([-1.0, 0.0, 2.0]),
        "g": np.array([1.0, np.nan, -np.inf]),
        "alpha": 0.5,
        "mode": "none",
    }
    # a well-formed expression may still meet arguments of the wrong kind (a string where a
    # number belongs); that is a TypeError/ValueError the engine reports, never code execution
    with contextlib.suppress(TypeError, ValueError):
        e.evaluate(env)


def _mutations():
    lines = SPEC.splitlines(keepends=True)
    return st.one_of(
        st.tuples(st.just("delete"), st.integers(0, len(lines) - 1)),
        st.tuples(st.just("dup"), st.integers(0, len(lines) - 1)),
        st.tuples(st.just("byte"), st.integers(0, len(SPEC) - 1), st.characters(codec="utf-8")),
        st.tuples(st.just("indent"), st.integers(0, len(lines) - 1)),
    )


@pytest.mark.gates
@FUZZ
@given(st.lists(_mutations(), min_size=1, max_size=4))
def test_mutated_specs_lint_to_problems_not_exceptions(tmp_path_factory, muts):
    lines = SPEC.splitlines(keepends=True)
    text = SPEC
    for m in muts:
        lines = text.splitlines(keepends=True) or [""]
        i = m[1] % len(lines) if m[0] != "byte" else m[1] % max(len(text), 1)
        if m[0] == "delete":
            del lines[i]
            text = "".join(lines)
        elif m[0] == "dup":
            lines.insert(i, lines[i])
            text = "".join(lines)
        elif m[0] == "indent":
            lines[i] = "  " + lines[i]
            text = "".join(lines)
        else:
            text = text[:i] + m[2] + text[i + 1 :]
    spec, problems = lint_file("mutated.yaml", text)
    assert (spec is None) == bool(problems)
    for p in problems:
        assert p.file == "mutated.yaml" and p.line >= 1 and "\n" not in p.message


def test_yaml_alias_bomb_is_rejected_fast_and_small():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    spec, problems = lint_file("bomb.yaml", bomb)
    assert spec is None and "aliases are not allowed" in problems[0].message
    assert time.perf_counter() - t0 < 2.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB


def test_non_utf8_spec_is_a_problem(tmp_path):
    f = tmp_path / "latin1.yaml"
    f.write_bytes(SPEC.encode("utf-8").replace(b"op: aclnnEluBackward", b"op: aclnn\xe9luBackward"))
    spec, problems = lint_file(f)
    assert spec is None and "not valid UTF-8" in problems[0].message and problems[0].line == 5


def test_code_in_a_spec_is_never_executed(tmp_path):
    marker = Path("/tmp") / f"aclnn_pwned_{uuid.uuid4().hex}"
    evil = SPEC.replace(
        "value: gradOutput * scale", f"value: __import__('os').system('touch {marker}')"
    )
    spec, problems = lint_file("evil.yaml", evil)
    assert spec is None and problems and not marker.exists()


# -- case files ------------------------------------------------------------------------------


def _copy_hand(tmp_path) -> Path:
    root = tmp_path / "cases"
    shutil.copytree(HAND, root)
    return root


def _edit(case: Path, change):
    meta = json.loads((case / "case.json").read_text())
    change(meta)
    (case / "case.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m["args"]["self"].update(shape=[10**12]),
        lambda m: m["args"]["self"].update(shape=[10**6, 10**6, 10**6]),
        lambda m: m["args"]["self"].update(strides=[-1]),
        lambda m: m["args"]["self"].update(offset=2**62),
        lambda m: m["args"]["self"].update(dtype="FLOAT128"),
        lambda m: m["args"]["self"].update(storage="../../../../etc/passwd"),
        lambda m: m["args"]["self"].update(storage="/etc/passwd"),
        lambda m: m["args"]["negativeSlope"].update(value={"__class__": 1}),
        lambda m: m["args"]["negativeSlope"].update(value="1e999999"),
        lambda m: m["args"].update(extra={"kind": "python", "value": "os.system('x')"}),
        lambda m: m.update(format=2),
        lambda m: m.update(args="not a mapping"),
    ],
    ids=[
        "shape-1e12",
        "shape-1e18",
        "negative-stride",
        "huge-offset",
        "unknown-dtype",
        "dotdot-storage",
        "absolute-storage",
        "object-scalar",
        "string-scalar",
        "unknown-kind",
        "format-2",
        "args-not-map",
    ],
)
def test_hostile_case_files_are_case_file_errors(tmp_path, change):
    root = _copy_hand(tmp_path)
    case = root / "leaky-slope-half"
    _edit(case, change)
    with pytest.raises(CaseFileError):
        read_case(case, root)


def test_nan_and_inf_scalars_are_valid_values(tmp_path):
    root = _copy_hand(tmp_path)
    case = root / "leaky-slope-half"
    _edit(case, lambda m: m["args"]["negativeSlope"].update(value="nan"))
    c = read_case(case, root)
    assert c.call.args["negativeSlope"].value != c.call.args["negativeSlope"].value  # NaN


@pytest.mark.gates
def test_symlinks_escaping_the_case_directory_are_refused(tmp_path):
    outside = tmp_path / "outside"
    shutil.copytree(HAND / "leaky-slope-half", outside)
    root = tmp_path / "cases"
    root.mkdir()
    os.symlink(outside, root / "linked-dir")  # a symlinked case directory is not followed
    case = root / "real"
    shutil.copytree(HAND / "leaky-slope-half", case)
    (case / "self.npy").unlink()
    os.symlink(outside / "self.npy", case / "self.npy")  # a symlinked storage file is refused
    p = subprocess.run([sys.executable, "-m", "aclnn_conformance.cli.main", "run", "--cases", str(root), "--results",
                        str(tmp_path / "r.jsonl"), "-q"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "Traceback" not in p.stderr
    recs = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["id"] for r in recs] == ["real"]
    assert recs[0]["verdict"] == "error" and "plain file" in recs[0]["reason"]
    assert p.returncode == 1


@FUZZ
@given(st.binary(min_size=0, max_size=400))
def test_random_case_json_bytes_are_case_file_errors(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("c")
    case = root / "x"
    case.mkdir()
    (case / "case.json").write_bytes(data)
    with pytest.raises(CaseFileError):
        read_case(case, root)
