"""``leaf-live sql``: read-only, every row in every format (no silent truncation), one-line errors."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest

from leaf_live.cli import main
from leaf_live.core import storage


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "store.duckdb"
    con = storage.connect(path)
    con.execute(
        "CREATE TABLE notes AS SELECT range AS k, repeat('x', 300) || range::VARCHAR AS long_text, "
        "[range * 1.5, 2.5] AS pair FROM range(45)"
    )
    con.close()
    return path


def run(capsys, *argv):
    rc = main(["sql", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_table_prints_every_row_and_full_cells(db, capsys):
    rc, out, err = run(capsys, "SELECT k, long_text FROM notes ORDER BY k", "--db", str(db))
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[-1] == "(45 rows)"
    data = [line for line in lines if line.startswith("│ ") and "xxx" in line]
    assert len(data) == 45  # DuckDB's own box would show 40 and an ellipsis
    assert "…" not in out
    for k, line in enumerate(data):
        cells = [c.strip() for c in line.strip("│").split("┆")]
        assert cells == [str(k), "x" * 300 + str(k)]  # the 303-character cell is never cut


def test_csv_markdown_parquet_hold_the_same_rows(db, capsys, tmp_path):
    rc, out, _ = run(capsys, "SELECT k, pair FROM notes ORDER BY k", "--db", str(db), "--format", "csv")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "k,pair" and len(lines) == 46
    assert lines[3] == '2,"[3.0, 2.5]"'  # DuckDB writes the list, not an error
    rc, out, _ = run(
        capsys, "SELECT k FROM notes WHERE k < 3 ORDER BY k", "--db", str(db), "--format", "markdown"
    )
    assert rc == 0
    assert out.splitlines() == ["| k |", "|---|", "| 0 |", "| 1 |", "| 2 |", "(3 rows)"]
    target = tmp_path / "out.parquet"
    rc, out, _ = run(
        capsys,
        "SELECT k, pair FROM notes ORDER BY k",
        "--db",
        str(db),
        "--format",
        "parquet",
        "--output",
        str(target),
    )
    assert rc == 0 and out == f"45 rows -> {target}\n"
    back = pl.read_parquet(target)
    assert back["k"].to_list() == list(range(45))
    assert back["pair"].to_list()[2] == [3.0, 2.5]
    csv_file = tmp_path / "out.csv"
    rc, out, _ = run(
        capsys,
        "SELECT k FROM notes ORDER BY k",
        "--db",
        str(db),
        "--format",
        "csv",
        "--output",
        str(csv_file),
    )
    assert rc == 0 and csv_file.read_text() == "k\n" + "".join(f"{k}\n" for k in range(45))


@pytest.mark.parametrize(
    "query, line",
    [
        ("SELEC 1", 'leaf-live sql: Parser Error: syntax error at or near "SELEC"'),
        ("SELECT * FROM nope", "leaf-live sql: Catalog Error: Table with name nope does not exist!"),
        (
            "DELETE FROM notes",
            (
                'leaf-live sql: Invalid Input Error: Cannot execute statement of type "DELETE" on database '
                '"store" which is attached in read-only mode!'
            ),
        ),
        ("SELECT error('boom')", "leaf-live sql: Invalid Input Error: boom"),
        ("SELECT 1; SELECT 2", "leaf-live sql: give one SQL statement per call (the query holds several)"),
        ("   ", "leaf-live sql: empty query: give one SQL statement"),
        # read-only for files too: no COPY ... TO, no reading other files
        (
            "COPY notes TO '/tmp/leaf_live_sql_copy_test.csv'",
            (
                "leaf-live sql: Permission Error: Cannot access file "
                '"/tmp/leaf_live_sql_copy_test.csv" - file system operations are disabled by configuration'
            ),
        ),
    ],
)
def test_sql_errors_are_one_line(db, capsys, query, line):
    rc, out, err = run(capsys, query, "--db", str(db))
    assert (rc, out, err) == (1, "", line + "\n")
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM notes").fetchall() == [(45,)]  # nothing written
    assert not Path("/tmp/leaf_live_sql_copy_test.csv").exists()
    con.close()


def test_bad_paths_and_flags_are_one_line(db, capsys, tmp_path):
    cases = [
        (["SELECT 1", "--db", str(tmp_path)], f"leaf-live sql: {tmp_path} is a directory, not a DuckDB file"),
        (
            ["SELECT 1", "--db", str(tmp_path / "none.duckdb")],
            (
                f"leaf-live sql: database file {tmp_path / 'none.duckdb'} does not exist; run `leaf-live run`"
                " first (or set LEAF_LIVE_DB)"
            ),
        ),
        (
            ["SELECT 1", "--db", str(db), "--format", "parquet"],
            "leaf-live sql: --format parquet writes a file: give --output FILE",
        ),
        (
            ["SELECT 1", "--db", str(db), "--output", str(tmp_path)],
            f"leaf-live sql: --output {tmp_path}: is a directory",
        ),
        (
            ["SELECT 1", "--db", str(db), "--output", str(tmp_path / "no" / "x.csv")],
            (
                f"leaf-live sql: --output {tmp_path / 'no' / 'x.csv'}: directory {tmp_path / 'no'} does not"
                " exist"
            ),
        ),
    ]
    for argv, line in cases:
        rc, out, err = run(capsys, *argv)
        assert (rc, out, err) == (1, "", line + "\n"), argv


def test_list_cells_are_shown_in_full(db, capsys):
    values = [0.123456789012345, -9.87654321e-15, *range(14)]  # 16 values, one tiny
    query = f"SELECT {values}::DOUBLE[] AS cov_row"
    for fmt in ("table", "markdown"):
        rc, out, err = run(capsys, query, "--db", str(db), "--format", fmt)
        assert rc == 0 and err == ""
        assert "0.123456789012345" in out and "-9.87654321e-15" in out and "13.0" in out
        body = [ln for ln in out.splitlines() if "0.123456789012345" in ln]
        assert len(body) == 1  # one line per cell, so a Markdown row stays a row
