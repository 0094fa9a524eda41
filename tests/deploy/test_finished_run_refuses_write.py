"""A redelivered step of a run the instance already records as finished refuses to write (issue 20 item 2:
Redis redelivered a step of a FAILED run and a new worker rewrote DuckDB and recorded success inside it).
In process: the asset's run is marked failed on the instance before its write, as a redelivery meets it."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import polars as pl
import pytest
from dagster import DagsterInstance, asset, materialize

from assets.common import RunFinishedError, write_tables
from leaf_live.core import storage
from resources import LeafLiveDB

TABLE = "event_analysis_status"  # any registered partitioned table


def _make_asset(mark: str | None):
    @asset(name=f"probe_{mark or 'live'}")
    def probe(context, db: LeafLiveDB) -> None:
        if mark == "failed":
            context.instance.report_run_failed(context.dagster_run)
        elif mark == "canceling":
            context.instance.report_run_canceling(context.dagster_run)
        with db.get_connection() as con:
            frame = pl.DataFrame(
                {
                    "partition_key": ["k"],
                    "analysis": ["probe"],
                    "status": ["ran"],
                    "reason": [""],
                    "rows": [1],
                    "available_at": [datetime(2026, 1, 2, tzinfo=UTC)],
                },
                schema=storage.polars_schema(TABLE),
            )
            write_tables(con, {TABLE: frame}, ["k"])

    return probe


def _rows(path) -> list:
    con = duckdb.connect(str(path), read_only=True)
    try:
        exists = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [TABLE]
        ).fetchone()[0]
        return con.execute(f"SELECT partition_key, analysis FROM {TABLE}").fetchall() if exists else []
    finally:
        con.close()


@pytest.mark.parametrize("mark", ["failed", "canceling"])
def test_a_step_of_a_finished_run_writes_nothing(tmp_path, mark):
    db = tmp_path / "db.duckdb"
    with DagsterInstance.ephemeral() as instance:
        result = materialize(
            [_make_asset(mark)],
            instance=instance,
            resources={"db": LeafLiveDB(database=str(db))},
            raise_on_error=False,
        )
        (failure,) = [e for e in result.all_events if e.is_step_failure]
        err = failure.step_failure_data.error
        text = err.message + "".join(c.message for c in ([err.cause] if err.cause else []))
        assert RunFinishedError.__name__ in (err.cls_name or "") + str(err.cause and err.cause.cls_name)
        want = "FAILURE" if mark == "failed" else "CANCELING"
        assert f"already {want}; step probe_{mark} refuses to write" in text
    assert _rows(db) == []  # the table is created when the step connects; no row was written


def test_a_step_of_a_live_run_writes(tmp_path):
    db = tmp_path / "db.duckdb"
    with DagsterInstance.ephemeral() as instance:
        result = materialize(
            [_make_asset(None)], instance=instance, resources={"db": LeafLiveDB(database=str(db))}
        )
    assert result.success
    assert _rows(db) == [("k", "probe")]
