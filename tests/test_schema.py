"""One walk over a tool's parameter schema (hsa.model.schema) for every reader: the rename
kernel, verification, the description paraphrase and the order and spelling transforms."""

from __future__ import annotations

import copy
import json

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hsa.augment.recipe import Recipe
from hsa.augment.variant import Variant
from hsa.dataset.bench import synthetic_tool
from hsa.dataset.pipeline import augment_episode
from hsa.errors import HarnessError
from hsa.example import load_example_episodes
from hsa.model.episode import arguments_schema
from hsa.model.frozen import replace
from hsa.model.schema import (
    _WALKS,
    _walk,
    edit_schema,
    is_instance_path,
    node_at,
    pointer,
    pointer_parts,
    property_name,
    property_names,
    rewrite_descriptions,
    schema_descriptions,
    schema_nodes,
)
from hsa.model.tool import Tool, schema_problem, schema_validator, simple_acceptor

# Every keyword that holds sub-schemas, once, with a description in each (and a property named
# like a keyword, and a name with the characters a JSON pointer escapes).
SCHEMA = {
    "type": "object",
    "description": "root",
    "properties": {
        "properties": {
            "type": "array",
            "description": "a property named properties",
            "items": {
                "type": "object",
                "description": "its items",
                "properties": {"a/b~c": {"type": "string", "description": "x"}},
            },
        },
        "choice": {
            "description": "a choice",
            "anyOf": [
                {
                    "type": "object",
                    "description": "first",
                    "properties": {"inner": {"type": "string", "description": "inner"}},
                },
                {"type": "null", "description": "second"},
            ],
        },
        "one": {
            "oneOf": [
                {"type": "integer", "description": "int"},
                {"type": "string", "description": "str"},
            ]
        },
        "both": {"allOf": [{"description": "all 0"}, {"description": "all 1"}]},
        "ref": {"$ref": "#/$defs/thing"},
        "pair": {
            "type": "array",
            "prefixItems": [{"description": "first of pair"}],
            "items": [{"description": "tuple 0"}],
        },
        "map": {
            "type": "object",
            "additionalProperties": {"description": "any value"},
            "patternProperties": {"^x": {"description": "x keys"}},
        },
        "neg": {"not": {"description": "not this"}},
    },
    "$defs": {
        "thing": {
            "type": "object",
            "description": "a thing",
            "properties": {"deep": {"description": "deep"}},
        }
    },
    "definitions": {"old": {"description": "old style"}},
}
ALL_DESCRIPTIONS = [
    "root",
    "a property named properties",
    "its items",
    "x",
    "a choice",
    "first",
    "inner",
    "second",
    "int",
    "str",
    "all 0",
    "all 1",
    "first of pair",
    "tuple 0",
    "any value",
    "x keys",
    "not this",
    "a thing",
    "deep",
    "old style",
]


def test_every_subschema_keyword_is_walked_in_written_order():
    assert list(schema_descriptions(SCHEMA)) == ALL_DESCRIPTIONS
    for parts, node in schema_nodes(SCHEMA):
        assert node_at(SCHEMA, pointer(parts)) is node
        assert pointer_parts(pointer(parts)) == parts


def test_property_names_read_paths_from_the_root():
    assert property_names(SCHEMA) == {
        "properties",
        "a/b~c",
        "choice",
        "inner",
        "one",
        "both",
        "ref",
        "pair",
        "map",
        "neg",
        "deep",
    }
    assert property_name(["properties", "properties"]) == "properties"
    assert property_name(["properties", "properties", "items"]) is None  # its array items
    assert property_name(["properties", "items"]) == "items"
    assert property_name(["$defs", "properties"]) is None
    assert is_instance_path(["properties", "properties", "items", "properties", "a/b~c"])
    assert not is_instance_path(["properties", "choice", "anyOf", "0"])
    assert not is_instance_path(["$defs", "thing"])


