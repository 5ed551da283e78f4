"""Products: the five products the docs name (specs/products.yaml) and, for every spec of the
registry, positive cases on every product it lists."""

from __future__ import annotations

import pytest

from conformance.catalog import planned_products, products
from conformance.generate import plan_op
from conformance.registry import default_registry

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


@pytest.mark.parametrize("spec", list(REG), ids=lambda s: s.name)
def test_every_listed_product_has_positive_cases(spec):
    plans = plan_op(spec)
    covered = {p.product for p in plans if p.kind == "positive" and p.expected_status == 0}
    assert covered == set(spec.products)


@pytest.mark.parametrize("spec", list(REG), ids=lambda s: s.name)
def test_dtype_tables_name_only_listed_products(spec):
    for name, table in spec.dtype_sets.items():
        extra = set(table) - {"default", *spec.products}
        assert not extra, f"dtype set {name} has a table for {sorted(extra)}, not in products"
