"""The arima_nowcasts asset keeps every fitted grid in the arima_fits cache: the main run stores one grid per
distinct history, and materializing the month again fits nothing and writes the same nowcasts."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
from dagster import DagsterInstance, materialize

from assets.macro_nowcasts import arima_nowcasts
from leaf_live.core import storage
from leaf_live.macro.forecasters.arima import fit_cache
from resources import default_resources


def _read(db: Path, table: str, where: str = "") -> pl.DataFrame:
    con = storage.connect_read_only(db)
    try:
        return storage.read_table(con, table, where)
    finally:
        con.close()


def test_rerun_reuses_every_cached_grid_and_writes_the_same_nowcasts(main_run, snapshot_dir, tmp_path):
    db = Path(shutil.copy(main_run["db"], tmp_path / "copy.duckdb"))
    fits = _read(db, "arima_fits")
    ours = "producer = 'arima_nowcasts' AND partition_key = '2025-11'"
    before = _read(db, "nowcasts", ours).sort("indicator_id", "reference_period")
    assert before.height > 0 and fits.height > 0
    assert set(fits["estimator_version"]) == {fit_cache.ESTIMATOR_VERSION}
    # one complete grid per distinct history: 52 orders, or the single AR(1) of the ISM rule
    per_grid = fits.group_by("series_id", "content_hash").len()
    assert set(per_grid["len"]) <= {52, 1} and per_grid.filter(pl.col("len") == 52).height > 0
    result = materialize(
        [arima_nowcasts],
        resources=default_resources(db=db, snapshot=snapshot_dir),
        instance=DagsterInstance.ephemeral(),
        partition_key="2025-11",
        run_config={"ops": {"arima_nowcasts": {"config": {"first_month": "2025-10", "workers": 1}}}},
    )
    meta = result.asset_materializations_for_node("arima_nowcasts")[0].metadata
    assert meta["grids_fitted"].value == 0 and meta["grids_cached"].value == per_grid.height
    after = _read(db, "nowcasts", ours).sort("indicator_id", "reference_period")
    cols = ["indicator_id", "reference_period", "value", "valid", "invalid_reason", "rationale"]
    assert after.select(cols).equals(before.select(cols))
    assert _read(db, "arima_fits").height == fits.height