def test_edits_copy_the_way_and_share_the_rest():
    before = copy.deepcopy(SCHEMA)
    at = "/properties/choice/anyOf/0/properties/inner"
    out = edit_schema(SCHEMA, {at: lambda n: {**n, "description": "new"}}, "t")
    assert before == SCHEMA  # never changed in place
    assert node_at(out, at)["description"] == "new"
    assert out["$defs"] is SCHEMA["$defs"]
    assert out["properties"]["choice"]["anyOf"][1] is SCHEMA["properties"]["choice"]["anyOf"][1]
    escaped = pointer(["properties", "properties", "items", "properties", "a/b~c"])
    assert escaped == "/properties/properties/items/properties/a~1b~0c"
    assert node_at(SCHEMA, escaped)["description"] == "x"
    assert node_at(SCHEMA, "/properties/nope") is None and node_at(SCHEMA, "nope") is None


_leaf = st.fixed_dictionaries({"description": st.text("abc ", min_size=1, max_size=5)})


def _extend(children):
    return st.one_of(
        st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "description": st.text("xyz", max_size=3),
                "properties": st.dictionaries(
                    st.sampled_from(["p", "q", "items"]), children, max_size=3
                ),
            }
        ),
        st.fixed_dictionaries({"anyOf": st.lists(children, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"items": children}),
        st.fixed_dictionaries(
            {"$defs": st.dictionaries(st.sampled_from(["d", "e"]), children, max_size=2)}
        ),
    )


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.recursive(_leaf, _extend, max_leaves=8).map(json.dumps), min_size=2))
def test_a_remembered_walk_is_always_the_walk_of_the_schema_asked_about(texts):
    """Walks are remembered by schema object: with a memo of two, schemas made and dropped over
    and over (new ones born at freed addresses, equal in content to earlier ones) each get the
    walk of their own nodes."""
    size, _WALKS.size = _WALKS.size, 2
    try:
        for _ in range(3):
            for text in texts:
                schema = json.loads(text)  # a new object each time
                walk = list(schema_nodes(schema))
                assert [pointer(parts) for parts, _ in walk] == [
                    pointer(parts) for parts, _ in _walk(schema)
                ]
                assert all(node_at(schema, pointer(parts)) is node for parts, node in walk)
                assert list(schema_nodes(schema)) == walk  # and again, remembered
                del schema, walk
    finally:
        _WALKS.size = size
        _WALKS.clear()


@settings(max_examples=80, deadline=None)
@given(schema=st.recursive(_leaf, _extend, max_leaves=12))
def test_rewrite_descriptions_reaches_exactly_the_walked_descriptions(schema):
    before = json.dumps(schema)
    out = rewrite_descriptions(schema, lambda d: d + "!")
    assert json.dumps(schema) == before
    assert list(schema_descriptions(out)) == [d + "!" for d in schema_descriptions(schema)]
    assert rewrite_descriptions(schema, lambda d: d) is schema
    for parts, node in schema_nodes(schema):
        assert node_at(schema, pointer(parts)) is node


def test_renames_and_paraphrases_reach_branches_and_definitions():
    # A description inside anyOf or $defs is prose the model reads: a renamed tool mentioned
    # there moves with the name (and verification, which reads the same places, passes), and
    # the description paraphrase rewords it.
    episode = load_example_episodes()[0]
    first, second = episode.harness.tools[:2]
    parameters = {
        **second.parameters,
        "$defs": {
            "note": {"type": "string", "description": f"The product to get; see {first.name}."}
        },
        "anyOf": [{"description": f"The product to get, with {first.name}."}],
    }
    tools = (
        first,
        Tool.from_dict(
            {"name": second.name, "description": second.description, "parameters": parameters}
        ),
        *episode.harness.tools[2:],
    )
    episode = episode.with_harness(replace(episode.harness, tools=tools))

    def variant(name: str, **options) -> Variant:
        recipe = Recipe.from_dict(
            {
                "recipe_version": 1,
                "name": "t",
                "seed": 3,
                "variants_per_episode": 1,
                "keep_original": False,
                "pipeline": [{name: options}],
            }
        )
        out = augment_episode(recipe, episode)[0]
        assert isinstance(out, Variant), str(out)  # verified
        return out

    masked = variant("tool_name_mask")
    new = masked.mapping.tool(first.name)
    schema = masked.episode.harness.tool(masked.mapping.tool(second.name)).parameters
    assert list(schema_descriptions(schema))[-2:] == [
        f"The product to get; see {new}.",
        f"The product to get, with {new}.",
    ]
    reworded = variant("tool_description_paraphrase").episode.harness.tool(second.name)
    texts = list(schema_descriptions(reworded.parameters))[-2:]
    assert all(not t.startswith("The product to get") for t in texts), texts
    assert orjson.dumps(reworded.parameters["anyOf"][0]).count(first.name.encode()) == 1


