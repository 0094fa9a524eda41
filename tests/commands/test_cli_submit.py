"""``leaf-live submit`` (issue 12 item 5, and its acceptance): the recorded GPT-5 nowcasts, exported with
``leaf-live sql`` and submitted as ``external/gpt5-copy``, score exactly as the recorded model on every board;
a hostile file (20 kinds of bad rows) is refused with each row named and nothing stored. Runs on a copy of the
session's main run (database and Dagster instance), so the other tests keep theirs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest

from leaf_live.cli import main

GPT5 = "openai/gpt-5-search-api@single"
COPY = "external/gpt5-copy"
COPY_BOARD = COPY + "@retrospective"  # a CLI file ranks on the retrospective board (issue 21)

# The recorded model's scorable nowcasts in the submission schema (README "Submitting forecasts"): every valid
# nowcast issued before its release, with its run label and the time its answer existed.
EXPORT = f"""SELECT n.indicator_id, strftime(n.reference_period, '%Y-%m-%d') AS reference_period,
  strftime(n.issued_at, '%Y-%m-%dT%H:%M:%SZ') AS issued_at,
  strftime(n.answered_at, '%Y-%m-%dT%H:%M:%SZ') AS answered_at,
  n.value, c.unit, regexp_replace(n.partition_key, '^{re.escape(GPT5)}/', '') AS run
  FROM nowcasts n JOIN indicator_catalog c USING (indicator_id)
  WHERE n.model_id = '{GPT5}' AND n.valid AND NOT n.after_release
  ORDER BY n.partition_key, n.issued_at, n.indicator_id"""

# (line of the file, column, reason) for each bad row; rows 1-20 are one good payrolls run whose row 21 slips
# x10.
HOSTILE_ROWS = [
    ("cpi_core,2026-03-01,2026-03-26T00:00:00Z,2.8,percent,,,", "indicator_id", "unknown indicator"),
    ("cpi,2026-13-01,2026-03-26T00:00:00Z,2.8,percent,,,", "reference_period", "not a calendar date"),
    (
        "cpi,2026-03-15,2026-03-26T00:00:00Z,2.8,percent,,,",
        "reference_period",
        "is not the first day of a month",
    ),
    ("cpi,2026-03-01,2026-03-26 10:00:00,2.8,percent,,,", "issued_at", "timestamp without a time zone"),
    ("cpi,2026-03-01,yesterday,2.8,percent,,,", "issued_at", "not an ISO 8601 timestamp"),
    (
        "cpi,2026-03-01,2026-04-10T12:30:00Z,2.8,percent,,,",
        "issued_at",
        "issued at or after the release of cpi 2026-03-01 at 2026-04-10T12:30:00Z: never scored",
    ),
    ("cpi,2026-03-01,2026-04-11T00:00:00Z,2.8,percent,,,", "issued_at", "issued at or after the release"),
    ("cpi,2026-03-01,2031-01-01T00:00:00Z,2.8,percent,,,", "issued_at", "in the future"),
    ("cpi,2026-03-01,2026-03-27T00:00:00Z,abc,percent,,,", "value", "not a number"),
    ("cpi,2026-03-01,2026-03-27T01:00:00Z,nan,percent,,,", "value", "not a finite number"),
    ("cpi,2026-03-01,2026-03-27T02:00:00Z,,percent,,,", "value", "empty: a number is required"),
    ("cpi,2026-03-01,2026-03-27T03:00:00Z,2.8,dollars,,,", "unit", "wrong_unit"),
    (
        "nonfarm_payrolls,2026-03-01,2026-03-27T00:00:00Z,150000,thousand persons,,,",
        "value",
        "out_of_guardrail",
    ),
    (
        "cpi,2026-03-01,2026-03-27T04:00:00Z,0.029,percent,,CPI inflation near 2.9% year over year,",
        "value",
        "wrong_magnitude",
    ),
    (
        "cpi,2005-01-01,2005-01-26T00:00:00Z,2.8,percent,,,",
        "reference_period",
        "unknown target: no release window",
    ),
    (
        "cpi,2026-03-01,2026-03-28T00:00:00Z,2.8,percent,,,",
        None,
        None,
    ),  # good on its own; the next repeats its key
    (
        "cpi,2026-03-01,2026-03-28T00:00:00Z,2.9,percent,,,",
        "run, indicator_id, reference_period, issued_at",
        "duplicate key: same run, indicator_id, reference_period, issued_at as row 37",
    ),
    ("cpi,2026-03-01,2026-03-28T01:00:00Z,2.8,percent,bad run!,,", "run", "a run label is 1-64 letters"),
    (
        "cpi,2026-03-01,2026-03-28T02:00:00Z,2.8,percent,,,2026-03-28T01:00:00Z",
        "answered_at",
        "before issued_at",
    ),
    ("cpi,2026-03-01,2026-03-28T03:00:00Z,2.8,,,,", "unit", "missing_unit"),
]


@pytest.fixture(scope="module")
def store(main_run, tmp_path_factory):
    """A copy of the main run's database and Dagster instance; DAGSTER_HOME points at the copy while used."""
    base = tmp_path_factory.mktemp("submit")
    db = Path(shutil.copy(main_run["db"], base / "store.duckdb"))
    home = Path(shutil.copytree(main_run["dagster_home"], base / "dagster_home"))
    return {"db": db, "home": home, "dir": base}


