"""DuckDB storage: every table's schema (defined once, here), the partition-replace helper and
read-only connections for analysts.

Principles (DESIGN.md §Principles 1 and 3):

* a database remembers the schema version of every table it holds (``_leaf_live_meta``); a connection to a
  file written under another version fails with one line saying so, instead of a DuckDB binder error later;
* every fact row carries ``available_at`` (TIMESTAMPTZ, UTC): when it became knowable, so a stage can
  ask "as of time t" with ``WHERE available_at <= t``;
* one asset owns one table (or one ``producer`` slice of a shared table); materializing a partition
  replaces exactly that partition's rows in one transaction, so reruns and backfills neither duplicate
  nor lose rows, and a partition that fails validation leaves the previous rows untouched.

Timestamps are stored as ``TIMESTAMPTZ`` and every connection runs with ``TimeZone='UTC'``.
Reference periods are ``DATE`` of the period's first day (2026-01-01 for 2026Q1).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl


class StorageError(ValueError):
    """A frame does not fit its table; the message names the table, column and offending value."""


class SchemaVersionError(StorageError):
    """The database file holds a table written under another schema version than this code's."""


class DatabaseLockedError(StorageError):
    """Another process holds the DuckDB file's lock (DuckDB: one writing process, and no reader in another
    process meanwhile). ``pid`` and ``holder`` (the holding program, as DuckDB names it) when DuckDB says."""

    def __init__(self, message: str, *, pid: int | None = None, holder: str | None = None) -> None:
        super().__init__(message)
        self.pid = pid
        self.holder = holder


_LOCK = re.compile(
    r'Could not set lock on file "(?P<file>[^"]*)": Conflicting lock is held in (?P<holder>.*?) \(PID'
    r" (?P<pid>\d+)\)"
)


def _process_command(pid: int) -> str | None:
    """The command line of process ``pid`` (Linux ``/proc``), or None when it cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    text = " ".join(" ".join(a.decode(errors="replace") for a in raw.split(b"\0") if a).split())
    return (text[:157] + "..." if len(text) > 160 else text) or None


def _open(p: Path, *, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with one-line errors: a directory, an unopenable file, or a lock held by another
    process (:class:`DatabaseLockedError`, naming the PID and its command; retried for ``wait_s`` seconds)."""
    if p.is_dir():
        raise StorageError(f"{p} is a directory, not a DuckDB file")
    deadline = time.monotonic() + wait_s
    delay = 0.1
    while True:
        try:
            return duckdb.connect(str(p), read_only=read_only)
        except duckdb.IOException as exc:
            m = _LOCK.search(str(exc))
            if m is None:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise StorageError(f"{p}: cannot open the database ({first})") from None
            left = deadline - time.monotonic()
            if left <= 0:
                pid = int(m["pid"])
                cmd = _process_command(pid) or m["holder"]
                if read_only:
                    msg = (
                        f"{p} is being written by another process, PID {pid} ({cmd}); waited {wait_s:g} s:"
                        " try again when it finishes"
                    )
                else:
                    msg = (
                        f"{p} is held by another process, PID {pid} ({cmd}): DuckDB allows one writing"
                        " process at a time; try again when it finishes"
                    )
                raise DatabaseLockedError(msg, pid=pid, holder=cmd) from None
            time.sleep(min(delay, left))
            delay = min(delay * 2, 1.0)


