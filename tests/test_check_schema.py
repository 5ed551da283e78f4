"""The schema's `checks` part is generated from the check kinds' classes (issue 25, point 4):
the file equals what the generator writes, every kind's declared fields reach it, and adding a
kind is adding a class."""

from __future__ import annotations

import json
from typing import ClassVar

import jsonschema
import pytest
from aclnn_conformance import specs
from aclnn_conformance.conformance.spec.checks import kinds as checks
from aclnn_conformance.conformance.spec.checks.base import COMMON_FIELDS, CheckKind

SCHEMA = specs.root() / "schema" / "op-spec.schema.json"


def test_the_schema_file_is_what_the_generator_writes():
    text = SCHEMA.read_text(encoding="utf-8")
    assert checks.schema_text(text) == text, (
        "run: python -m aclnn_conformance.conformance.spec.checks.kinds --write"
    )
    assert checks.main([]) == 0


@pytest.mark.parametrize("kind", sorted(checks.CHECK_KINDS))
def test_each_kind_says_its_fields_once_and_the_schema_holds_them(kind):
    cls = checks.CHECK_KINDS[kind]
    item = json.loads(SCHEMA.read_text("utf-8"))["properties"]["checks"]["items"]
    assert kind in item["properties"]["kind"]["enum"]
    for field, schema in cls.fields.items():
        assert item["properties"][field] == schema
    # a check of this kind with only the common fields misses exactly what the class requires
    bare = {"id": "c", "kind": kind, "source": "doc"}
    errors = list(
        jsonschema.Draft202012Validator({"type": "array", "items": item}).iter_errors([bare])
    )
    missing = {e.message.split("'")[1] for e in errors if "is a required property" in e.message}
    assert missing == set(cls.required), errors
    if cls.one_of:
        assert any(e.validator == "oneOf" for e in errors)
    # with what it requires (and the first of one_of) it is valid
    example = {"params": ["self"], "violated_if": "x < 0", "examples": [{}], "to": "FLOAT",
               "max": 8, "of": ["a", "b"], "values": ["v"], "set": "floats", "dim": "dim",
               "min": 2, "by": 2, "numel_of": "self", "axis": -1}  # fmt: skip
    full = {**bare, **{f: example[f] for f in (*cls.required, *cls.one_of[:1])}}
    assert (
        list(jsonschema.Draft202012Validator({"type": "array", "items": item}).iter_errors([full]))
        == []
    )


def test_adding_a_kind_is_adding_a_class():
    class Parity(CheckKind):
        name = "parity"
        fields: ClassVar = {**CheckKind.fields, "modulus": {"type": "integer", "minimum": 2}}
        required = ("params", "modulus")

    frag = checks.schema_fragment({**checks.CHECK_KINDS, "parity": Parity})
    item = frag["items"]
    assert "parity" in item["properties"]["kind"]["enum"]
    assert item["properties"]["modulus"] == {"type": "integer", "minimum": 2}
    rule = {"if": {"properties": {"kind": {"const": "parity"}}},
            "then": {"required": ["params", "modulus"]}}  # fmt: skip
    assert rule in item["allOf"]
    assert set(COMMON_FIELDS) <= set(item["properties"])


def test_two_schemas_for_one_field_or_an_undeclared_requirement_is_refused():
    class Clash(CheckKind):
        name = "clash"
        fields: ClassVar = {"params": {"type": "string"}}

    with pytest.raises(ValueError, match="two schemas"):
        checks.schema_fragment({**checks.CHECK_KINDS, "clash": Clash})

    class Undeclared(CheckKind):
        name = "undeclared"
        required = ("params", "limit")

    with pytest.raises(ValueError, match="does not declare"):
        checks.schema_fragment({"undeclared": Undeclared})