@pytest.fixture()
def cli(store, monkeypatch, capsys):
    monkeypatch.setenv("DAGSTER_HOME", str(store["home"]))

    def run(*argv):
        rc = main(list(argv))
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run


def table_digest(db: Path, table: str) -> tuple:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f"SELECT count(*), coalesce(sum(hash(t)), 0) FROM {table} t").fetchall()[0]
    finally:
        con.close()


def test_a_hostile_file_is_refused_row_by_row_and_nothing_is_stored(store, cli):
    header = "indicator_id,reference_period,issued_at,value,unit,run,rationale,answered_at"
    good_run = [
        f"nonfarm_payrolls,2026-03-01,2026-03-26T{h:02d}:00:00Z,{150 + h},thousand persons,r1,,"
        for h in range(20)
    ]
    slip = "nonfarm_payrolls,2026-03-01,2026-03-26T20:00:00Z,1600,thousand persons,r1,,"  # x10 of 160
    path = store["dir"] / "hostile.csv"
    path.write_text("\n".join([header, *good_run, slip, *(r for r, _, _ in HOSTILE_ROWS)]) + "\n")
    before = {t: table_digest(store["db"], t) for t in ("nowcasts", "livemacro_scores")}
    rc, out, err = cli("submit", str(path), "--model", "external/hostile", "--db", str(store["db"]))
    assert rc == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"leaf-live submit: {path}: 20 of 41 rows rejected, nothing stored"
    assert "Traceback" not in err
    expected = [(21, "value", "unit_slip")] + [
        (22 + k, col, why) for k, (_, col, why) in enumerate(HOSTILE_ROWS) if col
    ]
    assert (
        len(expected) == 20 and len(lines) == 21
    )  # one line per bad row, each naming row, line, column, reason
    for line, (row, col, why) in zip(lines[1:], expected):
        assert line.startswith(f"  row {row} (line {row + 1}): {col}="), line
        assert why in line, (line, why)
    assert {t: table_digest(store["db"], t) for t in before} == before  # nothing stored, nothing rescored


def test_the_recorded_gpt5_nowcasts_resubmitted_score_as_the_recorded_model(store, cli):
    db, csv = store["db"], store["dir"] / "gpt5.csv"
    rc, out, err = cli("sql", EXPORT, "--db", str(db), "--format", "csv", "--output", str(csv))
    assert rc == 0 and err == ""
    con = duckdb.connect(str(db), read_only=True)
    n_scorable = con.execute(
        f"SELECT count(*) FROM nowcasts WHERE model_id = '{GPT5}' AND valid AND NOT after_release"
    ).fetchall()[0][0]
    n_runs = con.execute(
        f"SELECT count(DISTINCT partition_key) FROM nowcasts WHERE model_id = '{GPT5}'"
    ).fetchall()[0][0]
    con.close()
    assert out == f"{n_scorable} rows -> {csv}\n" and n_scorable > 5000

    rc, out, err = cli("submit", str(csv), "--model", COPY, "--db", str(db))
    assert rc == 0, err
    assert out.splitlines()[0].endswith(
        f"{n_scorable} nowcasts in {n_runs} run slices of nowcasts stored as {COPY} "
        f"(producer external_submissions) in {db}; replaced 0 rows of its previous "
        "submission"
    )
    assert "rescored the macro track: job leaf_live_macro_scores" in out and ", 0 failed" in out

    con = duckdb.connect(str(db), read_only=True)
    try:
        # the stored copy: the same nowcasts (values, times, answer times) under the external model id
        q = (
            "SELECT indicator_id, reference_period, issued_at, answered_at, value, after_release FROM"
            " nowcasts WHERE model_id = ? AND valid AND NOT after_release ORDER BY ALL"
        )
        assert con.execute(q, [COPY]).fetchall() == con.execute(q, [GPT5]).fetchall()
        # every score table: the copy's rows equal the recorded model's, column for column
        for table, key in (
            ("livemacro_scores", "partition_key, fit_id, horizon, scope, target"),
            ("relative_errors", "partition_key, indicator_id, reference_period, days_to_release"),
            ("livebetting_scores", "partition_key, market_id, hours, segment"),
        ):
            q = f"SELECT * EXCLUDE (model_id) FROM {table} WHERE model_id = ? ORDER BY {key}"
            a, b = con.execute(q, [GPT5]).fetchall(), con.execute(q, [COPY_BOARD]).fetchall()
            assert len(a) > 0 and a == b, table
        n = con.execute(
            "SELECT count(*) FROM livemacro_scores WHERE model_id = ? AND n_events_own > 0", [COPY_BOARD]
        ).fetchall()[0][0]
        assert n > 0
        # its provenance (issue 21): one retrospective file receipt per stored run slice, none live
        assert con.execute(
            "SELECT source, board, count(*), sum(n_rows) FROM external_receipts WHERE model_id = ?"
            " GROUP BY ALL",
            [COPY],
        ).fetchall() == [("file", "retrospective", n_runs, n_scorable)]
    finally:
        con.close()

    # the same file again replaces the submission: same rows, nothing duplicated
    before = table_digest(db, "nowcasts")
    rc, out, err = cli("submit", str(csv), "--model", COPY, "--db", str(db), "--no-score")
    assert rc == 0, err
    assert f"replaced {n_scorable} rows of its previous submission" in out
    assert out.splitlines()[-1] == f"scores not updated: run `leaf-live rescore --track macro --db {db}`"
    assert table_digest(db, "nowcasts") == before


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["--model", "openai/gpt-5"],
            "--model 'openai/gpt-5': submitted forecasts are external/<name> (e.g. external/my-model)",
        ),
        (
            ["--model", "external/Bad Name"],
            (
                "--model 'external/Bad Name': <name> must be 1-64 lower-case letters, digits, '.', "
                "'_' or '-', starting with a letter or digit"
            ),
        ),
    ],
)
def test_bad_model_ids_are_one_line(store, cli, argv, line):
    path = store["dir"] / "x.csv"
    path.write_text("indicator_id,reference_period,issued_at,value,unit\n")
    rc, out, err = cli("submit", str(path), *argv, "--db", str(store["db"]))
    assert (rc, out, err) == (1, "", f"leaf-live submit: {line}\n")


