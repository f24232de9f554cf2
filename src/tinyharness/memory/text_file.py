"""The SQLite store's full-text postings (``TextIndex``) kept in a file beside the database.

Building the postings means reading every token instance from FTS5 (3-7 s at 100k memories on
a busy machine, in a background thread while FTS5 ranks row by row); the file lets the next
process rank from the postings from its first search. Like the vector index's snapshot
(``index_file``), it is a cache of the database, never trusted blindly:

- written whole through the confined writer (``safefs``: temp file, fsync, rename), so a reader
  sees an old file or a new one;
- a fixed header (magic, format, the ``seq`` it reflects, row and token counts, the context
  weight, the body's length and a CRC-32 over the header's fields and the body): a short, long,
  damaged file or one of another format or weight is refused (``SnapshotRefused``);
- what it says is checked again after decoding (the counts add up, rows ascend, scope codes in
  range) and then against the database by the store: a file newer than the database or naming
  another memory at its highest row is refused; otherwise the rows stamped since its ``seq`` are
  applied and the result must agree with FTS5's own counters (rows and tokens per column, its
  "averages" record) before its first use, as before every use. A file that fails is deleted and
  the postings are built from FTS5 again.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..safefs import Folder
from .index_file import SnapshotRefused, read_bytes, sweep
from .text_index import TextIndex

MAGIC = b"THTEXTIX"
FORMAT = 1
_PREFIX = struct.Struct("<8sII")  # magic, format, length of the JSON header
_MAX_HEADER = 1 << 20


def snapshot_name(database: Path) -> str:
    """The file's name beside ``database``."""
    return f"{database.name}.text.idx"


def encode(index: TextIndex, last: tuple[int, str]) -> bytes:
    """The file of ``index`` as it stands; ``last``: its highest live row and that row's memory id."""
    named, terms, tables = index.arrays()
    words = json.dumps(terms, ensure_ascii=False).encode()
    body = words + b"".join(
        np.ascontiguousarray(named[name], dtype=dtype).tobytes() for name, dtype, _ in TextIndex.LAYOUT
    )
    fields: dict[str, Any] = {
        "seq": index.seq,
        "rows": len(named["rowids"]),
        "terms": len(terms),
        "instances": len(named["instances"]),
        "tokens": list(index.tokens),
        "context_weight": index.context_weight,
        "last_rowid": last[0],
        "last_id": last[1],
        "tables": tables,
        "words_bytes": len(words),
        "body_bytes": len(body),
    }
    fields["crc32"] = _checksum(fields, body)
    header = json.dumps(fields, ensure_ascii=False).encode()
    header += b" " * (-(_PREFIX.size + len(header)) % 64)
    return _PREFIX.pack(MAGIC, FORMAT, len(header)) + header + body


def _checksum(fields: dict[str, Any], body: bytes | memoryview) -> int:
    core = {key: value for key, value in fields.items() if key != "crc32"}
    return zlib.crc32(body, zlib.crc32(json.dumps(core, ensure_ascii=False).encode()))