@contextmanager
def writer_lock(path: str | Path):
    """Hold the leaf-live writer lock of the database ``path`` for a whole command (an ``flock`` on
    ``<db>.lock`` beside it, holding the PID). DuckDB's own lock lasts only while a connection is open, and a
    run opens one per step, so without this a second ``leaf-live run``/``submit``/``rescore`` on the same file
    would interleave its steps with the first. Released when the block exits (also when the process dies).
    Raises
    :class:`DatabaseLockedError` naming the holder's PID and command when another process holds it."""
    p = Path(path)
    fd = os.open(p.with_name(p.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        text = os.pread(fd, 64, 0).decode(errors="replace").split()
        os.close(fd)
        pid = int(text[0]) if text and text[0].isdigit() else None
        cmd = (_process_command(pid) if pid else None) or "unknown command"
        raise DatabaseLockedError(
            f"{p} is being written by another leaf-live process, PID {pid} ({cmd}): one writer "
            "at a time; try again when it finishes",
            pid=pid,
            holder=cmd,
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield p
    finally:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # DuckDB type
    doc: str  # meaning and unit, shown in README / `leaf-live tables`
    nullable: bool = True


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    grain: str
    columns: tuple[Column, ...]
    partition_by: tuple[str, ...] = ()  # columns that identify one replaceable slice
    primary_key: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    # False: the key is enforced by :func:`replace_partition` (within the slice it replaces) but DuckDB keeps
    # no index for it; for large tables whose key includes the partition, where the index makes every replace
    # several times slower (series_vintages: 1.4 M rows, 8 s instead of 1.5 s)
    index_primary_key: bool = True

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.name!r} has no column {name!r}")

    def ddl(self) -> str:
        cols = ",\n  ".join(
            f'"{c.name}" {c.type}' + ("" if c.nullable else " NOT NULL") for c in self.columns
        )
        pk = (
            f",\n  PRIMARY KEY ({', '.join(self.primary_key)})"
            if self.primary_key and self.index_primary_key
            else ""
        )
        return f'CREATE TABLE IF NOT EXISTS "{self.name}" (\n  {cols}{pk}\n)'


def col(name: str, type_: str, doc: str, nullable: bool = True) -> Column:
    """Shorthand for :class:`Column` used by the track schema modules."""
    return Column(name, type_, doc, nullable)


PARTITION_KEY = col(
    "partition_key",
    "VARCHAR",
    "slice the writing asset replaces as a unit: the release month (2024-03), the hour (2026-04-09-14:00), "
    "or, for unpartitioned producers, a model or run id (fed/gdpnow)",
    False,
)
AVAILABLE_AT = col(
    "available_at", "TIMESTAMPTZ", "UTC time the fact became knowable (point-in-time filter)", False
)


# The registry: each track's schema module registers its tables at import (one schema definition per
# table); ``leaf_live.macro`` and ``leaf_live.event`` import their schema modules in their package init.
TABLES: dict[str, Table] = {}


def register(table: Table) -> Table:
    """Add a table to :data:`TABLES` (module-level, at import of the defining module)."""
    if table.name in TABLES and TABLES[table.name] != table:
        raise StorageError(f"table {table.name!r} is defined twice")
    TABLES[table.name] = table
    return table


def get_table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise StorageError(f"unknown table {name!r}; known: {sorted(TABLES)}") from None


# ---------------------------------------------------------------------------------------------
# Connections
# ---------------------------------------------------------------------------------------------


def connect(path: str | os.PathLike) -> duckdb.DuckDBPyConnection:
    """Open a read-write connection to the DuckDB file ``path`` (creating it and every registered table if
    needed; callers resolve the path, e.g. ``leaf_live.core.settings.get_settings().db_path``).

    DuckDB allows one writing process at a time: a file another process holds raises
    :class:`DatabaseLockedError` at once (naming that process); a directory or a file that cannot be opened
    raises :class:`StorageError` in one line.
    """
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"{p}: cannot create its directory ({exc.strerror or exc})") from None
    con = _open(p, read_only=False, wait_s=0)
    con.execute("SET TimeZone='UTC'")
    ensure_tables(con)
    return con


def connect_read_only(path: str | os.PathLike, *, wait_s: float = 0.0) -> duckdb.DuckDBPyConnection:
    """Open a read-only connection to ``path`` for analysts (works while no process holds the write lock).

    While another process writes the file, the connection is retried for ``wait_s`` seconds, then
    :class:`DatabaseLockedError` names that process. Raises :class:`StorageError` if the file is missing or
    not a DuckDB file, and :class:`SchemaVersionError` if a registered table in it was written under another
    schema version (tables are registered when their track is imported, e.g. ``import leaf_live.macro``)."""
    p = Path(path)
    if not p.exists():
        raise StorageError(
            f"database file {p} does not exist; run `leaf-live run` first (or set LEAF_LIVE_DB)"
        )
    con = _open(p, read_only=True, wait_s=wait_s)
    con.execute("SET TimeZone='UTC'")
    try:
        check_schema_versions(con)
    except SchemaVersionError:
        con.close()
        raise
    return con


@contextmanager
def open_db(path: str | os.PathLike) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(path)
    try:
        yield con
    finally:
        con.close()


def ensure_tables(con: duckdb.DuckDBPyConnection, names: Sequence[str] | None = None) -> None:
    """Create the registered tables ``names`` (default all) that do not exist yet and stamp their schema
    version; raise :class:`SchemaVersionError` if one exists under another version (see
    :func:`check_schema_versions`)."""
    names = list(names or TABLES)
    stored = check_schema_versions(con, names)
    missing = [n for n in names if stored.get(n) != schema_version(n)]
    for name in names:
        con.execute(get_table(name).ddl())
    if missing:
        con.execute(_META_DDL)
        con.executemany(
            f'INSERT OR REPLACE INTO "{META_TABLE}" VALUES (?, ?, now())',
            [[n, schema_version(n)] for n in missing],
        )


# ---------------------------------------------------------------------------------------------
# Schema versions
# ---------------------------------------------------------------------------------------------

META_TABLE = "_leaf_live_meta"
_META_DDL = (
    f'CREATE TABLE IF NOT EXISTS "{META_TABLE}" (table_name VARCHAR PRIMARY KEY, schema_version VARCHAR NOT'
    " NULL, stamped_at TIMESTAMPTZ NOT NULL)"
)


def schema_version(name: str) -> str:
    """Version of registered table ``name``'s stored shape: the first 12 hex digits of the sha256 of its
    column names, DuckDB types, NOT NULL flags and primary key (column docs do not count)."""
    t = get_table(name)
    shape = [t.name, [[c.name, c.type, c.nullable] for c in t.columns], list(t.primary_key)]
    return hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:12]


