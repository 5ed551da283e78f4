"""Products: the five products the docs name (specs/products.yaml) and, for every spec of the
registry, positive cases on every product it lists."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from aclnn_conformance.conformance.cases.generate import plan_op
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.spec.tables import planned_products, products

from tests.support.representatives import op_params, representatives

REG = default_registry()
# The product headings of the newer ops-nn doc pages (产品支持情况), as products.yaml titles them.
DOC_TITLES = {
    "ascend950": "Ascend 950PR/Ascend 950DT",
    "atlas-a3": "Atlas A3 训练系列产品/Atlas A3 推理系列产品",
    "atlas-a2": "Atlas A2训练系列产品",
    "atlas-inference": "Atlas 推理系列产品",
    "atlas-training": "Atlas 训练系列产品",
}


@pytest.mark.parametrize("product,title", sorted(DOC_TITLES.items()))
def test_every_product_of_the_docs_is_a_product(product, title):
    assert product in products()
    assert products()[product]["title"].startswith(title)


def test_the_200i_500_a2_stays_planned():
    """No doc of the family supports Atlas 200I/500 A2 (不支持): not a product a spec may name."""
    assert "atlas-200i-500-a2" in planned_products()
    assert "atlas-200i-500-a2" not in products()


@pytest.mark.parametrize("op", op_params(REG.names(), representatives(REG)))
def test_every_listed_product_has_positive_cases(op):
    spec = REG.get(op)
    plans = plan_op(spec)
    covered = {p.product for p in plans if p.kind == "positive" and p.expected_status == 0}
    assert covered == set(spec.products)


@pytest.mark.parametrize("spec", list(REG), ids=lambda s: s.name)
def test_dtype_tables_name_only_listed_products(spec):
    for name, table in spec.dtype_sets.items():
        extra = set(table) - {"default", *spec.products}
        assert not extra, f"dtype set {name} has a table for {sorted(extra)}, not in products"


def test_the_coverage_page_lists_every_operator_with_its_products():
    """docs/coverage.md: one row per operator of the registry (`specs list --markdown`), with
    the products of its spec."""
    from tests.support.runcli import REPO

    rows = {}
    for line in (REPO / "docs" / "coverage.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[1].startswith("`") and cells[0].startswith("`aclnn"):
            rows[cells[1].strip("`")] = (cells[0].strip("`"), cells[2])
    for name, row in rows.items():
        assert name in REG.names() and row == (REG.get(name).op, ", ".join(REG.get(name).products))
    # every operator of a spec file the repository tracks (a copy of the checkout with one more
    # spec file, which git does not track, keeps this test green: tests grow with the registry)
    proc = subprocess.run(["git", "ls-files", "specs/ops"], cwd=REPO, capture_output=True,
                          text=True, check=False)  # fmt: skip
    tracked = {Path(f).resolve() for f in proc.stdout.split()} if proc.returncode == 0 else set()
    missing = [s.name for s in REG if Path(s.path).resolve() in tracked and s.name not in rows]
    assert not missing, f"docs/coverage.md lacks {missing} (run python tests/docgen.py)"