def decode(data: bytes | bytearray, context_weight: float) -> tuple[TextIndex, int, str]:
    """The index in ``data``, its highest live row and that row's memory id; ``SnapshotRefused``
    if the bytes are not a whole, intact file of postings weighted ``context_weight``."""
    if len(data) < _PREFIX.size:
        raise SnapshotRefused("shorter than its header")
    magic, version, header_bytes = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise SnapshotRefused("not a full-text postings file")
    if version != FORMAT:
        raise SnapshotRefused(f"format {version}, this version reads {FORMAT}")
    if header_bytes > _MAX_HEADER or _PREFIX.size + header_bytes > len(data):
        raise SnapshotRefused("header cut short")
    try:
        header: dict[str, Any] = json.loads(data[_PREFIX.size : _PREFIX.size + header_bytes])
        seq, rows, term_count = int(header["seq"]), int(header["rows"]), int(header["terms"])
        instance_count, words_bytes = int(header["instances"]), int(header["words_bytes"])
        tokens = (int(header["tokens"][0]), int(header["tokens"][1]))
        weight, crc = float(header["context_weight"]), int(header["crc32"])
        body_bytes = int(header["body_bytes"])
        tables = [[str(text) for text in table] for table in header["tables"]]
        last_rowid, last_id = int(header["last_rowid"]), str(header["last_id"])
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise SnapshotRefused(f"header unreadable ({exc})") from None
    if weight != context_weight:
        raise SnapshotRefused(f"context weighted {weight}, not {context_weight}")
    if min(rows, term_count, instance_count, words_bytes) < 0 or len(tables) != 3:
        raise SnapshotRefused("header out of range")
    lengths = {"counts": term_count, "instances": instance_count}
    sizes = [
        lengths.get(name, rows) * max(columns, 1) * np.dtype(dtype).itemsize
        for name, dtype, columns in TextIndex.LAYOUT
    ]
    body = memoryview(data)[_PREFIX.size + header_bytes :]
    if len(body) != body_bytes or body_bytes != words_bytes + sum(sizes):
        raise SnapshotRefused(f"body of {len(body)} bytes where the header says {body_bytes} (torn?)")
    if _checksum(header, body) != crc:
        raise SnapshotRefused("checksum mismatch (damaged)")
    try:
        terms = [str(term) for term in json.loads(bytes(body[:words_bytes]))]
    except ValueError as exc:
        raise SnapshotRefused(f"terms unreadable ({exc})") from None
    named: dict[str, npt.NDArray[Any]] = {}
    offset = words_bytes
    for (name, dtype, columns), size in zip(TextIndex.LAYOUT, sizes, strict=True):
        array = np.frombuffer(body[offset : offset + size], dtype=dtype)
        if body.readonly:  # the index writes to its arrays
            array = array.copy()
        named[name] = array.reshape(-1, columns) if columns else array
        offset += size
    _check(named, terms, tables, rows, tokens, last_rowid)
    return TextIndex.from_arrays(named, terms, tables, seq, weight), last_rowid, last_id


def _check(
    named: dict[str, npt.NDArray[Any]],
    terms: list[str],
    tables: list[list[str]],
    rows: int,
    tokens: tuple[int, int],
    last_rowid: int,
) -> None:
    """What the checksum cannot prove (a writer's mistake): the arrays agree with each other."""
    counts, rowids, scope = named["counts"], named["rowids"], named["scope"]
    if len(terms) != len(counts) or len(set(terms)) != len(terms) or (len(counts) and counts.min() < 0):
        raise SnapshotRefused("terms and their counts disagree")
    if int(counts.sum()) != len(named["instances"]):
        raise SnapshotRefused("the counts do not add up to the instances")
    if (int(named["body"].sum()), int(named["context"].sum())) != tokens or tokens[0] + tokens[1] != len(
        named["instances"]
    ):
        raise SnapshotRefused("token counts disagree")
    if len(rowids) != rows or (rows and (np.any(np.diff(rowids) <= 0) or int(rowids[-1]) != last_rowid)):
        raise SnapshotRefused("rows out of order, or not the highest its header names")
    if rows and (scope.min() < 0 or any(int(scope[:, f].max()) >= len(tables[f]) for f in range(3))):
        raise SnapshotRefused("scope codes out of range")


def read(folder: Path, name: str, context_weight: float) -> tuple[TextIndex, int, str] | None:
    """The postings file ``name`` in ``folder`` (see ``decode``), or None when there is none;
    ``SnapshotRefused`` when it cannot be used."""
    data = read_bytes(folder, name)
    if data is None:
        return None
    return decode(data, context_weight)


def save(folder: Path, name: str, data: bytes) -> None:
    """Replace the file ``name`` in ``folder`` with ``data`` (from ``encode``) atomically,
    first deleting what writers killed mid-write left."""
    root = Folder(folder)
    sweep(root, name)
    root.write(name, data)