def test_bad_files_are_one_line(store, cli):
    missing, empty = store["dir"] / "none.csv", store["dir"] / "empty.csv"
    empty.write_text("indicator_id,reference_period,issued_at,value,unit\n")
    wrong = store["dir"] / "wrong.csv"
    wrong.write_text(
        "indicator,reference_period,issued_at,value,unit\ncpi,2026-03-01,2026-03-27T00:00:00Z,2.8,percent\n"
    )
    folder = store["dir"] / "folder.csv"
    folder.mkdir(exist_ok=True)
    for path, line in (
        (missing, f"{missing}: no such file"),
        (folder, f"{folder}: not a file"),
        (
            store["dir"] / "notes.txt",
            f"{store['dir'] / 'notes.txt'}: unknown file type '.txt'; give a .csv or .parquet file",
        ),
    ):
        rc, out, err = cli("submit", str(path), "--model", "external/x", "--db", str(store["db"]))
        assert (rc, out, err) == (1, "", f"leaf-live submit: {line}\n")
    for path, why in (
        (empty, "empty file: a header and no data rows; nothing stored"),
        (
            wrong,
            (
                "wrong columns: missing column(s) ['indicator_id']; unknown column(s) ['indicator']; "
                "expected indicator_id, reference_period, issued_at, value, unit, [answered_at], [run], "
                "[rationale]; nothing stored"
            ),
        ),
    ):
        rc, out, err = cli("submit", str(path), "--model", "external/x", "--db", str(store["db"]))
        assert (rc, out, err) == (1, "", f"leaf-live submit: {path}: {why}\n")


# The event track's baseline last-value forecasts in the submission schema (README "Submitting forecasts"):
# the series tasks of the large caps, with the bundle each forecast was made from.
EVENT_SOURCE = "baseline/last-value"
EVENT_COPY = "external/last-value-copy"
EVENT_EXPORT = f"""SELECT f.task_id, strftime(f.issued_at, '%Y-%m-%dT%H:%M:%SZ') AS issued_at,
  CAST(f.point AS VARCHAR) AS point, f.quantiles, f.predicted_class, f.probability, f.bundle_hash
  FROM leaf_forecasts f JOIN forecast_tasks t USING (task_id)
  WHERE f.model_id = '{EVENT_SOURCE}' AND f.valid AND t.domain = 'large_cap' AND t.task_kind = 'series'
  ORDER BY f.task_id"""


def test_event_forecasts_resubmitted_score_as_their_source_model(store, cli):
    db, csv = store["db"], store["dir"] / "last_value.csv"
    rc, out, err = cli("sql", EVENT_EXPORT, "--db", str(db), "--format", "csv", "--output", str(csv))
    assert rc == 0 and err == ""
    n = int(out.split()[0])
    assert n >= 1020  # LEAF §4.1: 1,020 large-cap series tasks on the main run's span

    rc, out, err = cli("submit", str(csv), "--track", "event", "--model", EVENT_COPY, "--db", str(db))
    assert rc == 0, err
    assert f"{n} task forecasts in leaf_forecasts stored as {EVENT_COPY}" in out
    assert "rescored the event track: job leaf_live_event_rescore" in out and ", 0 failed" in out
    con = duckdb.connect(str(db), read_only=True)
    try:
        q = (
            "SELECT task_id, horizon, metric, value FROM leaf_scores WHERE model_id = ? ORDER BY task_id,"
            " metric"
        )
        a = con.execute(q, [EVENT_SOURCE]).fetchall()
        b = con.execute(q, [EVENT_COPY + "@retrospective"]).fetchall()  # a CLI file: retrospective board
        a = [r for r in a if r[0] in {x[0] for x in b}]
        assert len(b) >= n and a == b  # every metric of every task equals the source model's, value for value
    finally:
        con.close()
