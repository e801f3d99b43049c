"""The shape of a version's rows, for its card: variants per source, messages and tools per row,
and the languages the rows' gold states (the card's ``language``: what the Hub indexes it by).

Tallied as counts of each value while the rows are written (``hsa generate`` and ``hsa rollout``
feed each table they write), so a card is made without reading the shards again: that pass
decompressed every row's messages after the last batch, with every worker idle (1.2 s per
100,000 rows). ``hsa card`` on a version made earlier reads its shards through the same tally.
The tally is bounded by the number of distinct counts, not by the rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hsa.dataset.writer import reading_parquet
from hsa.model.gold import REPLY_LANGUAGES

# What marks one message in a row's ``messages`` JSON and one tool in its ``tools`` JSON. A
# quote inside a string is escaped (``\"``), so message text never matches.
MESSAGE_MARK = '"role":'
TOOL_MARK = '"type":"function"'


# What a row's maker may count as it makes the row (see :func:`shape_of`), so that the process
# that writes the rows tallies numbers instead of scanning every row's JSON.
SHAPE_COLUMNS = ("hsa_message_count", "hsa_tool_count", "hsa_reply_languages")


def shape_of(messages: str, tools: str, gold: str) -> dict:
    """The :data:`SHAPE_COLUMNS` of one row, from its ``messages``, ``tools`` and ``hsa_gold``
    JSON: what :meth:`RowShape.add` would find scanning them (the same marks, the same reading of
    the gold)."""
    return {
        "hsa_message_count": messages.count(MESSAGE_MARK),
        "hsa_tool_count": tools.count(TOOL_MARK),
        "hsa_reply_languages": sorted(_stated_languages(gold)) if '"language":' in gold else [],
    }


class RowShape:
    """Counts of each value of variants per source, messages per row and tools per row.

    Rows of one source are consecutive (written in input order), so a source's variants are a
    run of equal ``hsa_source_id`` values, which may continue from one table into the next."""

    def __init__(self) -> None:
        self.messages: Counter[int] = Counter()
        self.tools: Counter[int] = Counter()
        # of REPLY_LANGUAGES, those some turn's ``reply.language`` in the rows' gold states
        self.languages: set[str] = set()
        self._runs: Counter[int] = Counter()  # closed runs of one source's rows
        self.first_id: str | None = None
        self._last_id: str | None = None
        self._run = 0

    def add(self, rows: pa.Table | pa.RecordBatch) -> None:
        """Tally ``rows`` (with ``hsa_source_id``, ``messages``, ``tools`` and ``hsa_gold``), in
        write order. Rows that carry their :data:`SHAPE_COLUMNS` (a generate's workers count
        them as they make each row) are tallied from those, without a scan of their JSON."""
        if rows.num_rows == 0:
            return
        if all(name in rows.column_names for name in SHAPE_COLUMNS):
            self.messages.update(tally(rows.column("hsa_message_count")))
            self.tools.update(tally(rows.column("hsa_tool_count")))
            stated = pc.unique(pc.list_flatten(rows.column("hsa_reply_languages"))).to_pylist()
            self.languages |= set(stated) & set(REPLY_LANGUAGES)
        else:
            self.messages.update(_marks(rows.column("messages"), MESSAGE_MARK))
            self.tools.update(_marks(rows.column("tools"), TOOL_MARK))
            if unseen := set(REPLY_LANGUAGES) - self.languages:  # none left to look for
                self.languages |= gold_languages(rows.column("hsa_gold"), unseen)
        for source_id in rows.column("hsa_source_id").to_pylist():
            if self.first_id is None:
                self.first_id = source_id
            if source_id == self._last_id:
                self._run += 1
                continue
            if self._run:
                self._runs[self._run] += 1
            self._last_id, self._run = source_id, 1

    @property
    def per_source(self) -> Counter[int]:
        """Rows per source, the run still open included."""
        return self._runs + Counter({self._run: 1} if self._run else {})

    @classmethod
    def read(cls, root: Path, manifest: dict) -> RowShape:
        """The shape of a written version's rows, read a batch at a time from its shards."""
        shape = cls()
        for shard in manifest["shards"]:
            path = root / shard["path"]
            with reading_parquet(path, root):
                source = pq.ParquetFile(path)
                for batch in source.iter_batches(
                    batch_size=8192, columns=["hsa_source_id", "messages", "tools", "hsa_gold"]
                ):
                    shape.add(batch)
        return shape


