"""Exact text I/O for the files hsa reads: UTF-8, line endings kept byte for byte, YAML that reads
back.

Path.read_text translates ``\\r\\n`` and ``\\r`` to ``\\n``; a skill whose text carries them would
not survive a folder round trip, so harness files are read and written as bytes. A UTF-8 byte order
mark at the start of a file (editors on Windows write one) is an encoding mark, not text: it is
dropped on reading, here and in hsa.files.jsonl.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hsa.errors import HsaError

BOM = b"\xef\xbb\xbf"


def strip_bom(data: bytes) -> bytes:
    return data[len(BOM) :] if data.startswith(BOM) else data


def read_bytes(path: Path) -> bytes:
    """A file's bytes without a leading UTF-8 byte order mark."""
    return strip_bom(Path(path).read_bytes())


def decode_utf8(data: bytes, *, file: str, error: type[HsaError] = HsaError) -> str:
    """``data`` as UTF-8 text, or ``error`` naming ``file`` and the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text: {exc.reason} at byte {exc.start}", file=file) from None


def read_text(path: Path) -> str:
    return decode_utf8(read_bytes(path), file=str(path))


def write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))


def dump_yaml(data: Any) -> str:
    """YAML that keeps non-ASCII text readable, unless that would not read back equal.

    PyYAML writes some characters (U+0085, U+2028...) raw in plain scalars and reads them back
    as line breaks; for such data the ASCII-escaped form is used instead."""
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    if yaml.safe_load(text) != data:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=False, width=100)
    return text


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key written twice in one mapping is an error: by
    default the last one wins in silence (``seed: 1`` ... ``seed: 2``)."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *base": keys merged, not written
            key: Any = "<<"
        else:
            key = loader.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                # What is read from YAML is written as JSON (fingerprints, rows, manifests),
                # whose keys are strings: ``{1: hot}`` would fail far from this line.
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} is not a string; quote it ('{key}':)",
                    key_node.start_mark,
                )
        try:
            repeated = key in seen
        except TypeError:  # an unhashable key: the mapping constructor names it
            break
        if repeated:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is written twice in one mapping", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def _int_of_64_bits(loader: _UniqueKeyLoader, node: yaml.ScalarNode) -> int:
    """An integer that fits in 64 bits: what is read from YAML is written as JSON (tools,
    hook configs, recipes, fingerprints), and orjson writes no integer beyond (nor does
    hsa.files.jsonl read one)."""
    value = loader.construct_yaml_int(node)
    if not -(2**63) <= value < 2**64:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"integer {value} does not fit in 64 bits; write it as a string",
            node.start_mark,
        )
    return value


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _int_of_64_bits)


def _as_written(loader: _UniqueKeyLoader, node: yaml.ScalarNode) -> str:
    """A date or time stays the text it is (``2024-05-01``), as JSON would hold it."""
    return loader.construct_scalar(node)


def _no_json_value(loader: _UniqueKeyLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"{node.tag.rsplit(':', 1)[-1]} is no JSON value (what is read here is written as JSON); "
        f"write a list or a mapping",
        node.start_mark,
    )


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:timestamp", _as_written)
for _tag in ("set", "binary", "omap", "pairs"):
    _UniqueKeyLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _no_json_value)


def load_yaml(text: str) -> Any:
    """YAML a user wrote (a harness, a skill's front matter, a recipe), read safely; a key
    written twice in one mapping, or an integer beyond 64 bits, is a ``yaml.YAMLError`` naming
    it and its line."""
    return yaml.load(text, Loader=_UniqueKeyLoader)