def _described(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple]:
    return con.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
        [name],
    ).fetchall()


def check_schema_versions(
    con: duckdb.DuckDBPyConnection, names: Sequence[str] | None = None
) -> dict[str, str]:
    """Check that every registered table in ``names`` (default all) that the database holds was written under
    this code's :func:`schema_version`; return the stored version per table (``{}`` for a new file).

    A table without a stored version (a file from before versioning) passes when its columns are exactly the
    registered ones. Raises :class:`SchemaVersionError` with one line naming the file, the table, both
    versions and how to rebuild. Runs on every read-write and read-only connection of this module."""
    names = list(names or TABLES)
    present = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchall()
    }
    stored = (
        dict(con.execute(f'SELECT table_name, schema_version FROM "{META_TABLE}"').fetchall())
        if META_TABLE in present
        else {}
    )
    for name in names:
        if name not in present:
            continue
        want = schema_version(name)
        have = stored.get(name)
        if have is None:
            probe = duckdb.connect()
            try:
                probe.execute(get_table(name).ddl())
                have = want if _described(con, name) == _described(probe, name) else "unversioned"
            finally:
                probe.close()
        if have != want:
            path = con.execute(
                "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
            ).fetchone()[0]
            raise SchemaVersionError(
                f"{path}: table {name} was built by schema {have}, this is {want}: rebuild with "
                f"`leaf-live run --db NEW_FILE` (or move {Path(path).name} away and run `leaf-live run`)"
            )
    return stored


# ---------------------------------------------------------------------------------------------
# Validation and the one partition-replace helper
# ---------------------------------------------------------------------------------------------

_POLARS_TYPES: dict[str, pl.DataType] = {
    "VARCHAR": pl.Utf8,
    "DOUBLE": pl.Float64,
    "INTEGER": pl.Int32,
    "BIGINT": pl.Int64,
    "BOOLEAN": pl.Boolean,
    "DATE": pl.Date,
    "TIMESTAMPTZ": pl.Datetime("us", "UTC"),
    "JSON": pl.Utf8,
}


def polars_schema(name: str) -> dict[str, pl.DataType]:
    """The polars dtypes of a table's columns (DOUBLE[] -> List(Float64))."""
    out: dict[str, pl.DataType] = {}
    for c in get_table(name).columns:
        if c.type.endswith("[]"):
            out[c.name] = pl.List(_POLARS_TYPES[c.type[:-2]])
        else:
            out[c.name] = _POLARS_TYPES[c.type]
    return out


def empty_frame(name: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(name))