def _stated_languages(gold: str) -> set[str]:
    """The ``reply.language`` of every turn of one ``hsa_gold`` value (flat or ``turns``)."""
    try:
        data = orjson.loads(gold)
    except orjson.JSONDecodeError:  # a damaged shard: hsa verify says so, the card names none
        return set()
    turns = data.get("turns", [data]) if isinstance(data, dict) else []
    replies = [t.get("reply") for t in turns if isinstance(t, dict)]
    return {r["language"] for r in replies if isinstance(r, dict) and "language" in r}


def gold_languages(
    gold: pa.Array | pa.ChunkedArray, among: Iterable[str] = REPLY_LANGUAGES
) -> set[str]:
    """Which languages of ``among`` (ISO 639-1 codes) the ``reply.language`` of some turn of
    these ``hsa_gold`` values states."""
    texts = _texts(gold)
    found: set[str] = set()
    for code in among:
        # A quick substring test first (orjson writes no spaces); the rows it flags are parsed,
        # until one confirms it: a tool argument may be called language too.
        needle = f'"language":"{code}"'
        for text in texts:
            flagged = text.filter(pc.match_substring(text, needle))
            if any(code in _stated_languages(value.as_py()) for value in flagged):
                found.add(code)
                break
    return found


def tally(values: pa.Array | pa.ChunkedArray) -> Counter:
    """How many times each value of ``values`` occurs, in order of first occurrence (Arrow's
    ``value_counts``); nulls count nothing. The one reading of ``value_counts`` into a tally."""
    if len(values) == 0:
        return Counter()
    counts = pc.value_counts(values)
    return Counter(
        {
            value: n
            for value, n in zip(
                counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True
            )
            if value is not None
        }
    )


def _marks(column: pa.Array | pa.ChunkedArray, mark: str) -> Counter[int]:
    """How many rows of a JSON column hold ``mark`` each number of times."""
    found: Counter[int] = Counter()
    for text in _texts(column):
        found.update(tally(pc.count_substring(text, mark)))
    return found


def _texts(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """A JSON column's chunks as plain string arrays (the storage of Arrow's JSON type)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return [c.storage if isinstance(c, pa.ExtensionArray) else c for c in chunks]


def median(counts: Counter[int]) -> int | float:
    """The median of the values ``counts`` tallies (at least one): the mean of the middle two
    for an even number of values, an integer when that is whole, so that an odd number of values
    and a whole mean read alike. The one home of this rule (the card's distributions, the
    manifest's rows per harness variant)."""
    total = sum(counts.values())
    middle = (total - 1) // 2, total // 2  # 0-based positions of the middle value(s)
    at: list[int] = []
    seen = 0
    for value in sorted(v for v, n in counts.items() if n > 0):
        seen += counts[value]
        while len(at) < 2 and middle[len(at)] < seen:
            at.append(value)
    mean = (at[0] + at[1]) / 2
    return int(mean) if mean.is_integer() else mean


def distribution(counts: Counter[int]) -> str:
    """``min, median, mean, max`` of the values ``counts`` tallies (:func:`median`), or
    ``none``."""
    total = sum(counts.values())
    if not total:
        return "none"
    values = [v for v, n in counts.items() if n > 0]
    mean = sum(v * n for v, n in counts.items()) / total
    return f"min {min(values)}, median {median(counts):g}, mean {mean:.2f}, max {max(values)}"
