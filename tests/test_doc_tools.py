"""`specs draft` and `specs check-doc`: vendor doc pages read into specs and compared with them.

The seed pages (shared/seeds/, outside the repository: ACLNN_CONFORM_SEEDS or ../shared/seeds)
are paired with their specs by the op each page's prototype names. The ops-nn Markdown format
and the text format are also read from small pages written for these tests
(tests/data/docs/: our own words in the vendor layout); what they should give is written out
by hand from their text.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from aclnn_conformance import specs
from aclnn_conformance.cli.main import main
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.vendor.checkdoc import KINDS
from aclnn_conformance.conformance.vendor.docpage.load import load_page
from click.testing import CliRunner

from tests.support.runcli import REPO, assert_one_line_error, conform

DOCS = REPO / "tests" / "data" / "docs"
TOY_MD = DOCS / "aclnnToyScaleBackward.md"
TOY_TWO = DOCS / "aclnnToyClamp&aclnnInplaceToyClamp.md"
TOY_TXT = DOCS / "toy_text_page.txt"
TOY_SPEC = DOCS / "toy_scale_backward.yaml"
SEED_DIR = Path(os.environ.get("ACLNN_CONFORM_SEEDS", REPO.parent / "shared" / "seeds"))
PROTO = re.compile(r"aclnnStatus\s+(aclnn[A-Za-z0-9]+?)GetWorkspaceSize\s*\(")


def _seeds() -> list[Any]:
    """(seed file, spec name) for every seed page, the op read from the page's own prototype."""
    if not SEED_DIR.is_dir():
        return [
            pytest.param(None, None, marks=pytest.mark.skip(reason=f"no seed pages in {SEED_DIR}"))
        ]
    out = []
    for f in sorted(SEED_DIR.glob("*.txt")):
        m = PROTO.search(f.read_text(encoding="utf-8"))
        assert m, f"{f}: no prototype"
        out.append(pytest.param(f, default_registry().get(m.group(1)).name, id=f.name))
    return out


SEEDS = _seeds()