# ---- the quick acceptance test of plain object schemas ------------------------------------------

_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.floats(-5, 5, allow_nan=False)
    | st.sampled_from([0.0, 1.0, 2.0])  # integral floats: jsonschema's integers too
    | st.sampled_from(["", "a", "eu", "1"]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("ab"), inner),
    max_leaves=4,
)
_NAMES = st.sampled_from(["a", "b", "c"])
# Values that Python holds equal and jsonschema does not (True and 1), and the other way round
# (1 and 1.0), drawn often for enums and arguments alike.
_TRICKY = st.sampled_from([True, False, 0, 1, 1.0, 2, "1", "eu"])


@st.composite
def _plain_value_schemas(draw):
    schema = {"type": draw(st.sampled_from(["string", "integer", "number", "boolean"]))}
    if draw(st.booleans()):
        schema["enum"] = draw(st.lists(_TRICKY | _VALUES, min_size=1, max_size=3))
    for bound in ("minimum", "maximum"):
        if schema["type"] in ("integer", "number") and draw(st.booleans()):
            schema[bound] = draw(st.integers(-3, 3) | st.floats(-3, 3))
    if draw(st.booleans()):
        schema["description"] = "a parameter"
    return schema


@st.composite
def _plain_object_schemas(draw):
    properties = draw(st.dictionaries(_NAMES, _plain_value_schemas(), max_size=3))
    schema = {"type": "object", "properties": properties}
    if properties and draw(st.booleans()):
        schema["required"] = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
    extra = draw(st.sampled_from([None, True, False]))
    if extra is not None:
        schema["additionalProperties"] = extra
    return schema


@given(
    schema=_plain_object_schemas(),
    value=st.dictionaries(_NAMES | st.just("z"), _TRICKY | _VALUES, max_size=3) | _VALUES,
)
@example(  # Python holds True == 1; jsonschema's enum does not
    schema={"type": "object", "properties": {"a": {"type": "boolean", "enum": [1]}}},
    value={"a": True},
)
@example(
    schema={"type": "object", "properties": {"a": {"type": "integer", "enum": [False]}}},
    value={"a": 0},
)
@settings(max_examples=400)
def test_the_quick_acceptance_test_accepts_only_what_jsonschema_accepts(schema, value):
    accepts = simple_acceptor(schema)
    assert accepts is not None  # every schema drawn here is a plain one
    if accepts(value):
        assert schema_validator(schema).is_valid(value), (schema, value)


