"""The storage layer: schemas, the partition-replace helper's atomicity, read-only access."""

from __future__ import annotations

from datetime import UTC, date, datetime

import duckdb
import polars as pl
import pytest

from leaf_live.core import storage
from leaf_live.macro.catalog import INDICATOR_IDS, catalog_frame, get_indicator


def _scales(n: int, sigma: float = 1.0) -> pl.DataFrame:
    ids = INDICATOR_IDS[:n]
    return pl.DataFrame(
        {
            "indicator_id": list(ids),
            "n_releases": [10] * n,
            "mean_surprise": [0.0] * n,
            "sigma": [sigma] * n,
            "window_start": [date(2010, 1, 1)] * n,
            "window_end": [date(2025, 10, 31)] * n,
            "available_at": [datetime(2025, 11, 1, tzinfo=UTC)] * n,
        }
    )


def _returns(key: str, n: int) -> pl.DataFrame:
    y, m = map(int, key.split("-"))
    ts = [datetime(y, m, d + 1, 13, 30, tzinfo=UTC) for d in range(n)]
    return pl.DataFrame(
        {
            "partition_key": [key] * n,
            "release_at": ts,
            "contract_code": ["H10"] * n,
            "price_before": [100.0] * n,
            "price_after": [101.0] * n,
            "r_g": [0.00995] * n,
            "window_status": ["usable"] * n,
            "source": ["test"] * n,
            "available_at": ts,
        }
    )


@pytest.fixture()
def con(tmp_path):
    c = storage.connect(tmp_path / "t.duckdb")
    yield c
    c.close()


def test_every_table_has_available_at_and_creates(con):
    for t in storage.TABLES.values():
        assert "available_at" in t.column_names or t.name in (
            "indicator_catalog",
            "leaf_targets",
        ), t.name  # catalogs
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert set(storage.TABLES) <= present


def test_replace_partition_twice_keeps_counts_and_isolates_partitions(con):
    storage.replace_partition(
        con, "announcement_returns", _returns("2010-01", 3), {"partition_key": "2010-01"}
    )
    storage.replace_partition(
        con, "announcement_returns", _returns("2010-02", 2), {"partition_key": "2010-02"}
    )
    storage.replace_partition(
        con, "announcement_returns", _returns("2010-01", 3), {"partition_key": "2010-01"}
    )
    counts = dict(
        con.execute("SELECT partition_key, count(*) FROM announcement_returns GROUP BY 1").fetchall()
    )
    assert counts == {"2010-01": 3, "2010-02": 2}


def test_failed_replace_leaves_previous_rows(con):
    storage.replace_partition(
        con, "announcement_returns", _returns("2010-01", 3), {"partition_key": "2010-01"}
    )
    bad = _returns("2010-01", 2).with_columns(pl.lit(None, pl.Utf8).alias("window_status"))
    with pytest.raises(storage.StorageError, match="window_status"):
        storage.replace_partition(con, "announcement_returns", bad, {"partition_key": "2010-01"})
    stray = _returns("2010-02", 1)
    with pytest.raises(storage.StorageError, match="outside partition partition_key='2010-01'"):
        storage.replace_partition(con, "announcement_returns", stray, {"partition_key": "2010-01"})
    dup = pl.concat([_returns("2010-01", 1), _returns("2010-01", 1)])
    with pytest.raises(storage.StorageError, match="duplicate primary key"):
        storage.replace_partition(con, "announcement_returns", dup, {"partition_key": "2010-01"})
    assert con.execute("SELECT count(*) FROM announcement_returns").fetchone()[0] == 3


def test_insert_failure_rolls_back_delete(con):
    # A constraint the frame check does not know about fails inside the transaction, after the DELETE.
    bad = _scales(2, sigma=float("nan"))
    con.execute("DROP TABLE surprise_scales")
    con.execute(
        storage.get_table("surprise_scales")
        .ddl()
        .replace('"sigma" DOUBLE NOT NULL', '"sigma" DOUBLE NOT NULL CHECK (NOT isnan(sigma))')
    )
    storage.replace_partition(con, "surprise_scales", _scales(4), None)
    with pytest.raises(duckdb.ConstraintException):
        storage.replace_partition(con, "surprise_scales", bad, None)
    assert con.execute("SELECT count(*), min(sigma) FROM surprise_scales").fetchone() == (4, 1.0)


def test_naive_timestamps_and_unknown_columns_are_refused(con):
    naive = _returns("2010-01", 1).with_columns(pl.col("release_at").dt.replace_time_zone(None))
    with pytest.raises(storage.StorageError, match="release_at: timestamp without time zone"):
        storage.conform("announcement_returns", naive)
    with pytest.raises(storage.StorageError, match=r"unknown columns \['extra'\]"):
        storage.conform("announcement_returns", _returns("2010-01", 1).with_columns(pl.lit(1).alias("extra")))
    with pytest.raises(storage.StorageError, match="unknown table 'nope'"):
        storage.get_table("nope")


