"""The tables every spec refers to (products, status codes) and the shipped spec files.

They live apart from the linter because the engine, the backends and the reports need them too,
without loading or linting any spec.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ... import specs


@cache
def products() -> dict[str, dict[str, Any]]:
    """The products of specs/products.yaml a spec may list, by name."""
    raw = yaml.safe_load((specs.root() / "products.yaml").read_text(encoding="utf-8"))
    return raw["products"]


@cache
def planned_products() -> dict[str, dict[str, Any]]:
    """Products announced but not yet usable, so that lint can say so."""
    raw = yaml.safe_load((specs.root() / "products.yaml").read_text(encoding="utf-8"))
    return raw.get("planned", {}) or {}


@cache
def status_codes() -> dict[str, int]:
    """aclnn status names to values (specs/status_codes.yaml); specs may use either."""
    raw = yaml.safe_load((specs.root() / "status_codes.yaml").read_text(encoding="utf-8"))
    return {c["name"]: int(c["value"]) for c in raw["codes"]}


def status_name(value: int) -> str:
    """The name of a status value for messages, or the number itself if it has none."""
    for name, v in status_codes().items():
        if v == value:
            return name
    return str(value)


def default_spec_files() -> list[Path]:
    """The shipped operator specs, in a stable order."""
    return sorted((specs.root() / "ops").glob("*.yaml"))
