"""JSON Lines in and out: numbered reads that report broken lines, and atomic writes.

orjson is the codec everywhere (it is the hot path of the dataset factory); ``dumps`` is canonical
(sorted keys) so that equal values always serialise to equal bytes.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hsa.errors import HsaError
from hsa.files.textfile import strip_bom


def dumps(value: Any) -> str:
    """Canonical JSON text: sorted keys, no whitespace, UTF-8 kept as is."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class RefusedJson(orjson.JSONDecodeError):
    """Valid JSON text that :func:`loads` refuses, its message saying why in words."""


class LongInteger(RefusedJson):
    """An integer beyond 64 bits in JSON text (see :func:`loads`)."""


class NestedTooDeep(RefusedJson):
    """JSON text nested deeper than :data:`MAX_DEPTH` (see :func:`loads`)."""


class DuplicateKey(RefusedJson):
    """A JSON object that names one key twice (see :func:`loads`)."""


# How deep the JSON that users write may nest (objects and lists): orjson reads 1,023 levels but
# writes no more than 254, and the scorer's comparison recurses twice per level, past Python's
# limit of 1,000 frames at about 500. 128 is serde_json's limit too; tool arguments nest a few.
MAX_DEPTH = 128
# A JSON string, read whole: brackets, digits and quotes in text are text.
_JSON_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
# A JSON string or a bracket that opens or closes a level: the tokens of JSON text that a scan
# of its nesting or strings reads.
JSON_STRING_OR_BRACKET = re.compile(rf"{_JSON_STRING}|[\[\]{{}}]")