def test_timestamps_round_trip_in_utc(con):
    storage.replace_partition(
        con, "announcement_returns", _returns("2010-01", 1), {"partition_key": "2010-01"}
    )
    back = storage.read_table(con, "announcement_returns")
    assert back["release_at"].dtype == pl.Datetime("us", "UTC")
    assert back["release_at"][0] == datetime(2010, 1, 1, 13, 30, tzinfo=UTC)


def test_read_only_connection_reads_and_cannot_write(tmp_path):
    path = tmp_path / "ro.duckdb"
    with storage.open_db(path) as c:
        storage.replace_partition(c, "indicator_catalog", catalog_frame())
    ro = storage.connect_read_only(path)
    try:
        assert ro.execute("SELECT count(*) FROM indicator_catalog").fetchone()[0] == 16
        with pytest.raises(duckdb.Error):
            ro.execute("DELETE FROM indicator_catalog")
    finally:
        ro.close()
    with pytest.raises(storage.StorageError, match="does not exist"):
        storage.connect_read_only(tmp_path / "missing.duckdb")


def test_catalog_matches_table9_and_groups():
    cat = catalog_frame()
    assert cat.height == 16 and set(cat["indicator_id"]) == set(INDICATOR_IDS)
    assert (
        get_indicator("cpi").beta_table9 == -11.240 and get_indicator("ism_manufacturing").se_table9 == 1.525
    )
    groups = cat.group_by("prompt_group").len().sort("prompt_group")
    assert groups.rows() == [("demand_sectoral", 7), ("output_core", 9)]
    themes = dict(cat.group_by("theme").len().rows())
    assert themes == {"supply_production": 4, "demand_inflation": 6, "labor_market": 2, "housing": 4}
    # Table 9 betas sum of squares: CPI share 33.0% (Table 11, economic weight column).
    b = cat["beta_table9"].to_numpy()
    share = b**2 / (b**2).sum()
    assert round(100 * share[list(INDICATOR_IDS).index("cpi")], 1) == 33.0
    with pytest.raises(KeyError, match="unknown indicator_id 'gdp'"):
        get_indicator("gdp")


# ---------------------------------------------------------------------------------------------
# schema versions
# ---------------------------------------------------------------------------------------------


def _rebuild_hint(path) -> str:
    return f"rebuild with `leaf-live run --db NEW_FILE` (or move {path.name} away and run `leaf-live run`)"


def test_a_new_file_stamps_every_table_with_its_schema_version(tmp_path):
    db = tmp_path / "v.duckdb"
    storage.connect(db).close()
    con = storage.connect_read_only(db)
    try:
        stamped = dict(con.execute(f"SELECT table_name, schema_version FROM {storage.META_TABLE}").fetchall())
    finally:
        con.close()
    assert stamped == {name: storage.schema_version(name) for name in storage.TABLES}
    assert len(set(stamped.values())) == len(stamped)  # the table name is part of the shape


def test_a_file_built_by_another_schema_fails_in_one_line(tmp_path):
    """An older build of `releases` (no `source` column, version aaaa...) is refused on read-write and
    read-only connections with one line, before any query could hit a binder error."""
    db = tmp_path / "old.duckdb"
    storage.connect(db).close()
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE releases DROP COLUMN source")
    con.execute(
        f"UPDATE {storage.META_TABLE} SET schema_version = 'aaaaaaaaaaaa' WHERE table_name = 'releases'"
    )
    con.close()
    want = (
        f"{db}: table releases was built by schema aaaaaaaaaaaa, this is"
        f" {storage.schema_version('releases')}: {_rebuild_hint(db)}"
    )
    for connect in (storage.connect, storage.connect_read_only):
        with pytest.raises(storage.SchemaVersionError) as err:
            connect(db)
        assert str(err.value) == want and "\n" not in str(err.value)
    # the file is not locked by the refused connections
    duckdb.connect(str(db)).close()


