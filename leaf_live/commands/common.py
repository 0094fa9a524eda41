"""What the subcommands share: one-line errors, the database and output paths checked before any work, and the
result formats (``table`` without truncation, ``csv``, ``parquet``, ``markdown``)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import duckdb
import polars as pl

from leaf_live.core import storage
from leaf_live.core.settings import get_settings

FORMATS = ("table", "csv", "parquet", "markdown")
READ_WAIT_S = 10.0  # a reader retries this long while another process writes the file


class CommandError(Exception):
    """A bad flag, path or state: ``leaf-live <cmd>: <message>`` on one line, exit status 1."""


def db_path(arg: str | None) -> Path:
    """``--db`` or, when the flag is not given, ``LEAF_LIVE_DB`` (settings). An empty ``--db ""`` is an error
    (:class:`CommandError`), never silently the default file."""
    if arg is None:
        return get_settings().db_path
    if not arg.strip():
        raise CommandError(
            f"--db {arg!r}: empty path; give a DuckDB file (or leave --db out for LEAF_LIVE_DB)"
        )
    return Path(arg)


def check_writable_db(path: str | Path) -> Path:
    """Check, before any work, that ``path`` can be the database a command writes: not a directory; a new
    file's directory creatable and writable (a probe file is created and removed; the database itself is not
    created); an existing file writable, built by this schema version, and not held by another process
    (:class:`leaf_live.core.storage.DatabaseLockedError` names that process). Raises :class:`CommandError` or
    :class:`leaf_live.core.storage.StorageError`, one line each."""
    p = Path(path)
    if p.is_dir():
        raise CommandError(f"--db {p}: is a directory, not a DuckDB file")
    if not p.exists():
        probe_directory(p, "--db")
        return p
    if not p.is_file():
        raise CommandError(f"--db {p}: not a regular file")
    try:
        with open(p, "r+b"):
            pass
    except OSError as exc:
        raise CommandError(f"--db {p}: not writable ({exc.strerror or exc})") from None
    storage.connect(p).close()
    return p


def probe_directory(p: Path, flag: str) -> None:
    """The nearest existing ancestor of ``p`` is a directory a file can be created in (probe created and
    removed); :class:`CommandError` naming ``flag`` otherwise."""
    anc = p.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise CommandError(f"{flag} {p}: {anc} is not a directory")
    try:
        with tempfile.TemporaryFile(dir=anc):
            pass
    except OSError as exc:
        raise CommandError(f"{flag} {p}: cannot create a file in {anc} ({exc.strerror or exc})") from None


def check_output(path: str | None) -> Path | None:
    """``--output FILE``: not a directory, its directory exists and is writable. Raises
    :class:`CommandError`."""
    if path is None:
        return None
    p = Path(path)
    if p.is_dir():
        raise CommandError(f"--output {p}: is a directory")
    if not p.parent.is_dir():
        raise CommandError(f"--output {p}: directory {p.parent} does not exist")
    probe_directory(p, "--output")
    return p


def read_only(path: str | Path, wait_s: float = READ_WAIT_S) -> duckdb.DuckDBPyConnection:
    """A read-only connection (retried ``wait_s`` seconds while another process writes; then the one-line
    :class:`leaf_live.core.storage.DatabaseLockedError`). While another leaf-live writer holds the database
    (:func:`leaf_live.core.storage.writer_holder`), one line on stderr says so, naming its PID, command,
    start time and Dagster run, and the read goes on: between a run's steps the tables it has rewritten
    and those it has not yet are both visible."""
    holder = storage.writer_holder(path)
    if holder is not None and holder.pid != os.getpid():  # a writer reading its own file is no news
        print(
            f"leaf-live: a run is in progress on {storage.real_path(path)} ({holder.describe()}): tables may"
            " mix its new results with the previous run's until it finishes; reading anyway",
            file=sys.stderr,
            flush=True,
        )
    return storage.connect_read_only(path, wait_s=wait_s)


def duckdb_message(exc: Exception) -> str:
    """DuckDB's error on one line (its first line, which names the error class and position)."""
    text = str(exc).strip()
    return " ".join(text.split("\n")[0].split()) if text else type(exc).__name__