def cli(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _doc_deviation_params(spec_path: str, kind: str, field: str = "params") -> set[str]:
    """Parameters (or products, ...) the spec file's deviations name in a `doc:` matcher of
    `kind`."""
    data = yaml.safe_load(Path(spec_path).read_text(encoding="utf-8"))
    out: set[str] = set()
    for d in data.get("deviations", []):
        doc = d.get("doc")
        for m in doc if isinstance(doc, list) else [doc] if doc else []:
            if m["kind"] == kind:
                out.update(m.get(field, []))
    return out


def _draft_tables(d: dict[str, Any]) -> dict[str, dict[str, set[str]]]:
    """param -> product -> dtypes of a drafted spec (dtype_in checks over its dtype_sets)."""
    sets = d.get("dtype_sets", {})
    out = {}
    for c in d["checks"]:
        if c["kind"] == "dtype_in":
            table = sets[c["set"]]
            for p in c["params"]:
                out[p] = {pr: set(table.get(pr, table["default"])) for pr in d["products"]}
    return out


def _spec_tables(spec: Any) -> dict[str, dict[str, set[str]]]:
    out = {}
    for c in spec.checks:
        if c.kind != "dtype_in":
            continue
        for t in c.terms:
            if t.param and t.param not in out:
                out[t.param] = {
                    pr: set(spec.dtypes_for(c.dtype_set, pr) if c.dtype_set else c.dtypes)
                    for pr in spec.products
                }
    return out


# -- the seed pages against the shipped specs --------------------------------------------------


@pytest.mark.parametrize("seed, name", SEEDS)
def test_draft_of_a_seed_has_the_params_roles_types_and_dtypes_of_the_spec(seed, name, tmp_path):
    spec = default_registry().get(name)
    out = tmp_path / "draft.yaml"
    res = cli("specs", "draft", seed, "-o", out)
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    todos = text.count("TODO")
    assert todos > 0 and f": {todos} TODO markers to resolve" in res.output
    d = yaml.safe_load(text)
    assert d["op"] == spec.op and d["name"] == spec.name
    # products the spec adds from the newer ops-nn page are recorded as doc deviations
    newer = _doc_deviation_params(spec.path, "product-missing-in-doc", "products")
    assert set(d["products"]) == set(spec.products) - newer
    assert [p["name"] for p in d["params"]] == [p.name for p in spec.params]
    assert [p["kind"] for p in d["params"]] == [p.kind for p in spec.params]
    assert [p.get("role", "input") for p in d["params"]] == [p.role for p in spec.params]
    const_ok = _doc_deviation_params(spec.path, "c-type")  # the spec records these as deviations
    for p, sp in zip(d["params"], spec.params, strict=True):
        if sp.name in const_ok:
            assert p["c_type"] == "const " + sp.c_type, (sp.name, p["c_type"])
        else:
            assert p["c_type"] == sp.c_type, (sp.name, p["c_type"])
    spec_tables = {p: {pr: ds for pr, ds in by.items() if pr in d["products"]}
                   for p, by in _spec_tables(spec).items()}  # fmt: skip
    assert _draft_tables(d) == spec_tables


@pytest.mark.parametrize("seed, name", SEEDS)
def test_check_doc_explains_every_difference_of_a_shipped_spec_and_its_seed(seed, name):
    path = default_registry().get(name).path  # by file: no registry to build per call
    res = cli("specs", "check-doc", path, seed)
    assert res.exit_code == 0, res.output
    assert res.output.rstrip().splitlines()[-1].endswith(", 0 unexplained")
    rep = json.loads(cli("specs", "check-doc", path, seed, "--format", "json").output)[0]
    assert rep["unexplained"] == 0 and rep["spec"] == name
    assert all(d["explained_by"] for d in rep["differences"])


def _altered(name: str, how: str, tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of spec `name` changed one way, and words the difference's line must hold."""
    spec = default_registry().get(name)
    data = yaml.safe_load(Path(spec.path).read_text(encoding="utf-8"))
    if how == "dtype":
        check = next(c for c in data["checks"] if c["kind"] == "dtype_in" and "set" in c)
        table = data["dtype_sets"][check["set"]]
        gone = table["default"][-1]
        for key, value in table.items():
            if key != "source":
                table[key] = [x for x in value if x != gone]
        want = ["dtype-missing-in-spec", check["params"][0], gone]
    elif how == "rename":
        old = data["params"][0]["name"]
        data = _rename(data, old, old + "Renamed")
        want = ["param-renamed", old, old + "Renamed"]
    else:
        gone = data["products"].pop(0)
        for table in data.get("dtype_sets", {}).values():
            table.pop(gone, None)
        want = ["product-missing-in-spec", gone]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path, want


def _rename(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {_rename(k, old, new): _rename(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, old, new) for v in value]
    if isinstance(value, str):
        return re.sub(rf"\b{re.escape(old)}\b", new, value)
    return copy.deepcopy(value)


@pytest.mark.parametrize("how", ["dtype", "rename", "product"])
@pytest.mark.parametrize("seed, name", SEEDS)
def test_a_spec_changed_in_a_copy_gives_exit_1_naming_the_difference(seed, name, how, tmp_path):
    path, want = _altered(name, how, tmp_path)
    res = cli("specs", "check-doc", path, seed)
    assert res.exit_code == 1, res.output
    bad = [ln for ln in res.output.splitlines() if ln.endswith("UNEXPLAINED")]
    assert any(all(w in ln for w in want) for ln in bad), (want, res.output)


def test_seed_dir_checks_every_spec_that_names_a_seed():
    if not SEED_DIR.is_dir():
        pytest.skip(f"no seed pages in {SEED_DIR}")
    res = cli("specs", "check-doc", "--seed-dir", SEED_DIR, "--format", "json")
    assert res.exit_code == 0, res.output
    reports = json.loads(res.output)
    named = {s.name for s in default_registry() if s.source.get("seed")}
    assert {r["spec"] for r in reports} == named
    assert {Path(r["page"]).name for r in reports} <= {p.name for p in SEED_DIR.glob("*.txt")}


# -- the two page formats, on pages written for the tests ---------------------------------------


def test_markdown_page_products_params_and_dtypes_per_product():
    page = load_page(TOY_MD)
    assert page.format == "markdown"
    assert page.products == ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")
    assert page.unsupported == ("atlas-inference",)  # the planned 200I/500 is no product id
    (itf,) = page.interfaces  # the call in the example code is no prototype
    assert itf.op == "aclnnToyScaleBackward"
    got = [(p.name, p.c_type, p.role, p.max_rank) for p in itf.params]
    assert got == [("gradOutput", "const aclTensor*", "input", 8),
                   ("self", "const aclTensor*", "input", 8),
                   ("factor", "const aclScalar*", "input", None),
                   ("gradInput", "aclTensor*", "output", 6)]  # fmt: skip
    new = {"ascend950", "atlas-a3", "atlas-a2"}
    want = {
        "gradOutput": ({"FLOAT", "FLOAT16", "BF16"}, {"FLOAT", "FLOAT16"}),
        "self": ({"FLOAT", "FLOAT16", "BF16"}, {"FLOAT", "FLOAT16"}),
        "factor": ({"FLOAT", "DOUBLE"}, {"FLOAT", "DOUBLE"}),  # the unnamed note is for tensors
        "gradInput": ({"FLOAT", "FLOAT16", "BF16", "INT32", "INT64"}, {"FLOAT", "FLOAT16", "INT32", "INT64"}),
    }  # fmt: skip
    for p in itf.params:
        assert p.dtypes is not None
        for prod, dts in p.dtypes.items():
            assert set(dts) == want[p.name][0 if prod in new else 1], (p.name, prod)
    rows = [(r.code, set(r.params)) for r in itf.status_rows or []]
    assert rows == [(161001, {"gradOutput", "self", "factor", "gradInput"}),
                    (161002, {"gradOutput", "self"}),  # the rowspan cells repeat
                    (161002, {"gradOutput", "self", "gradInput"}), (161002, {"factor"})]  # fmt: skip
    assert page.formula == [r"gradInput = gradOutput \cdot factor"]


def test_markdown_page_with_an_in_place_variant_and_a_negative_product_note():
    page = load_page(TOY_TWO)
    assert [i.op for i in page.interfaces] == ["aclnnToyClamp", "aclnnInplaceToyClamp"]
    out_of_place, inplace = page.interfaces
    for p in out_of_place.params:  # "参数`self`、`out`的数据类型不支持BFLOAT16" on training
        assert p.dtypes == {
            "atlas-a2": ("FLOAT", "BF16", "INT32"),
            "atlas-training": ("FLOAT", "INT32"),
        }
    assert inplace.params[0].name == "selfRef" and inplace.params[0].role == "inout"
    d = yaml.safe_load(cli("specs", "draft", TOY_TWO).stdout)
    assert d["op"] == "aclnnToyClamp" and [p["name"] for p in d["params"]] == ["self", "out"]
    assert d["inplace"] == {"op": "aclnnInplaceToyClamp", "name": "inplace_toy_clamp",
                            "tensor": "selfRef", "input": "self", "output": "out",
                            "source": d["inplace"]["source"]}  # fmt: skip
    d = yaml.safe_load(cli("specs", "draft", TOY_TWO, "--op", "aclnnInplaceToyClamp").stdout)
    assert [p["name"] for p in d["params"]] == ["selfRef"]


def test_text_page_against_a_spec_lists_each_difference():
    """Written out by hand: the text page has no Atlas A3, lists FLOAT/FLOAT16 (no BF16, no
    automatic casts) for gradInput on both products, and allows it 8 dims, not 6."""
    res = cli("specs", "check-doc", TOY_SPEC, TOY_TXT, "--format", "json")
    assert res.exit_code == 1
    (rep,) = json.loads(res.output)
    got = sorted(
        (d["kind"], d.get("param"), d.get("product"), d.get("dtype")) for d in rep["differences"]
    )
    assert got == sorted([
        ("product-missing-in-doc", None, "atlas-a3", None),
        ("dtype-missing-in-doc", "gradInput", "atlas-training", "INT32"),
        ("dtype-missing-in-doc", "gradInput", "atlas-training", "INT64"),
        ("dtype-missing-in-doc", "gradInput", "atlas-a2", "BF16"),
        ("dtype-missing-in-doc", "gradInput", "atlas-a2", "INT32"),
        ("dtype-missing-in-doc", "gradInput", "atlas-a2", "INT64"),
        ("max-rank", "gradInput", None, None),
    ])  # fmt: skip
    assert [u["deviation"] for u in rep["unused_deviations"]] == ["no-950-yet"]
    assert any("factor: the description says aclTensor*" in n for n in rep["notes"])


def test_markdown_page_against_its_spec_explained_by_a_doc_deviation(tmp_path):
    res = cli("specs", "check-doc", TOY_SPEC, TOY_MD)
    assert res.exit_code == 0, res.output
    (line,) = [ln for ln in res.output.splitlines() if ln.startswith("  product-missing")]
    assert "ascend950" in line and "aclnnToyScaleBackward.md:10" in line
    assert line.endswith("explained by deviation no-950-yet")
    # the same deviation limited to another page explains nothing here
    text = TOY_SPEC.read_text(encoding="utf-8").replace(
        "products: [ascend950]}", "products: [ascend950], page: 'other*.md'}"
    )
    other = tmp_path / "toy.yaml"
    other.write_text(text, encoding="utf-8")
    res = cli("specs", "check-doc", other, TOY_MD)
    assert res.exit_code == 1 and res.output.splitlines()[1].endswith("UNEXPLAINED")


def test_draft_of_the_markdown_page_and_of_the_text_page():
    d = yaml.safe_load(cli("specs", "draft", TOY_MD).stdout)
    assert d["products"] == [
        "atlas-training",
        "atlas-a2",
        "atlas-a3",
        "ascend950",
    ]  # products.yaml order
    checks = {c["id"]: c for c in d["checks"]}
    assert checks["null-ptr"]["params"] == ["gradOutput", "self", "factor", "gradInput"]
    assert checks["null-ptr"]["status"] == "ACLNN_ERR_PARAM_NULLPTR"
    assert {(tuple(c["params"]), c["max"]) for c in d["checks"] if c["kind"] == "max_rank"} == {
        (("gradOutput", "self"), 8), (("gradInput",), 6)}  # fmt: skip
    value = [c for c in d["checks"] if c["kind"] == "value"]
    assert [(c["status"], c["violated_if"]) for c in value] == [(161002, "TODO")]
    assert d["formula"]["output"] == "gradInput"
    d = yaml.safe_load(cli("specs", "draft", TOY_TXT).stdout)
    assert d["source"] == {"seed": "toy_text_page.txt"}
    assert [p["c_type"] for p in d["params"]] == ["const aclTensor*", "const aclTensor*", "const aclScalar*", "aclTensor*"]  # fmt: skip
    factor = d["params"][2]
    assert factor["default_dtype"] == "FLOAT"
    assert {"id": "scalar-castable", "kind": "castable", "params": ["factor"], "to": "FLOAT"}.items() <= next(
        c for c in d["checks"] if c["id"] == "scalar-castable").items()  # fmt: skip


# -- the `doc:` field in the schema, and user mistakes ---------------------------------------------


def test_the_schema_lists_exactly_the_kinds_check_doc_reports():
    schema = json.loads((REPO / "specs" / "schema" / "op-spec.schema.json").read_text("utf-8"))
    doc = schema["properties"]["deviations"]["items"]["properties"]["doc"]
    assert doc["anyOf"][0]["properties"]["kind"]["enum"] == list(KINDS)


def test_a_doc_matcher_of_an_unknown_kind_is_a_spec_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        TOY_SPEC.read_text("utf-8").replace("kind: product-missing-in-spec", "kind: nope"), "utf-8"
    )
    res = cli("specs", "check-doc", bad, TOY_MD)
    assert res.exit_code == 2 and "bad.yaml:" in res.stderr


@pytest.mark.parametrize(
    "args, needles",
    [
        (["specs", "draft", f"{DOCS}/missing.md"], ["missing.md: no such file"]),
        (["specs", "draft", f"{DOCS}/no_signature.md"], ["no_signature.md", "signature"]),
        (["specs", "check-doc", f"{DOCS}/toy_scale_backward.yaml", f"{DOCS}/no_signature.md"],
         ["no_signature.md", "signature"]),
        (["specs", "check-doc", "no_such_op", f"{DOCS}/aclnnToyScaleBackward.md"], ["no_such_op"]),
        (["specs", "check-doc", f"{DOCS}/toy_scale_backward.yaml"], ["SPEC and DOC"]),
        (["specs", "check-doc", f"{DOCS}/toy_scale_backward.yaml", f"{DOCS}/aclnnToyClamp&aclnnInplaceToyClamp.md"],
         ["documents aclnnToyClamp, aclnnInplaceToyClamp", "aclnnToyScaleBackward"]),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(args, needles):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    assert all(n in lines[0] for n in needles), lines[0]


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path):
    assert_one_line_error(
        conform("specs", "draft", tmp_path / "nope.txt"), "nope.txt: no such file"
    )
    assert_one_line_error(
        conform("specs", "check-doc", TOY_SPEC, DOCS / "no_signature.md"), "signature"
    )


def test_draft_does_not_overwrite_a_file_without_force(tmp_path):
    out = tmp_path / "x.yaml"
    out.write_text("keep", encoding="utf-8")
    res = CliRunner().invoke(main, ["specs", "draft", str(TOY_MD), "-o", str(out)])
    assert res.exit_code == 2 and "exists; use --force" in res.stderr
    assert out.read_text(encoding="utf-8") == "keep"
    res = CliRunner().invoke(main, ["specs", "draft", str(TOY_MD), "-o", str(out), "--force"])
    assert (
        res.exit_code == 0
        and yaml.safe_load(out.read_text(encoding="utf-8"))["op"] == "aclnnToyScaleBackward"
    )


def test_readme_check_doc_block_is_real_output(monkeypatch):
    """The README's check-doc example: its lines appear, in order, in the real output."""
    if not SEED_DIR.is_dir() or SEED_DIR.resolve() != (REPO.parent / "shared" / "seeds").resolve():
        pytest.skip("the README example reads ../shared/seeds")
    if specs.root().resolve() != (REPO / "specs").resolve():
        pytest.skip("the README example shows the checkout's specs/ops paths")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    cmd = "$ aclnn-conform specs check-doc "
    block = readme.split(cmd, 1)[1].split("```", 1)[0].splitlines()
    args, shown = block[0].split(), [x for x in block[1:] if x and not x.startswith("[...")]
    monkeypatch.chdir(REPO)
    real = iter(cli("specs", "check-doc", *args).output.splitlines())
    assert all(any(x == y for y in real) for x in shown), shown
    res = cli("specs", "draft", TOY_MD)
    draft_line = readme.split("$ aclnn-conform specs draft ", 1)[1].splitlines()[1]
    assert draft_line.split(": ", 1)[1].startswith(f"{res.stdout.count('TODO')} TODO markers")


def test_doc_matcher_values_are_checked_and_dtype_aliases_match(tmp_path):
    text = TOY_SPEC.read_text("utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("products: [ascend950]}", "products: [atlas-9000]}"), "utf-8")
    res = CliRunner().invoke(main, ["specs", "check-doc", str(bad), str(TOY_MD)])
    assert res.exit_code == 2 and "unknown product 'atlas-9000'" in res.stderr
    # the spec drops BF16 from gradInput's list; a matcher naming it BFLOAT16 (the doc's
    # spelling) explains the two spec products that lose it (Atlas A2 and A3)
    alias = tmp_path / "alias.yaml"
    text = text.replace(
        "default: [FLOAT, FLOAT16, BF16, INT32, INT64]", "default: [FLOAT, FLOAT16, INT32, INT64]"
    )
    text += (
        "  - id: no-bf16-result\n    summary: fixture\n    source: fixture\n"
        "    doc: {kind: dtype-missing-in-spec, params: [gradInput], dtypes: [BFLOAT16]}\n"
    )
    alias.write_text(text, "utf-8")
    rep = json.loads(cli("specs", "check-doc", alias, TOY_MD, "--format", "json").output)[0]
    got = sorted(
        (d["product"], d["explained_by"]) for d in rep["differences"] if d.get("dtype") == "BF16"
    )
    assert got == [("atlas-a2", "no-bf16-result"), ("atlas-a3", "no-bf16-result")]
    assert rep["unexplained"] == 0


# -- issue 23: what the ops-nn pages of the shipped specs needed ------------------------------
GATE_MD = DOCS / "aclnnToyGate&aclnnInplaceToyGate.md"
GATE_SPEC = DOCS / "toy_gate.yaml"


def _gate_report(spec: Path = GATE_SPEC) -> list[dict[str, Any]]:
    res = cli("specs", "check-doc", spec, GATE_MD, "--format", "json")
    return [x for r in json.loads(res.output) for x in r["differences"]]


def test_a_same_dtype_chain_written_backwards_passes_the_list_along():
    """self = other is checked before other = out, and only out has a list: self still has it
    (fast_gelu_backward's checks read this way)."""
    diffs = _gate_report()
    assert {d["param"] for d in diffs} == {"beta"}  # beta: the deviation beta-list only
    assert all(d["explained_by"] == "beta-list" for d in diffs)


def test_a_note_removing_a_dtype_holds_for_the_tensors_and_a_scalar_listed_alike():
    """ "<term>Atlas 训练系列产品</term>：不支持BFLOAT16数据类型。": no BF16 for the tensors on
    Atlas training, nor for alpha, whose list is theirs; beta's own list is untouched."""
    itf = load_page(GATE_MD).interface("aclnnToyGate")
    assert itf is not None
    for name in ("self", "other", "out", "alpha"):
        p = itf.param(name)
        assert p.dtypes["atlas-training"] == ("FLOAT", "FLOAT16"), name
        assert p.dtypes["atlas-a2"] == ("FLOAT", "FLOAT16", "BF16"), name
    assert itf.param("beta").dtypes["atlas-training"] == ("FLOAT", "DOUBLE", "INT32")


def test_a_scalar_checked_by_a_cast_covers_the_dtype_row(tmp_path):
    """The 161002 row names beta; the spec checks beta with castable ... to: FLOAT (a scalar's
    dtype rule): covered. Without that check the row names an uncovered parameter."""
    assert not [d for d in _gate_report() if d["kind"] == "check-missing"]
    text = GATE_SPEC.read_text("utf-8")
    lines = [ln for ln in text.splitlines() if "id: cast-beta" not in ln]
    bare = tmp_path / "toy_gate.yaml"
    bare.write_text("\n".join(lines) + "\n", "utf-8")
    missing = [d for d in _gate_report(bare) if d["kind"] == "check-missing"]
    assert {(d["op"], d["param"]) for d in missing} == {("aclnnToyGate", "beta"),
                                                        ("aclnnInplaceToyGate", "beta")}  # fmt: skip


def test_an_in_place_variant_takes_its_own_c_type_and_dtype_lists(tmp_path):
    """inplace.c_type: the in-place prototype's `const aclTensor *selfRef`; inplace.dtype_sets:
    its own table's list (no BF16), the out-of-place spec keeping its own."""
    from aclnn_conformance.conformance.spec.registry import load_spec

    spec = load_spec(GATE_SPEC)
    (variant,) = spec.variants
    assert variant.param("self").c_type == "const aclTensor*"
    assert variant.dtypes_for("float", "atlas-a2") == ("FLOAT", "FLOAT16")
    assert spec.dtypes_for("float", "atlas-a2") == ("FLOAT", "FLOAT16", "BF16")
    text = GATE_SPEC.read_text("utf-8").replace('  c_type: "const aclTensor*"\n', "")
    plain = tmp_path / "toy_gate.yaml"
    plain.write_text(text, "utf-8")
    (ctype,) = [d for d in _gate_report(plain) if d["kind"] == "c-type"]
    assert ctype["op"] == "aclnnInplaceToyGate" and ctype["explained_by"] is None