def test_the_quick_acceptance_test_takes_plain_calls_and_leaves_the_rest_to_jsonschema():
    # The bench's tools (an id with a bound, a region enum, a flag), closed as verification
    # closes every tool's arguments.
    schema = arguments_schema(Tool(**synthetic_tool("get_order")["function"]))
    accepts = simple_acceptor(schema)
    assert accepts is not None
    assert accepts({"id": 3, "region": "eu"}) and accepts({"id": 1, "verbose": False})
    for unsure in ({"id": 0}, {"id": True}, {"id": 3.0}, {"region": "eu"}, {"id": 3, "x": 1}):
        assert not accepts(unsure)
    # Any keyword it does not know, at any level, and another draft leave it to jsonschema.
    for other in (
        {**schema, "minProperties": 1},
        {**schema, "properties": {"id": {"type": "string", "pattern": "^a"}}},
        {**schema, "properties": {"id": {"type": ["string", "null"]}}},
        {**schema, "properties": {"id": {"type": "string", "maximum": 3}}},
        {**schema, "$schema": "http://json-schema.org/draft-04/schema#"},
        {"type": "object", "properties": {"tags": {"type": "array"}}},
    ):
        assert simple_acceptor(other) is None


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        # full-width digits, as Japanese data writes them: no \d of ECMA-262's
        (r"^\d{4}-\d{2}-\d{2}$", "２０２５-０５-０３", False),
        (r"^\d{4}-\d{2}-\d{2}$", "2025-05-03", True),
        (r"^\w+$", "café", False),  # \w is [A-Za-z0-9_]
        (r"^\w+$", "cafe_1", True),
        (r"^a\sb$", "a\u3000b", True),  # an ideographic space is ECMA-262's whitespace
        (r"^a[\s,]b$", "a\u00a0b", True),
        (r"^a\Sb$", "a\u00a0b", False),
        (r"^[]a]+$", "a]", False),  # "[]" is ECMA-262's empty class: it matches nothing
        (r"^[^]+$", "a\nb", True),  # and "[^]" any character
        (r"^\d{4}-\d{2}-\d{2}$", "2025-06-30\n", False),  # "$" is the end, not a line's
        (r"^(?<verb>[A-Z][a-z]+) \k<verb>$", "Go Go", True),  # ECMA-262's named groups
        (r"^a.b$", "a\rb", False),  # "." matches no line terminator of ECMA-262's
        (r"^a.b$", "a\u2028b", False),
        (r"^a.b$", "a-b", True),
        (r"^a[.]b$", "a.b", True),  # in a class, "." is a full stop
        (r"\bid\b", "ｉｄ", False),
    ],
)
def test_patterns_read_as_ecma_262(pattern, value, matches):
    """A schema's `pattern` is an ECMA-262 regular expression: Python's `re` read `\\d` over all
    of Unicode, so a Japanese gold date in full-width digits loaded against a tool whose
    pattern (and backend) refuse it."""
    problem = schema_problem(value, {"type": "string", "pattern": pattern})
    assert (problem is None) == matches, problem


def test_pattern_properties_read_as_ecma_262():
    schema = {
        "type": "object",
        "patternProperties": {r"^\d+$": {"type": "integer"}},
    }
    assert schema_problem({"12": 1}, schema) is None
    assert schema_problem({"12": "x"}, schema) is not None
    assert schema_problem({"１２": "x"}, schema) is None  # no \d key: the pattern does not apply


def test_a_unicode_property_escape_is_refused_saying_why():
    """`\\p{L}` is ECMA-262 (with the u flag), which Python's re cannot read: the tool is
    refused, and the reason says what to write instead, not only that it "is not a 'regex'"."""
    schema = {
        "type": "object",
        "properties": {"nom": {"type": "string", "pattern": "^[\\p{L} .'-]+$"}},
    }
    with pytest.raises(
        HarnessError, match=r"properties\.nom\.pattern: .*\\p\{L\}.*write the characters"
    ):
        Tool.from_dict({"name": "f", "parameters": schema})


@pytest.mark.parametrize("pattern", [r"^E\d{6}\Z", r"(?i)^e\d{6}$", r"^(?P<p>E)\d{6}$"])
def test_python_only_regex_syntax_is_refused(pattern):
    """`\\Z`, an inline flag and a Python named group are Python's, not ECMA-262's: read by
    Python, the schema validated calls that any other JSON Schema validator refuses."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": pattern}}}
    with pytest.raises(HarnessError, match="Python's regex syntax, not ECMA-262's"):
        Tool.from_dict({"name": "f", "parameters": schema})
