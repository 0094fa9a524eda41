"""``leaf-live sql QUERY [--db PATH] [--format table|csv|parquet|markdown] [--output FILE] [--wait SECONDS]``:
a query on a read-only connection, every row of the result (``table`` and ``markdown`` end with the row count;
``csv`` and ``parquet`` are written by DuckDB, lists and structs kept). A SQL error, a write attempted on the
read-only connection, a missing file or a file held by a running write is one line (the reader waits
``--wait`` seconds, default 10, for the writer first)."""

from __future__ import annotations

import argparse

import duckdb

from leaf_live.commands.common import (
    FORMATS,
    READ_WAIT_S,
    CommandError,
    check_format,
    db_path,
    duckdb_message,
    read_only,
    write_result,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    q = sub.add_parser(
        "sql", help="run a read-only SQL query; every row, as a table, CSV, Parquet or Markdown"
    )
    q.add_argument("query", help="SQL (DuckDB dialect); `leaf-live tables` documents the tables")
    q.add_argument("--db", help="DuckDB file (default LEAF_LIVE_DB)")
    q.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table (default; every row, never cut), csv, parquet (needs --output) or markdown",
    )
    q.add_argument("--output", help="write to FILE instead of stdout")
    q.add_argument(
        "--wait",
        type=float,
        default=READ_WAIT_S,
        help=f"seconds to wait while another process writes the database (default {READ_WAIT_S:g})",
    )
    q.set_defaults(func=cmd_sql)


def cmd_sql(args: argparse.Namespace) -> int:
    out = check_format(args.format, args.output)
    if args.wait < 0:
        raise CommandError(f"--wait {args.wait:g}: expected seconds >= 0")
    if not args.query.strip():
        raise CommandError("empty query: give one SQL statement")
    con = read_only(db_path(args.db), args.wait)
    try:
        try:
            # Read-only also for files: no COPY ... TO, no export, no reading or attaching other files.
            con.execute("SET enable_external_access = false")
            if len(duckdb.extract_statements(args.query)) != 1:
                raise CommandError("give one SQL statement per call (the query holds several)")
            rel = con.sql(args.query)
            if rel is None:  # a statement without a result (SET, PRAGMA ...)
                return 0
            n = write_result(rel, args.format, out, release=con)  # the file is released before printing
        except duckdb.Error as exc:
            raise CommandError(duckdb_message(exc)) from None
    finally:
        con.close()
    if out is not None:
        print(f"{n} row{'s' if n != 1 else ''} -> {out}")
    return 0