def conform(name: str, frame: pl.DataFrame, *, deferred: Sequence[str] = ()) -> pl.DataFrame:
    """Check and cast ``frame`` to table ``name``'s schema.

    Raises :class:`StorageError` naming the table and column when a column is missing or unknown,
    a value cannot be cast, or a NOT NULL column holds nulls (with the first offending row).
    Timestamps must be timezone-aware; naive datetimes are refused rather than guessed. ``deferred`` names
    NOT NULL columns the writing stage fills later (e.g. ``producer``): they may still be NULL here.
    """
    table = get_table(name)
    want = polars_schema(name)
    missing = [c for c in want if c not in frame.columns]
    extra = [c for c in frame.columns if c not in want]
    if missing or extra:
        raise StorageError(f"table {name}: missing columns {missing}, unknown columns {extra}")
    cols = []
    for c in table.columns:
        s = frame.get_column(c.name)
        target = want[c.name]
        if isinstance(target, pl.Datetime):
            if not isinstance(s.dtype, pl.Datetime) and s.dtype != pl.Null:
                raise StorageError(f"table {name}, column {c.name}: expected a timestamp, got {s.dtype}")
            if isinstance(s.dtype, pl.Datetime) and s.dtype.time_zone is None:
                raise StorageError(
                    f"table {name}, column {c.name}: timestamp without time zone; convert to UTC first"
                )
            s = s.cast(pl.Datetime("us", s.dtype.time_zone if isinstance(s.dtype, pl.Datetime) else "UTC"))
            s = s.dt.convert_time_zone("UTC")
        else:
            try:
                s = s.cast(target, strict=True)
            except Exception as exc:  # polars raises several error types
                raise StorageError(
                    f"table {name}, column {c.name}: cannot cast {s.dtype} to {target}: {exc}"
                ) from exc
        if not c.nullable and c.name not in deferred and s.null_count():
            row = int(s.is_null().arg_max())
            raise StorageError(f"table {name}, column {c.name}: NULL in NOT NULL column at frame row {row}")
        cols.append(s.alias(c.name))
    return pl.DataFrame(cols)


def replace_partition(
    con: duckdb.DuckDBPyConnection,
    name: str,
    frame: pl.DataFrame,
    where: Mapping[str, Any] | None = None,
) -> int:
    """Replace one partition's rows of table ``name`` with ``frame``, atomically.

    ``where`` maps the table's ``partition_by`` columns to the slice's values (e.g.
    ``{"partition_key": "2024-03"}``; ``None`` = the whole table, for unpartitioned tables). One column may
    map to a list or tuple of values: the slices with those values are replaced together, in the same
    transaction (a run's range of days or questions in one write). Every row of ``frame`` must belong to the
    slice(s). Validation runs before anything is deleted and the delete + insert run in one transaction, so a
    bad frame or a failed insert leaves the previous rows intact. Returns the number of rows written. Raises
    :class:`StorageError`.
    """
    table = get_table(name)
    where = dict(where or {})
    if set(where) != set(table.partition_by):
        raise StorageError(f"table {name}: partition keys {sorted(where)} != {sorted(table.partition_by)}")
    many = [c for c, v in where.items() if isinstance(v, (list, tuple))]
    if len(many) > 1:
        raise StorageError(f"table {name}: only one partition column may list several values, got {many}")
    data = conform(name, frame)
    for col, val in where.items():
        if not data.height:
            break
        bad = data.filter(~pl.col(col).is_in(list(val))) if col in many else data.filter(pl.col(col) != val)
        if bad.height:
            shown = f"{len(val)} values {min(val)!r}..{max(val)!r}" if col in many else repr(val)
            raise StorageError(
                f"table {name}: row with {col}={bad.get_column(col)[0]!r} outside partition {col}={shown}"
            )
    if table.primary_key and data.height:
        dup = data.group_by(list(table.primary_key)).len().filter(pl.col("len") > 1)
        if dup.height:
            raise StorageError(f"table {name}: duplicate primary key {dup.row(0)[:-1]} in partition {where}")
    con.execute(table.ddl())
    cols = ", ".join(f'"{c}"' for c in table.column_names)
    conds, params = [], []
    for k, v in where.items():
        if k in many:
            if not v:
                return 0  # no slice named: nothing to replace
            conds.append(f'"{k}" IN ({", ".join("?" for _ in v)})')
            params.extend(v)
        else:
            conds.append(f'"{k}" = ?')
            params.append(v)
    cond = " AND ".join(conds) or "TRUE"
    con.register("_incoming_partition", data.to_arrow())
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(f'DELETE FROM "{name}" WHERE {cond}', params)
            if data.height:
                con.execute(f'INSERT INTO "{name}" ({cols}) SELECT {cols} FROM _incoming_partition')
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    finally:
        con.unregister("_incoming_partition")
    return data.height


def read_table(
    con: duckdb.DuckDBPyConnection, name: str, where: str = "", params: Sequence[Any] = ()
) -> pl.DataFrame:
    """Read a table (optionally filtered by a SQL ``where`` clause) as a polars frame in schema order."""
    table = get_table(name)
    cols = ", ".join(f'"{c}"' for c in table.column_names)
    sql = f'SELECT {cols} FROM "{name}"' + (f" WHERE {where}" if where else "")
    return pl.from_arrow(con.sql(sql, params=list(params) or None).to_arrow_table())


def table_summary(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int]]:
    """(table, row count) for every registered table present in the database."""
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    return [(n, con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]) for n in TABLES if n in present]
