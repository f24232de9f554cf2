"""The SQLite store's vector index kept in a file beside the database, never trusted blindly.

Building the index means reading every vector from the database and quantizing it (seconds at
100k memories); a snapshot file lets the next process start from where the last one stopped and
read only the rows written since (the store's rising ``seq``). The file is a cache of the
database, which stays the only source of truth:

- it is written whole through the confined writer (``safefs``: a temp file in the same folder,
  fsync, rename), so a reader sees an old snapshot or a new one, never half of one;
- it opens with a fixed header (magic, format version, dimension, row count, the ``seq`` it
  reflects, the embedding model, the body's length and its CRC-32); a file that is short, long,
  of another format, model or dimension, or whose body does not match its checksum, is refused
  (``SnapshotRefused``, saying why) and the store builds the index from the rows again;
- the approximate index (``CoarseIndex``), once a search built it, follows the arrays in the
  body under the same checksum, and must hold exactly as many keys as the arrays; one that
  faiss cannot read, or of another size, refuses the whole file;
- what the file says is compared with the database after loading: a snapshot newer than the
  database, one whose highest row holds another memory in the database (another database was
  put in its place, or a backup restored and written on), or one whose row count, once the rows
  written since are applied, differs from the database's count of current vectors, is refused.

Files are opened and replaced through ``safefs`` (the package's rule allows it).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ..safefs import Folder
from .coarse_index import CoarseIndex
from .vector_index import APPROX_FROM, VectorIndex

MAGIC = b"THVECIX\x00"
FORMAT = 2  # 2: the approximate index after the arrays
_PREFIX = struct.Struct("<8sII")  # magic, format, length of the JSON header
_MAX_HEADER = 1 << 20
LEFTOVER_AGE = 600.0  # seconds after which a snapshot's temp file is a killed writer's leftover


class SnapshotRefused(ValueError):
    """The snapshot file cannot be used (the message says why); the index is built from the rows."""


def snapshot_name(database: Path, model: str) -> str:
    """The snapshot's file name beside ``database``: one per embedding model (a store opened with
    another model keeps its own)."""
    tag = hashlib.sha1(model.encode()).hexdigest()[:12]
    return f"{database.name}.vectors-{tag}.idx"


@dataclass(frozen=True)
class Snapshot:
    """What a snapshot file holds: the index as it stood at ``seq``, and the id of the memory
    at its highest row (``last_rowid``; 0 and "" when empty), to tell whether it describes this
    database: row ids only grow and a row's id (a random uuid) never changes."""

    index: VectorIndex
    seq: int
    last_rowid: int
    last_id: str


def encode(index: VectorIndex, seq: int, model: str, last: tuple[int, str]) -> bytes:
    """The snapshot of ``index`` as it stands at ``seq``; ``last``: its highest row and that
    row's memory id."""
    named, tables = index.arrays()
    count = len(named["keys"])
    coarse = index.coarse_state()
    coarse_body = coarse.to_bytes() if coarse is not None else b""
    body = b"".join(
        np.ascontiguousarray(named[name], dtype=dtype).tobytes() for name, dtype, _ in VectorIndex.LAYOUT
    )
    body += coarse_body
    fields: dict[str, Any] = {
        "dim": index.dim,
        "rows": count,
        "seq": seq,
        "model": model,
        "last_rowid": last[0],
        "last_id": last[1],
        "tables": tables,
        "body_bytes": len(body),
        "coarse_bytes": len(coarse_body),
        "coarse_trained": coarse.trained_rows if coarse is not None else 0,
    }
    fields["crc32"] = _checksum(fields, body)
    header = json.dumps(fields, ensure_ascii=False).encode()
    header += b" " * (-(_PREFIX.size + len(header)) % 64)  # the arrays start 64-byte aligned
    return _PREFIX.pack(MAGIC, FORMAT, len(header)) + header + body


def _checksum(fields: dict[str, Any], body: bytes | memoryview) -> int:
    """CRC-32 of the header's fields (all but the checksum, as JSON) and then the body: a damaged
    scope name or count is caught as surely as a damaged vector."""
    core = {key: value for key, value in fields.items() if key != "crc32"}
    return zlib.crc32(body, zlib.crc32(json.dumps(core, ensure_ascii=False).encode()))