def test_the_cli_answers_an_old_file_with_one_line(tmp_path, capsys):
    from leaf_live.cli import main

    db = tmp_path / "old.duckdb"
    storage.connect(db).close()
    con = duckdb.connect(str(db))
    con.execute(
        f"UPDATE {storage.META_TABLE} SET schema_version = 'bbbbbbbbbbbb' WHERE table_name = 'nowcasts'"
    )
    con.close()
    assert main(["sql", "SELECT 1", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert (
        err == f"leaf-live sql: {db}: table nowcasts was built by schema bbbbbbbbbbbb, this is "
        f"{storage.schema_version('nowcasts')}: {_rebuild_hint(db)}\n"
    )


def test_a_file_from_before_versioning_is_adopted_only_if_its_columns_match(tmp_path):
    good, bad = tmp_path / "good.duckdb", tmp_path / "bad.duckdb"
    for path in (good, bad):
        con = duckdb.connect(str(path))  # tables as the code before versioning created them: no meta table
        for t in storage.TABLES.values():
            con.execute(t.ddl())
        con.close()
    con = duckdb.connect(str(bad))
    con.execute("ALTER TABLE surprise_scales ALTER COLUMN sigma TYPE VARCHAR")
    con.close()
    storage.connect(good).close()  # adopted and stamped
    con = storage.connect_read_only(good)
    assert con.execute(f"SELECT count(*) FROM {storage.META_TABLE}").fetchone()[0] == len(storage.TABLES)
    con.close()
    with pytest.raises(
        storage.SchemaVersionError, match="table surprise_scales was built by schema unversioned"
    ):
        storage.connect(bad)


def test_schema_version_follows_the_stored_shape_not_the_docs(monkeypatch):
    t = storage.get_table("surprise_scales")
    v0 = storage.schema_version("surprise_scales")
    cols = list(t.columns)
    monkeypatch.setitem(
        storage.TABLES,
        t.name,
        storage.Table(
            t.name,
            "other doc",
            t.grain,
            tuple(storage.Column(c.name, c.type, c.doc + " (reworded)", c.nullable) for c in cols),
            t.partition_by,
            t.primary_key,
        ),
    )
    assert storage.schema_version("surprise_scales") == v0
    retyped = tuple(
        storage.Column(c.name, "VARCHAR" if c.name == "sigma" else c.type, c.doc, c.nullable) for c in cols
    )
    monkeypatch.setitem(
        storage.TABLES, t.name, storage.Table(t.name, t.doc, t.grain, retyped, t.partition_by, t.primary_key)
    )
    assert storage.schema_version("surprise_scales") != v0


def test_several_slices_replaced_in_one_transaction(con):
    for key, n in (("2010-01", 3), ("2010-02", 2), ("2010-03", 1)):
        storage.replace_partition(con, "announcement_returns", _returns(key, n), {"partition_key": key})
    new = pl.concat([_returns("2010-01", 1), _returns("2010-02", 4)])
    # 2010-01 and 2010-02 replaced together; 2010-03 untouched; a listed key without rows is emptied
    assert (
        storage.replace_partition(
            con, "announcement_returns", new, {"partition_key": ["2010-01", "2010-02", "2010-04"]}
        )
        == 5
    )
    counts = dict(
        con.execute("SELECT partition_key, count(*) FROM announcement_returns GROUP BY 1").fetchall()
    )
    assert counts == {"2010-01": 1, "2010-02": 4, "2010-03": 1}
    stray = _returns("2010-05", 1)
    with pytest.raises(
        storage.StorageError, match="partition_key='2010-05' outside partition partition_key=2 values"
    ):
        storage.replace_partition(
            con, "announcement_returns", pl.concat([new, stray]), {"partition_key": ["2010-01", "2010-02"]}
        )
    assert (
        dict(con.execute("SELECT partition_key, count(*) FROM announcement_returns GROUP BY 1").fetchall())
        == counts
    )


def test_writer_lock_refuses_a_second_writer_naming_the_holder(tmp_path):
    import os

    db = tmp_path / "w.duckdb"
    with storage.writer_lock(db):
        # a second holder (another open file description, as another process has) is refused, naming this PID
        with pytest.raises(storage.DatabaseLockedError, match=rf"PID {os.getpid()} \(") as err:
            with storage.writer_lock(db):
                pass
        assert err.value.pid == os.getpid()
    with storage.writer_lock(db):  # released on exit
        pass


def test_a_run_while_another_writer_holds_the_database_is_one_line(tmp_path, snapshot_dir, capsys):
    import os

    from leaf_live.cli import main

    db = tmp_path / "held.duckdb"
    storage.connect(db).close()
    with storage.writer_lock(db):
        rc = main(
            [
                "run",
                "--snapshot",
                str(snapshot_dir),
                "--db",
                str(db),
                "--start",
                "2026-01",
                "--end",
                "2026-02",
            ]
        )
        submit = main(["rescore", "--db", str(db)])
    err = capsys.readouterr().err
    assert rc == 1 and submit == 1 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(
        f"is being written by another leaf-live process, PID {os.getpid()}" in ln for ln in lines
    )


def test_a_bad_environment_variable_is_one_line(monkeypatch, capsys):
    from leaf_live.cli import main

    monkeypatch.setenv("LEAF_LIVE_TRANSPORT", "bogus")
    assert main(["sql", "SELECT 1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "LEAF_LIVE_TRANSPORT='bogus'" in err and "Traceback" not in err