def _arrow(rel: duckdb.DuckDBPyRelation):
    """The result as one Arrow table (the query runs once)."""
    return rel.to_arrow_table()


def query_frame(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pl.DataFrame:
    """A query's result as a polars frame (empty results keep their columns)."""
    return pl.from_arrow(_arrow(con.sql(sql, params=params)))


def _polars(columns: list[str], table) -> pl.DataFrame:
    try:
        return pl.from_arrow(table)
    except Exception:  # a DuckDB type polars cannot take (e.g. INTERVAL, UNION): show its text
        mem = duckdb.connect()
        mem.register("_result", table)
        cols = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' for c in columns)
        return pl.from_arrow(_arrow(mem.sql(f"SELECT {cols} FROM _result")))


def render(frame: pl.DataFrame, fmt: str) -> str:
    """Every row and column of ``frame`` as a table (box drawing) or Markdown; no cell is cut (lists and
    structs are shown as JSON text in full, one line per cell)."""
    nested = [c for c, t in frame.schema.items() if t.is_nested()]
    if nested:
        frame = frame.with_columns(
            pl.Series(
                c, [None if v is None else json.dumps(v, default=str) for v in frame[c].to_list()], pl.String
            )
            for c in nested
        )
    cells = [len(str(v)) for c in frame.columns for v in frame[c].to_list() if v is not None]
    widest = max(cells + [len(c) for c in frame.columns] + [10])
    opts = dict(
        tbl_rows=-1,
        tbl_cols=-1,
        fmt_str_lengths=widest + 2,
        fmt_table_cell_list_len=-1,
        tbl_width_chars=max(200, (widest + 3) * max(1, frame.width)),
        tbl_hide_dataframe_shape=True,
        fmt_float="full",
    )
    if fmt == "markdown":
        opts.update(tbl_formatting="MARKDOWN", tbl_hide_column_data_types=True)
    with pl.Config(**opts):
        return str(frame)


def write_result(
    result: duckdb.DuckDBPyRelation | pl.DataFrame,
    fmt: str,
    output: Path | None,
    release: duckdb.DuckDBPyConnection | None = None,
) -> int:
    """Write a query result (run once) in ``fmt`` to ``output`` or stdout (parquet needs a file). Tables and
    Markdown show every row, then the row count; CSV and Parquet are written by DuckDB (lists and structs
    kept). ``release``: the database connection the result came from, closed as soon as the result is in
    memory, before anything is written, so a slow consumer (``leaf-live sql ... | less``) never holds the
    database file while a run waits to write it. Returns the number of rows."""
    if isinstance(result, pl.DataFrame):
        table, frame = result.to_arrow(), result
    else:
        table, frame = _arrow(result), None
    columns = list(table.column_names)
    if release is not None:
        release.close()
    if fmt in ("table", "markdown"):
        frame = frame if frame is not None else _polars(columns, table)
        text = render(frame, fmt) + f"\n({frame.height} row{'s' if frame.height != 1 else ''})\n"
        if output is None:
            sys.stdout.write(text)
        else:
            output.write_text(text)
        return frame.height
    mem = duckdb.connect()
    mem.register("_result", table)
    rel = mem.sql("SELECT * FROM _result")
    if fmt == "parquet":
        rel.write_parquet(str(output))
    elif output is not None:
        rel.write_csv(str(output))
    else:
        fd, tmp = tempfile.mkstemp(suffix=".csv")
        os.close(fd)
        try:
            rel.write_csv(tmp)
            sys.stdout.write(Path(tmp).read_text())
        finally:
            os.unlink(tmp)
    mem.close()
    return table.num_rows


def check_format(fmt: str, output: str | None) -> Path | None:
    """``--format`` / ``--output`` checked together before any work: parquet writes a file."""
    if fmt == "parquet" and output is None:
        raise CommandError("--format parquet writes a file: give --output FILE")
    return check_output(output)


__all__ = [
    "CommandError",
    "FORMATS",
    "READ_WAIT_S",
    "check_format",
    "check_output",
    "check_writable_db",
    "db_path",
    "duckdb_message",
    "probe_directory",
    "read_only",
    "render",
    "write_result",
]
