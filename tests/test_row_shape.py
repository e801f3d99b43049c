"""The shape of a version's rows for its card (hsa.dataset.row_shape): tallied while writing, it
says what reading the written shards says, however the rows arrive."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from itertools import pairwise

import polars as pl
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from hsa.dataset.row_shape import SHAPE_COLUMNS, RowShape, distribution, median, shape_of
from hsa.dataset.rows import ROW_SCHEMA


def polars_distribution(values: list[int]) -> str:
    """What the card printed when it held every value in a polars Series (before the tally)."""
    series = pl.Series(values, dtype=pl.Int64)
    return (
        f"min {series.min()}, median {series.median():g}, mean {series.mean():.2f}, "
        f"max {series.max()}"
    )


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=200))
def test_the_distribution_of_a_tally_is_that_of_its_values(values):
    assert distribution(Counter(values)) == polars_distribution(values)


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=200))
def test_the_median_of_a_tally_is_that_of_its_values_and_whole_when_it_can_be(values):
    found = median(Counter(values))
    assert found == statistics.median(values)
    # the manifest writes 5, not 5.0, for a whole median (rows per harness variant)
    assert isinstance(found, int) == float(found).is_integer()


def test_an_empty_tally_has_no_distribution():
    assert distribution(Counter()) == "none"


def _rows(sources: list[tuple[str, int, int]]) -> pa.Table:
    """One row per (source id, messages, tools); a message's text quotes "role": in the way a
    JSON string holds it, which is no message."""
    messages = [
        json.dumps([{"role": "user", "content": 'say "role": here'}] * m, separators=(",", ":"))
        for _, m, _ in sources
    ]
    tools = [
        json.dumps([{"type": "function", "function": {"name": "f"}}] * t, separators=(",", ":"))
        for _, _, t in sources
    ]
    columns = {
        "hsa_source_id": pa.array([s for s, _, _ in sources]),
        "messages": pa.array(messages, ROW_SCHEMA.field("messages").type),
        "tools": pa.array(tools, ROW_SCHEMA.field("tools").type),
        # a gold that states no language, as every row has one
        "hsa_gold": pa.array(
            ['{"at":1,"no_call":true}'] * len(sources), ROW_SCHEMA.field("hsa_gold").type
        ),
    }
    return pa.table(columns)


rows_of_sources = st.lists(
    st.tuples(st.integers(1, 4), st.integers(0, 6), st.integers(0, 5)), min_size=1, max_size=30
).map(
    lambda sources: [
        (f"s{i}", m, t) for i, (count, m, t) in enumerate(sources) for _ in range(count)
    ]
)


@given(rows_of_sources, st.lists(st.integers(0, 200), max_size=6))
def test_the_tally_does_not_depend_on_how_the_rows_arrive(rows, cuts):
    table = _rows(rows)
    whole = RowShape()
    whole.add(table)
    pieces = RowShape()
    bounds = sorted({0, table.num_rows, *(c % (table.num_rows + 1) for c in cuts)})
    for start, end in pairwise(bounds):
        pieces.add(table.slice(start, end - start).to_batches()[0])
    expected_runs = Counter(Counter(s for s, _, _ in rows).values())
    for shape in (whole, pieces):
        assert shape.per_source == expected_runs  # a source split over two tables is one run
        assert shape.messages == Counter(m for _, m, _ in rows)
        assert shape.tools == Counter(t for _, _, t in rows)
        assert shape.first_id == "s0"


@given(
    rows_of_sources,
    st.lists(st.sampled_from([None, "en", "zh", "xx"]), min_size=1, max_size=30),
)
def test_counts_a_rows_maker_writes_tally_as_a_scan_of_its_json_does(rows, stated):
    # hsa generate's workers count each row's messages, tools and stated reply languages as
    # they make it (shape_of); the card must say what reading the shards says. A tool argument
    # named language is no reply language.
    table = _rows(rows)
    golds = []
    for k in range(table.num_rows):
        language = stated[k % len(stated)]
        turn = {"at": 1, "calls": [{"name": "f", "arguments": {"language": ["de"]}}]}
        if language is not None:
            turn["reply"] = {"language": language}
        golds.append(json.dumps({"turns": [turn]}, separators=(",", ":")))
    table = table.set_column(
        table.schema.get_field_index("hsa_gold"),
        "hsa_gold",
        pa.array(golds, ROW_SCHEMA.field("hsa_gold").type),
    )
    made = [
        shape_of(m.as_py(), t.as_py(), g.as_py())
        for m, t, g in zip(
            table.column("messages").chunk(0).storage,
            table.column("tools").chunk(0).storage,
            table.column("hsa_gold").chunk(0).storage,
            strict=True,
        )
    ]
    counted = table
    for name in SHAPE_COLUMNS:
        counted = counted.append_column(name, pa.array([row[name] for row in made]))
    scanned, tallied = RowShape(), RowShape()
    scanned.add(table)
    tallied.add(counted)
    assert tallied.messages == scanned.messages == Counter(m for _, m, _ in rows)
    assert tallied.tools == scanned.tools
    assert tallied.languages == scanned.languages
    assert tallied.per_source == scanned.per_source
