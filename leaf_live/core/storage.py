"""DuckDB storage: every table's schema (defined once, here), the partition-replace helper and
read-only connections for analysts.

Principles (DESIGN.md §Principles 1 and 3):

* a database remembers the schema version of every table it holds (``_leaf_live_meta``); a connection to a
  file written under another version fails with one line saying so, instead of a DuckDB binder error later;
* every fact row carries ``available_at`` (TIMESTAMPTZ, UTC): when it became knowable, so a stage can
  ask "as of time t" with ``WHERE available_at <= t``;
* one asset owns one table (or one ``producer`` slice of a shared table); materializing a partition
  replaces exactly that partition's rows in one transaction, so reruns and backfills neither duplicate
  nor lose rows, and a partition that fails validation leaves the previous rows untouched;
* every text column of every written frame passes the one redaction rule first
  (:func:`leaf_live.core.redaction.redact_frame`), so no stage can store a key an answer, error or source
  echoed.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from leaf_live.core.redaction import redact_frame


class StorageError(ValueError):
    """A frame does not fit its table; the message names the table, column and offending value."""


class SchemaVersionError(StorageError):
    """The database file holds a table written under another schema version than this code's."""


class WiderReplaceError(StorageError):
    """A replace would remove stored rows its new data does not hold: the request covers less than the
    partitions it replaces (a narrower span rerun over wider partitions). Nothing was written."""


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


def real_path(path: str | os.PathLike) -> Path:
    """The one spelling of a database path: absolute, ``..`` and ``.`` resolved, every symlink followed
    (``os.path.realpath``; a file that does not exist yet resolves through its existing parents). The writer
    lock, DuckDB's connection and every message use it, so ``db``, ``./x/../db``, ``/abs/db`` and a symlink to
    it are one database with one lock. Raises :class:`StorageError` for an empty path."""
    text = os.fspath(path)
    if not str(text).strip():
        raise StorageError("database path is empty: give a file name (or set LEAF_LIVE_DB)")
    return Path(os.path.realpath(text))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(exc).__name__