# Integers orjson reads as integers and writes back: beyond them it reads a float, silently.
_INTEGERS = range(-(2**63), 2**64)
# A run of 19 digits, which every integer outside _INTEGERS has: a quick test that rules out
# nearly every text before the exact scan below. Made at C speed: the text's bytes with every
# digit made "0" and every other byte a space hold the run as 19 "0"s (the pattern \d{19} took
# 46 us on a 2.3 KB episode line, this 5 us; JSON numbers are ASCII digits).
_LONG_RUN = b"0" * 19
_DIGITS_ONLY = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))  # 48: "0"
# A JSON string (skipped whole: digits in text are text) or a number.
_STRING_OR_NUMBER = re.compile(rf"{_JSON_STRING}|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
# Where a key may end in JSON text: a quote, whitespace, a colon. Every key of every object ends
# so, and so may text inside a string (after an escaped backslash), so where there are no more of
# them than the value read has keys, no object named a key twice (see _key_ends).
_KEY_ENDS = re.compile(rb'(?<!(?<!\\)\\)"\s*:')
_QUOTE_THEN_SPACE = re.compile(rb'"\s')
# The tokens of JSON text that say where a key stands: strings (read whole), brackets, commas.
_STRING_BRACKET_OR_COMMA = re.compile(rf"{_JSON_STRING}|[\[\]{{}},]")
_COLON = re.compile(r"\s*:")


def loads(text: str | bytes) -> Any:
    """JSON text as Python values, as orjson reads it, refusing an integer beyond 64 bits
    (:class:`LongInteger`, a JSON decode error): orjson reads one as a float, silently
    (an order number 123456789012345678901234567890 becomes 1.2345678901234568e+29, and so
    every row, gold value and score made from it), and cannot write one. Every read of
    JSON that users write (episode lines, tool-call arguments, tool schema files) goes
    through here. Text nested deeper than :data:`MAX_DEPTH` is refused too
    (:class:`NestedTooDeep`): hsa could not write it back, nor compare it without running out
    of stack. So is an object that names a key twice (:class:`DuplicateKey`): the reader keeps
    the last value and drops the first, silently (a schema's property written twice, a message
    with two "content"), as a harness's YAML refuses it (hsa.files.textfile.load_yaml)."""
    value = orjson.loads(text)
    raw = text.encode() if isinstance(text, str) else bytes(text)  # the counts below are of bytes
    if isinstance(value, dict | list) and _key_ends(raw) > _key_count(value):
        _refuse_duplicate_key(_document(text))
    # Nesting that deep takes as many opening brackets, and as many closing ones: the length
    # and a count (at C speed) rule out nearly every text before the exact test, a walk of the
    # value read, which is what hsa keeps (on 7 KB of 402 objects and lists, loads took 540 us
    # with a scan of the text, which reads every string too, and 387 us with the walk); the
    # text is scanned only to say where.
    if len(raw) > 2 * MAX_DEPTH:
        opening = raw.count(b"{") + raw.count(b"[")
        if opening > MAX_DEPTH and _deeper_than_max(value):
            _refuse_deep_nesting(_document(text), _deep_path(value))
    if _LONG_RUN in raw.translate(_DIGITS_ONLY):
        document = _document(text)
        for match in _STRING_OR_NUMBER.finditer(document):
            token = match.group(0)
            if token[0] == '"' or "." in token or "e" in token or "E" in token:
                continue
            if int(token) not in _INTEGERS:
                raise LongInteger(
                    f"integer {token} does not fit in 64 bits, and the JSON reader takes "
                    f"it for the float {float(token)!r}; write it as a string",
                    document,
                    match.start(),
                )
    return value


def _refuse_deep_nesting(document: str, path: tuple) -> None:
    """Raise :class:`NestedTooDeep` at the bracket of valid JSON ``document`` that opens level
    :data:`MAX_DEPTH` + 1, naming the field it is in (``path``, from :func:`_deep_path`)."""
    depth = 0
    for match in JSON_STRING_OR_BRACKET.finditer(document):
        token = match.group(0)
        if token == "{" or token == "[":
            depth += 1
            if depth > MAX_DEPTH:
                raise NestedTooDeep(
                    f"JSON nested deeper than {MAX_DEPTH} levels of objects and lists (in "
                    f"{_field(path)}), which hsa does not read",
                    document,
                    match.start(),
                )
        elif token == "}" or token == "]":
            depth -= 1


def _document(text: str | bytes) -> str:
    """JSON text as a string, to scan and to name positions in."""
    return text if isinstance(text, str) else bytes(text).decode("utf-8")


def _key_ends(raw: bytes) -> int:
    """How many places in JSON text (its bytes) a key may end (see ``_KEY_ENDS``): no fewer than
    the keys written. Counted at C speed where no quote is followed by whitespace (JSON Lines
    as orjson and Python write them: this is every episode line), by the pattern elsewhere."""
    if _QUOTE_THEN_SPACE.search(raw):
        return len(_KEY_ENDS.findall(raw))
    # a quote after a lone backslash is inside a string (tool-call arguments written as JSON
    # strings hold many: "{\\"city\\": ...}"); one after an escaped backslash may end a key
    return raw.count(b'":') - raw.count(b'\\":') + raw.count(b'\\\\":')


def _key_count(value: dict | list) -> int:
    """How many keys the objects in ``value`` have, all told."""
    count = 0
    stack = [value]
    while stack:
        node = stack.pop()
        children: Iterable = node
        if type(node) is dict:
            count += len(node)
            children = node.values()
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append(child)
    return count


def _refuse_duplicate_key(document: str) -> None:
    """Raise :class:`DuplicateKey` at the second key of valid JSON ``document`` that its object
    named already, naming the field; return when every object's keys differ (the strings only
    looked like keys)."""
    # Per open object or list: the keys read so far (None for a list), and where in it the
    # text is (the last key read, or the list index).
    frames: list[tuple[set | None, list]] = []
    for match in _STRING_BRACKET_OR_COMMA.finditer(document):
        token = match.group(0)
        if token == "{":
            frames.append((set(), [None]))
        elif token == "[":
            frames.append((None, [0]))
        elif token == "}" or token == "]":
            frames.pop()
        elif token == ",":
            keys, at = frames[-1]
            if keys is None:
                at[0] += 1
        elif frames:
            keys, at = frames[-1]
            if keys is None or not _COLON.match(document, match.end()):
                continue  # a string in a list, or an object's value
            key = orjson.loads(token)
            if key in keys:
                path = (*(frame[1][0] for frame in frames[:-1]), key)
                raise DuplicateKey(
                    f"key {key!r} is written twice in one object (at {_field(path)}): the "
                    f"JSON reader would keep the last value and drop the first; keep one",
                    document,
                    match.start(),
                )
            keys.add(key)
            at[0] = key


def _deeper_than_max(value: Any) -> bool:
    """Whether ``value`` nests objects and lists deeper than :data:`MAX_DEPTH`."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _deep_path(value: Any) -> tuple:
    """The keys and indices on the way to the first object or list of ``value`` deeper than
    :data:`MAX_DEPTH` (a value :func:`_deeper_than_max` says has one), found without recursion."""
    stack: list[tuple[Any, tuple]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if len(path) >= MAX_DEPTH:
            return path
        items = node.items() if isinstance(node, dict) else enumerate(node)
        # reversed: the first child is taken first, so the field is the first in the text
        stack.extend(
            (child, (*path, key))
            for key, child in reversed(list(items))
            if isinstance(child, dict | list)
        )
    raise AssertionError("no object or list is deeper than MAX_DEPTH")


def _field(path: tuple, shown: int = 6) -> str:
    """The first ``shown`` keys and indices of ``path`` (``gold.turns[0].calls...``)."""
    parts = [f"[{key}]" if isinstance(key, int) else f".{key}" for key in path[:shown]]
    return "".join(parts).lstrip(".") + ("..." if len(path) > shown else "")


def json_error(exc: orjson.JSONDecodeError) -> str:
    """What is wrong with JSON text that :func:`loads` refused, in words."""
    return str(exc) if isinstance(exc, RefusedJson) else f"not valid JSON: {exc}"


def line_error(raw: bytes, exc: orjson.JSONDecodeError) -> str:
    """Why a line does not parse: bytes that are no UTF-8 said as such, with where (orjson
    says "surrogates not allowed: line 1 column 1"), else the parse error."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"not valid UTF-8 at byte {bad.start} of the line (is the file in another encoding?)"
    # The parser counts lines within the text it was given, one line of the file: its "line 1
    # column 2014" on the file's line 3 reads as the file's first line, and its "line 2 column
    # 1" (past the line's own end) as the file's second.
    error = _IN_THE_LINE.sub(r"at column \1 of the line", json_error(exc))
    return _PAST_THE_LINE.sub("at the end of the line (a record is written on one line)", error)


_IN_THE_LINE = re.compile(r"line 1 column (\d+) \(char \d+\)")
_PAST_THE_LINE = re.compile(r"line [2-9]\d* column \d+ \(char \d+\)")


@dataclass(frozen=True, slots=True)
class Line:
    """One physical line of a JSONL file: its 1-based number and either a value or a parse error."""

    number: int
    value: Any = None
    error: str | None = None


# What a file that is no UTF-8 text starts with, and what to do about it: read as JSON Lines,
# each of its lines would be a reject with a parse error that hides the cause.
_FOREIGN_STARTS = (
    (b"\x1f\x8b", "gzip-compressed: decompress it first (gunzip)"),
    (b"\xff\xfe", "UTF-16 text: convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text: convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"),
    (b"PAR1", "a Parquet file: write its rows as JSON Lines first"),
    (b"PK\x03\x04", "a zip archive: extract it first"),
)


def input_file(path: str | os.PathLike, what: str) -> Path:
    """``path``, checked to be a regular file (``what`` names it in the error): a run reads its
    inputs more than once (to count, to fingerprint, to read), which a folder, a device or a
    pipe does not allow."""
    path = Path(path)
    if not path.exists():
        raise HsaError(f"{what} does not exist", file=str(path))
    if path.is_dir():
        raise HsaError(f"{what} is a folder; give the file itself", file=str(path))
    if not path.is_file():
        raise HsaError(f"{what} is not a regular file (a device or a pipe)", file=str(path))
    return path


def raw_lines(path: str | os.PathLike, *, what: str = "") -> Iterator[tuple[int, bytes]]:
    """Every non-blank line of ``path`` as (1-based number, bytes as read, line end included);
    ``what`` names the file in the error when it cannot be opened."""
    path = Path(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise HsaError(
            f"cannot read{' ' + what if what else ''}: {exc.strerror}", file=str(path)
        ) from exc
    with handle:
        first = True
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                for start, why in _FOREIGN_STARTS:
                    if raw.startswith(start):
                        raise HsaError(f"not UTF-8 JSON Lines: the file is {why}", file=str(path))
                raw = strip_bom(raw)  # an encoding mark, not part of the first row
            if raw.strip():
                if first:
                    _refuse_one_document(raw.strip(), path)
                    first = False
                yield number, raw


def _refuse_one_document(line: bytes, path: Path) -> None:
    """Refuse a file whose first row opens a JSON value it does not close (a pretty-printed
    array or object): read as JSON Lines, each of its lines would be a reject."""
    if line[:1] not in (b"[", b"{"):
        return
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        if line in (b"[", b"{") or (line.startswith(b"[") and line.endswith(b",")):
            raise HsaError(
                "not JSON Lines: the file is one JSON value written over many lines; "
                "write one object per line (for an array: jq -c '.[]' FILE)",
                file=str(path),
            ) from None


def read_lines(path: str | os.PathLike) -> Iterator[Line]:
    """Yield every non-blank line of ``path``; a line that is not JSON carries its error instead."""
    for number, raw in raw_lines(path):
        try:
            yield Line(number, loads(raw))
        except orjson.JSONDecodeError as exc:
            yield Line(number, error=line_error(raw, exc))


def _process_umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


# Read once, when the process starts using hsa: reading it means setting it for a moment, which
# a thread writing a file meanwhile (the engines run threads) would see.
_UMASK = _process_umask()


def plain_permissions(path: str | os.PathLike, *, folder: bool = False) -> None:
    """Give a file (or ``folder``) that mkstemp/mkdtemp made (0600/0700: the creator alone may
    read it) the permissions a plain open()/mkdir() would, the umask applied: what is renamed
    into place is published, and others (a datasets server, a colleague) must read it."""
    os.chmod(path, (0o777 if folder else 0o666) & ~_UMASK)


def check_output_file(path: str | os.PathLike) -> None:
    """Refuse, before anything is written, a file path that cannot be written: a folder, or one
    below a file."""
    path = Path(path)
    if path.is_dir():
        raise HsaError("output path is a directory, expected a file", file=str(path))
    above = next((p for p in path.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise HsaError(f"cannot write below {str(above)!r}: it is a file", file=str(path))


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` only if the block succeeds."""
    path = Path(path)
    check_output_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    plain_permissions(tmp)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(
    path: str | os.PathLike, rows: Iterable[Any], *, after_existing: bool = False
) -> int:
    """Write rows as JSON lines, atomically; return how many were written.
    ``after_existing``: the lines already in ``path`` stay, the rows after them.

    Keys keep their order, as the rows hold them (the same rows give the same bytes): a tool's
    ``properties`` are in the order the model reads them, which ``tool_property_order`` varies
    and an imported schema has; sorted, every episode written by ``hsa import`` or ``hsa
    augment`` listed its parameters alphabetically."""
    count = 0
    earlier = Path(path).read_bytes() if after_existing and Path(path).is_file() else b""
    with atomic_path(path) as tmp, open(tmp, "wb") as out:
        out.write(earlier)
        for row in rows:
            out.write(orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE))
            count += 1
    return count