def decode(
    data: bytes | bytearray, model: str, *, exact_below: int, approx_from: int = APPROX_FROM
) -> Snapshot:
    """The snapshot in ``data``; ``SnapshotRefused`` if the bytes are not a whole, intact
    snapshot of ``model``'s vectors."""
    if len(data) < _PREFIX.size:
        raise SnapshotRefused("shorter than its header")
    magic, version, header_bytes = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise SnapshotRefused("not a vector index snapshot")
    if version != FORMAT:
        raise SnapshotRefused(f"format {version}, this version reads {FORMAT}")
    if header_bytes > _MAX_HEADER or _PREFIX.size + header_bytes > len(data):
        raise SnapshotRefused("header cut short")
    try:
        header: dict[str, Any] = json.loads(data[_PREFIX.size : _PREFIX.size + header_bytes])
        dim, rows, seq = int(header["dim"]), int(header["rows"]), int(header["seq"])
        tables = [[str(text) for text in table] for table in header["tables"]]
        body_bytes, crc = int(header["body_bytes"]), int(header["crc32"])
        saved_model = str(header["model"])
        last_rowid, last_id = int(header["last_rowid"]), str(header["last_id"])
        coarse_bytes, coarse_trained = int(header["coarse_bytes"]), int(header["coarse_trained"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotRefused(f"header unreadable ({exc})") from None
    if saved_model != model:
        raise SnapshotRefused(f"vectors of model {saved_model!r}, not {model!r}")
    if dim <= 0 or rows < 0 or len(tables) != 3 or coarse_bytes < 0:
        raise SnapshotRefused("header out of range")
    widths = [1 if columns == 0 else dim if columns < 0 else columns for _, _, columns in VectorIndex.LAYOUT]
    layout = zip(VectorIndex.LAYOUT, widths, strict=True)
    sizes = [rows * width * np.dtype(dtype).itemsize for (_, dtype, _), width in layout]
    body = memoryview(data)[_PREFIX.size + header_bytes :]
    if len(body) != body_bytes or body_bytes != sum(sizes) + coarse_bytes:
        raise SnapshotRefused(f"body of {len(body)} bytes where the header says {body_bytes} (torn?)")
    if _checksum(header, body) != crc:
        raise SnapshotRefused("checksum mismatch (damaged)")
    named: dict[str, npt.NDArray[Any]] = {}
    offset = 0
    for (name, dtype, columns), width, size in zip(VectorIndex.LAYOUT, widths, sizes, strict=True):
        array = np.frombuffer(body[offset : offset + size], dtype=dtype)
        if body.readonly:  # the index writes to its arrays
            array = array.copy()
        named[name] = array.reshape(rows, width) if columns != 0 else array
        offset += size
    scope = named["scope"]
    if rows and (scope.min() < 0 or any(int(scope[:, f].max()) >= len(tables[f]) for f in range(3))):
        raise SnapshotRefused("scope codes out of range")
    if len(np.unique(named["keys"])) != rows:
        raise SnapshotRefused("a row listed twice")
    if rows and int(named["keys"].max()) != last_rowid:
        raise SnapshotRefused("its highest row is not the one its header names")
    coarse = None
    if coarse_bytes:
        try:
            coarse = CoarseIndex.from_bytes(body[offset : offset + coarse_bytes], coarse_trained, dim)
        except ValueError as exc:
            raise SnapshotRefused(f"approximate index unreadable ({exc})") from None
        if len(coarse) != rows:
            raise SnapshotRefused(f"approximate index of {len(coarse)} rows, the arrays hold {rows}")
    index = VectorIndex.from_arrays(
        dim, named, tables, exact_below=exact_below, approx_from=approx_from, coarse=coarse
    )
    return Snapshot(index, seq, last_rowid, last_id)


def read(
    folder: Path, name: str, model: str, *, exact_below: int, approx_from: int = APPROX_FROM
) -> Snapshot | None:
    """The snapshot ``name`` in ``folder``, or None when there is none; ``SnapshotRefused`` when
    it cannot be used (also when it cannot be read as a plain file beneath the folder)."""
    data = read_bytes(folder, name)
    if data is None:
        return None
    return decode(data, model, exact_below=exact_below, approx_from=approx_from)


def read_bytes(folder: Path, name: str) -> bytearray | None:
    """The whole file ``name`` in ``folder``, into one writable buffer (which an index may
    adopt: ``VectorIndex.from_arrays``), or None when there is none; ``SnapshotRefused`` when
    it cannot be read as a plain file beneath the folder, or changed size while being read."""
    root = Folder(folder)
    try:
        if root.stat(name) is None:
            return None
        handle, _ = root.open_read(name)
        with handle:
            data = bytearray(os.fstat(handle.fileno()).st_size)
            raw = cast(io.BufferedIOBase, handle)  # an open file: BinaryIO's stub lacks readinto
            if raw.readinto(data) != len(data) or raw.read(1):
                raise SnapshotRefused("changed size while being read")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SnapshotRefused(f"cannot be read ({exc})") from None
    return data


def save(folder: Path, name: str, data: bytes) -> None:
    """Replace the snapshot ``name`` in ``folder`` with ``data`` (from ``encode``) atomically,
    through ``safefs``, first deleting what writers killed mid-write left (see ``sweep``)."""
    root = Folder(folder)
    sweep(root, name)
    root.write(name, data)


def sweep(root: Folder, name: str, *, older_than: float = LEFTOVER_AGE) -> None:
    """Delete the temp files of ``name`` (``safefs`` writes ``.<name>.<random>.tmp`` and renames
    it) that no writer touched for ``older_than`` seconds: those of a process killed mid-write.
    A writer at work now keeps its own (a write takes seconds, not minutes)."""
    pattern = re.compile(rf"\.{re.escape(name[:80])}\.[0-9a-f]{{12}}\.tmp")
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(root.root) as entries:
        for entry in entries:
            leftover = pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
            if leftover and now - entry.stat(follow_symlinks=False).st_mtime > older_than:
                with contextlib.suppress(OSError):
                    root.remove(entry.name)


def remove(folder: Path, name: str) -> None:
    """Delete a refused snapshot (so that a later process does not try it again)."""
    with contextlib.suppress(FileNotFoundError):
        Folder(folder).remove(name)
