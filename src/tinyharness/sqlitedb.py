"""Opening tinyharness's own SQLite files (run log, sessions, memory store) with one set of guards.

Each kind of file has an ``application_id`` that marks it as ours and an ordered list of
migrations recorded in ``user_version``. ``open_database`` reads the header and those two
pragmas before it writes anything: a file that is not a SQLite database, is cut short, belongs to
another program or has a schema newer than this code knows raises the caller's error class and
is left exactly as it was (no table added, no switch to WAL). Only then is the file migrated up.
Every write that must see and change the file as one step goes through ``write_transaction``.

The file is opened through ``safefs.connect_sqlite`` beneath the folder that owns it (a link
that leads out of it is refused), as every file the harness writes.

May import: ``errors``, ``safefs``. Nothing else of the package.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import HarnessError
from .safefs import connect_sqlite

_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Schema:
    """What a kind of file is: its name for messages, its mark, its migrations.

    ``adopt`` recognises a file by its tables: called on a file with tables and no mark (the
    memory store did not mark its files at first), it returns the schema version that file is
    at, or None when it is not ours; on a marked file at the current version, anything but that
    version means the file was altered (a renamed column) and it is refused."""

    kind: str  # e.g. "memory store": used in every message
    application_id: int
    migrations: Sequence[Sequence[str]]
    adopt: Callable[[sqlite3.Connection], int | None] | None = None

    @property
    def version(self) -> int:
        return len(self.migrations)


def _fail(error: type[HarnessError], message: str) -> HarnessError:
    return error(message)


_SHORT_LOOKS = 4


def _read_header(path: Path, schema: Schema, error: type[HarnessError]) -> tuple[bytes, int]:
    try:
        with open(path, "rb") as file:
            return file.read(100), os.fstat(file.fileno()).st_size
    except OSError as exc:
        raise _fail(error, f"cannot read {schema.kind} {path}: {exc.strerror or exc}") from None


def _header_bytes(header: bytes) -> int:
    """The file size a valid SQLite header says (0 when it says none it can be trusted for)."""
    if len(header) < 100 or not header.startswith(_HEADER):
        return 0
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    change_counter, pages = struct.unpack(">II", header[24:32])
    valid_for = struct.unpack(">I", header[92:96])[0]
    # The in-header size is trustworthy only when written by the same change (SQLite's rule).
    return pages * page_size if valid_for == change_counter else 0


def _short(header: bytes, size: int) -> bool:
    return size < _header_bytes(header)


def _check_header(path: Path, schema: Schema, error: type[HarnessError]) -> None:
    """Refuse a non-empty file that is not SQLite, or one shorter than its header says. Another
    process's checkpoint may have written the new header before the pages that grow the file:
    a short file is looked at again before it is called truncated (a truncated one stays so)."""
    for attempt in range(_SHORT_LOOKS):
        header, size = _read_header(path, schema, error)
        if not _short(header, size) or attempt == _SHORT_LOOKS - 1:
            break
        time.sleep(0.05 * (attempt + 1))
    if not header:
        return  # an empty file: SQLite treats it as a new database
    if len(header) < 100 or not header.startswith(_HEADER):
        raise _fail(error, f"{schema.kind} {path} is corrupt or not a SQLite database; pick another file")
    if _short(header, size):
        raise _fail(
            error,
            f"{schema.kind} {path} is truncated ({size} of {_header_bytes(header)} bytes); "
            "restore it from a backup or pick another file",
        )


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction on an autocommit connection: committed when the block ends, rolled
    back when it raises. ``BEGIN IMMEDIATE`` takes the write lock first, so writers of every
    process are serialized and a read-then-write inside the block cannot race another process
    (a deferred transaction would fail with "database is locked" at its first write instead of
    waiting its busy timeout)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


@contextmanager
def read_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction on an autocommit connection: every statement inside reads the same
    snapshot of the database (in WAL mode, writers of other processes go on meanwhile)."""
    db.execute("BEGIN")
    try:
        yield db
    finally:
        db.execute("ROLLBACK")


def _why(path: Path, exc: OSError) -> str:
    """Why a file cannot be created, in words: mkdir says "File exists" for a parent that is a file."""
    for parent in path.parents:
        if parent.exists():
            return f"{parent} is a file, not a folder" if not parent.is_dir() else str(exc.strerror or exc)
    return str(exc.strerror or exc)