def _open(p: Path, *, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` on the real path with one-line errors: a directory, an unopenable file, or a lock
    held by another process (:class:`DatabaseLockedError`, naming the PID and its command, after retrying
    with a doubling backoff from 0.1 s to 1 s for ``wait_s`` seconds: bounded, then one line saying how long
    it waited). A connection that failed is never left open."""
    p = real_path(p)
    if p.is_dir():
        raise StorageError(f"{p} is a directory, not a DuckDB file")
    deadline = time.monotonic() + max(0.0, wait_s)
    delay = 0.1
    while True:
        try:
            return duckdb.connect(str(p), read_only=read_only)
        except duckdb.IOException as exc:
            m = _LOCK.search(str(exc))
            if m is None:
                raise StorageError(f"{p}: cannot open the database ({_first_line(exc)})") from None
            left = deadline - time.monotonic()
            if left <= 0:
                pid = int(m["pid"])
                cmd = _process_command(pid) or m["holder"]
                waited = f"waited {wait_s:g} s" if wait_s > 0 else ""
                if read_only:
                    msg = (
                        f"{p} is being written by another process, PID {pid} ({cmd}); "
                        f"{waited or 'not waiting'}: try again when it finishes"
                    )
                else:
                    msg = (
                        f"{p} is held by another process, PID {pid} ({cmd}): DuckDB allows one writing"
                        f" process at a time;{f' {waited};' if waited else ''} try again when it finishes"
                    )
                raise DatabaseLockedError(msg, pid=pid, holder=cmd) from None
            time.sleep(min(delay, left))
            delay = min(delay * 2, 1.0)
        except duckdb.ConnectionException:
            raise  # this process already has the file open in another mode (callers such as sensors know it)
        except duckdb.Error as exc:  # a file that is not a DuckDB database, a version it cannot read, ...
            raise StorageError(f"{p}: cannot open the database ({_first_line(exc)})") from None


@dataclass(frozen=True)
class WriterRecord:
    """What a writer lock file records while held: ``pid``, ``started_at`` (UTC, ISO 8601, when the lock was
    taken) and ``run_id`` (the Dagster run the writer is executing now, once it says; else None), plus the
    holder's ``command`` line read from ``/proc`` (None when unreadable)."""

    pid: int
    started_at: str | None
    run_id: str | None
    command: str | None

    def describe(self) -> str:
        """``PID 123 (leaf-live run ...), started 2026-04-09T14:00:00Z, Dagster run 1f2e...``."""
        parts = [f"PID {self.pid} ({self.command or 'unknown command'})"]
        if self.started_at:
            parts.append(f"started {self.started_at}")
        if self.run_id:
            parts.append(f"Dagster run {self.run_id}")
        return ", ".join(parts)


def _lock_file(p: Path) -> Path:
    return p.with_name(p.name + ".lock")


def _parse_record(text: str) -> WriterRecord | None:
    """Lock-file text: line 1 the PID, then ``started_at=...`` / ``run_id=...`` lines (a file written by an
    older version holds the PID alone)."""
    lines = text.strip().splitlines()
    if not lines or not lines[0].strip().isdigit():
        return None
    fields = dict(ln.split("=", 1) for ln in lines[1:] if "=" in ln)
    pid = int(lines[0].strip())
    return WriterRecord(
        pid, fields.get("started_at") or None, fields.get("run_id") or None, _process_command(pid)
    )


def writer_holder(path: str | os.PathLike) -> WriterRecord | None:
    """The leaf-live writer (``run``, ``rescore``, ``submit``, ``inbox drain``) that holds the writer lock of
    ``path`` (:func:`writer_lock`, on :func:`real_path`) now, as its lock file records it, or None: no lock
    file, an empty one (released), or a record of a process that is gone (killed with -9). Reads only, never
    takes the lock, so a probe cannot make a writer fail to start; never raises."""
    try:
        text = _lock_file(real_path(path)).read_text(errors="replace")
    except (OSError, StorageError):
        return None
    rec = _parse_record(text)
    if rec is None or not Path(f"/proc/{rec.pid}").exists():
        return None
    return rec


# fd of each writer lock this process holds, by real path (record_writer_run rewrites its record)
_HELD: dict[Path, tuple[int, str]] = {}


def _write_record(fd: int, started_at: str, run_id: str | None) -> None:
    text = f"{os.getpid()}\nstarted_at={started_at}\n" + (f"run_id={run_id}\n" if run_id else "")
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode(), 0)


def record_writer_run(run_id: str) -> None:
    """Record ``run_id`` (the Dagster run now executing) in every writer lock this process holds, so a
    reader told a run is in progress is told which (:func:`writer_holder`). No lock held: nothing."""
    for fd, started_at in list(_HELD.values()):
        _write_record(fd, started_at, run_id)


@contextmanager
def writer_lock(path: str | Path):
    """Hold the leaf-live writer lock of the database ``path`` for a whole command (an ``flock`` on
    ``<db>.lock`` beside it, recording the PID, the start time and, once :func:`record_writer_run` is
    called, the Dagster run id: :class:`WriterRecord`). DuckDB's own lock lasts only while a connection is
    open, and a run opens one per step, so without this a second ``leaf-live run``/``submit``/``rescore`` on
    the same file would interleave its steps with the first. The lock is taken on :func:`real_path`, so every
    spelling of one file (a symlink, a relative path, ``./x/../db``) is the same lock. Released when the
    block exits (also when the process dies). Raises :class:`DatabaseLockedError` naming the holder's PID and
    command when another process holds it."""
    p = real_path(path)  # one lock per file, whatever the spelling (symlink, relative, ``x/../db``)
    try:
        fd = os.open(_lock_file(p), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorageError(f"{p}: cannot create its lock file ({exc.strerror or exc})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        rec = _parse_record(os.pread(fd, 512, 0).decode(errors="replace"))
        os.close(fd)
        pid = rec.pid if rec else None
        cmd = (rec.command if rec else None) or "unknown command"
        raise DatabaseLockedError(
            f"{p} is being written by another leaf-live process, PID {pid} ({cmd}): one writer "
            "at a time; try again when it finishes",
            pid=pid,
            holder=cmd,
        ) from None
    try:
        started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _write_record(fd, started_at, None)
        _HELD[p] = (fd, started_at)
        yield p
    finally:
        _HELD.pop(p, None)
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


def connect(path: str | os.PathLike, *, wait_s: float = 0.0) -> duckdb.DuckDBPyConnection:
    """Open a read-write connection to the DuckDB file ``path`` (creating it and every registered table if
    needed; callers resolve the path, e.g. ``leaf_live.core.settings.get_settings().db_path``). The file is
    opened by its :func:`real_path`.

    DuckDB allows one writing process at a time: while another process holds the file, the connection is
    retried for ``wait_s`` seconds (default: not at all), then :class:`DatabaseLockedError` names that
    process in one line; a directory or a file that cannot be opened raises :class:`StorageError` in one line;
    a file built under another schema version :class:`SchemaVersionError`. A connection whose set-up fails is
    closed before the error propagates, so the same process can open the file again.
    """
    p = real_path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"{p}: cannot create its directory ({exc.strerror or exc})") from None
    con = _open(p, read_only=False, wait_s=wait_s)
    try:
        con.execute("SET TimeZone='UTC'")
        ensure_tables(con)
    except BaseException:
        con.close()
        raise
    return con


def connect_read_only(path: str | os.PathLike, *, wait_s: float = 0.0) -> duckdb.DuckDBPyConnection:
    """Open a read-only connection to ``path`` for analysts (works while no process holds the write lock).

    While another process writes the file, the connection is retried for ``wait_s`` seconds, then
    :class:`DatabaseLockedError` names that process. Raises :class:`StorageError` if the file is missing or
    not a DuckDB file, and :class:`SchemaVersionError` if a registered table in it was written under another
    schema version (tables are registered when their track is imported, e.g. ``import leaf_live.macro``)."""
    p = real_path(path)
    if not p.exists():
        raise StorageError(
            f"database file {path} does not exist; run `leaf-live run` first (or set LEAF_LIVE_DB)"
        )
    con = _open(p, read_only=True, wait_s=wait_s)
    try:
        con.execute("SET TimeZone='UTC'")
        check_schema_versions(con)
    except BaseException:
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


@dataclass(frozen=True)
class Slice:
    """One table's slice for :func:`replace_partitions`: the rows ``frame`` that replace the rows of table
    ``table`` matching ``where`` (see :func:`replace_partition` for ``where``). ``keep_unanswered`` (source
    tables): the partition values of ``where`` that ``frame`` has no row for are left as stored.
    ``refuse_removal``: the replace fails (:class:`WiderReplaceError`) instead of removing stored rows whose
    primary key ``frame`` does not hold."""

    table: str
    frame: pl.DataFrame
    where: Mapping[str, Any] | None = None
    # source data: a partition value (day, month, question) the answer holds no row for keeps its stored rows
    # instead of being emptied (an empty or partial answer never replaces good rows with none)
    keep_unanswered: bool = False
    # span-exact: refuse (WiderReplaceError, nothing written) when the replace would remove stored rows whose
    # primary key the new frame does not hold
    refuse_removal: bool = False


def _prepared(name: str, frame: pl.DataFrame, where: Mapping[str, Any] | None, keep_unanswered: bool = False):
    """Validate one slice before any write: the conformed frame, the DELETE condition and its parameters
    (condition None: a listed partition column with no value, nothing to replace). Raises StorageError."""
    table = get_table(name)
    where = dict(where or {})
    if set(where) != set(table.partition_by):
        raise StorageError(f"table {name}: partition keys {sorted(where)} != {sorted(table.partition_by)}")
    many = [c for c, v in where.items() if isinstance(v, (list, tuple))]
    if len(many) > 1:
        raise StorageError(f"table {name}: only one partition column may list several values, got {many}")
    # the one redaction pass over every stored text column (core.redaction: registered secret values and
    # provider/cloud key shapes), so no writer can store a key an answer, error or source echoed
    data = redact_frame(conform(name, frame))
    for col, val in where.items():
        if not data.height:
            break
        bad = data.filter(~pl.col(col).is_in(list(val))) if col in many else data.filter(pl.col(col) != val)
        if bad.height:
            shown = f"{len(val)} values {min(val)!r}..{max(val)!r}" if col in many else repr(val)
            raise StorageError(
                f"table {name}: row with {col}={bad.get_column(col)[0]!r} outside partition {col}={shown}"
            )
    if keep_unanswered:  # only the partition values the answer has rows for are replaced
        for col, val in where.items():
            present = set(data.get_column(col).unique().to_list()) if data.height else set()
            if col in many:
                where[col] = [v for v in val if v in present]
            elif val not in present:
                return data, None, []
    if table.primary_key and data.height:
        dup = data.group_by(list(table.primary_key)).len().filter(pl.col("len") > 1)
        if dup.height:
            raise StorageError(f"table {name}: duplicate primary key {dup.row(0)[:-1]} in partition {where}")
    conds, params = [], []
    for k, v in where.items():
        if k in many:
            if not v:
                return data, None, []  # no slice named: nothing to replace
            conds.append(f'"{k}" IN ({", ".join("?" for _ in v)})')
            params.extend(v)
        else:
            conds.append(f'"{k}" = ?')
            params.append(v)
    return data, " AND ".join(conds) or "TRUE", params


def _refuse_removal(con: duckdb.DuckDBPyConnection, name: str, view: str, cond: str, params: list) -> None:
    """Raise :class:`WiderReplaceError` when rows of ``name`` matching ``cond`` have a primary key the
    incoming ``view`` does not hold (the replace would remove them)."""
    table = get_table(name)
    pk = table.primary_key or tuple(table.column_names)
    match = " AND ".join(f'i."{k}" IS NOT DISTINCT FROM s."{k}"' for k in pk)
    part = '"partition_key"' if "partition_key" in table.column_names else "NULL"
    gone = f'FROM "{name}" s WHERE {cond} AND NOT EXISTS (SELECT 1 FROM {view} i WHERE {match})'
    n, parts, lo, hi = con.execute(
        f"SELECT count(*), count(DISTINCT {part}), min({part}), max({part}) {gone}", params
    ).fetchone()
    if not n:
        return
    first = con.execute(
        f"SELECT {', '.join(f's.{k}' for k in pk)} {gone} ORDER BY 1 LIMIT 1", params
    ).fetchone()
    shown = ", ".join(f"{k}={v!r}" for k, v in zip(pk, first, strict=True))
    where = f" in {parts} partitions {lo} .. {hi}" if parts else ""
    raise WiderReplaceError(
        f"table {name}: this request would remove {n} stored rows{where} that its new data does not hold"
        f" (first: {shown}): the partitions it replaces are wider than what it was asked to rebuild; nothing"
        " written (rebuild with the spans that made them, or allow the removal explicitly)"
    )


def replace_partitions(
    con: duckdb.DuckDBPyConnection, slices: Sequence[Slice], *, then: Sequence[str] = ()
) -> list[int]:
    """Replace several tables' slices in ONE transaction: all of them land, or (on an error, a failed insert
    or the process killed midway) none does; the multi-table form of :func:`replace_partition`, for a step
    whose tables must agree (``forecast_tasks`` + ``task_outcomes``: a task never without its outcome).

    Every slice is validated before anything is deleted. ``then``: SQL statements run inside the same
    transaction after the inserts (e.g. a repair that removes rows left without their partner by an older
    writer). Returns the rows written per slice, in order. Raises :class:`StorageError` (one line naming
    the table, column and value) for a frame that does not fit; DuckDB errors of the transaction propagate
    after the rollback."""
    prepared = [(s, *_prepared(s.table, s.frame, s.where, s.keep_unanswered)) for s in slices]
    todo = [(s, data, cond, params) for s, data, cond, params in prepared if cond is not None]
    if not todo and not then:
        return [0 for _ in slices]
    for s, *_ in todo:
        con.execute(get_table(s.table).ddl())
    registered = []
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            for i, (s, data, cond, params) in enumerate(todo):
                view = f"_incoming_partition_{i}"
                if data.height or s.refuse_removal:
                    con.register(view, data.to_arrow())
                    registered.append(view)
                if s.refuse_removal:
                    _refuse_removal(con, s.table, view, cond, params)
                con.execute(f'DELETE FROM "{s.table}" WHERE {cond}', params)
                if data.height:
                    cols = ", ".join(f'"{c}"' for c in get_table(s.table).column_names)
                    con.execute(f'INSERT INTO "{s.table}" ({cols}) SELECT {cols} FROM {view}')
            for sql in then:
                con.execute(sql)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        for view in registered:
            con.unregister(view)
    return [data.height if cond is not None else 0 for _, data, cond, _ in prepared]


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
    :class:`StorageError`. Several tables in one transaction: :func:`replace_partitions`.
    """
    return replace_partitions(con, [Slice(name, frame, where)])[0]


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