def open_database(
    path: Path,
    schema: Schema,
    error: type[HarnessError],
    *,
    create: bool = True,
    private: bool = False,
    timeout: float = 10.0,
    owner: Path | None = None,
) -> sqlite3.Connection:
    """A connection (autocommit, usable from several threads) to ``path``, checked and migrated.

    ``create=False`` refuses a missing file; ``private`` creates a new file readable by its
    owner only (mode 0600); ``owner`` is the folder the file belongs to (the workspace, the
    data home): a link on the way out of it is refused. Every refusal is ``error`` with a
    one-line message."""
    try:
        if not path.exists():
            if not create:
                raise _fail(error, f"no {schema.kind} at {path}")
        elif path.is_dir():
            raise _fail(error, f"{schema.kind} {path} is a folder, not a file")
        else:
            _check_header(path, schema, error)
    except OSError as exc:
        raise _fail(error, f"cannot create {schema.kind} {path}: {_why(path, exc)}") from None
    try:
        db, _real = connect_sqlite(
            path,
            owner,
            create=create,
            private=private,
            isolation_level=None,
            check_same_thread=False,
            timeout=timeout,
        )
    except OSError as exc:
        raise _fail(error, f"cannot create {schema.kind} {path}: {_why(path, exc)}") from None
    except sqlite3.Error as exc:
        raise _fail(error, f"cannot open {schema.kind} {path}: {exc}") from None
    deadline, attempt = time.monotonic() + timeout, 0
    while True:
        try:
            with read_transaction(db):  # one snapshot: another opener may migrate it meanwhile
                version = _recognise(db, path, schema, error)
            db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL survives a killed process
            _migrate(db, path, schema, error, version)
            return db
        except sqlite3.DatabaseError as exc:
            if _busy(exc) and time.monotonic() < deadline:
                time.sleep(min(0.01 * 2**attempt, 0.25))
                attempt += 1
                continue
            db.close()
            message = str(exc)
            if _busy(exc):
                raise _fail(
                    error,
                    f"{schema.kind} {path} is busy: another process held it for {timeout:g} s; "
                    "try again when that process ends",
                ) from None
            if "readonly" in message or "unable to open" in message:
                raise _fail(error, f"cannot write {schema.kind} {path}: {message}") from None
            raise _fail(error, f"{schema.kind} {path} is corrupt or unreadable: {message}") from None
        except BaseException:
            db.close()
            raise


def _busy(exc: sqlite3.DatabaseError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED, extended codes included. SQLite returns them at once, with
    no busy handler, where waiting could deadlock: two processes opening a new file both switch
    it to WAL, or one reads while the other recovers the WAL. Another try a moment later works."""
    code = getattr(exc, "sqlite_errorcode", None)  # None for an error the module raised itself
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _recognise(db: sqlite3.Connection, path: Path, schema: Schema, error: type[HarnessError]) -> int:
    """Read-only checks; the schema version the file is at (for an unmarked file of ours, the
    version ``schema.adopt`` recognised)."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    app = int(db.execute("PRAGMA application_id").fetchone()[0])
    tables = int(db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
    if app in (0, schema.application_id) and version > schema.version:
        raise _fail(
            error,
            f"{schema.kind} {path} has schema version {version}, newer than this tinyharness "
            f"knows ({schema.version}); upgrade tinyharness or pick another file",
        )
    if app == schema.application_id:
        if version == schema.version and schema.adopt is not None and schema.adopt(db) != version:
            raise _fail(
                error,
                f"{schema.kind} {path} was changed outside tinyharness (its tables are not those of "
                f"schema version {version}); restore it from a backup or pick another file",
            )
        return version
    if app == 0 and version == 0:
        if not tables:
            return 0  # a new, empty database
        adopted = schema.adopt(db) if schema.adopt is not None else None
        if adopted is not None:
            return adopted
    raise _fail(
        error, f"{path} is a SQLite database of another program, not a {schema.kind}; pick another file"
    )


def _migrate(
    db: sqlite3.Connection, path: Path, schema: Schema, error: type[HarnessError], unmarked_at: int
) -> None:
    """Apply the missing migrations, one transaction each, and mark the file as ours.
    ``unmarked_at``: the version of a file that has no mark yet (another process may mark it
    meanwhile; then its ``user_version`` counts)."""
    while True:
        with write_transaction(db):
            marked = int(db.execute("PRAGMA application_id").fetchone()[0]) == schema.application_id
            version = int(db.execute("PRAGMA user_version").fetchone()[0]) if marked else unmarked_at
            if version > schema.version:  # another process upgraded it meanwhile
                raise _fail(error, f"{schema.kind} {path} has a newer schema version {version}")
            if version == schema.version and marked:
                return
            if version < schema.version:
                for statement in schema.migrations[version]:
                    db.execute(statement)
                version += 1
            db.execute(f"PRAGMA application_id = {schema.application_id}")
            db.execute(f"PRAGMA user_version = {version}")
