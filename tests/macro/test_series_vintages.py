"""The series_vintages stage: which vintages are stored, when each was known, which one a history uses, and
the auto-ARIMA GDP nowcasts the real-time GDP vintages make possible."""

from __future__ import annotations

from datetime import date, datetime

import numpy as np
import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from assets.macro_nowcasts import series_vintages
from leaf_live.core import storage
from leaf_live.core.pit import UTC
from leaf_live.macro import series_vintages as SV
from leaf_live.macro.forecasters.arima.nowcasts import arima_nowcast_batch
from leaf_live.macro.sources.fred_md import FredMdSnapshot
from resources import default_resources


def test_catalog_columns_labels_and_publication_rule():
    md = SV.catalog_columns("md")
    assert {"CPIAUCSL", "PAYEMS", "UNRATE", "INDPRO", "WPSFD49207", "PPIFGS", "HOUST", "PERMIT"} <= set(md)
    assert SV.catalog_columns("qd") == ("GDPC1",)
    # a FRED-MD vintage is known by the end of its month: 2024-03-01 00:00 EST = 05:00 UTC; July: EDT
    assert SV.fred_available_at("2024-02") == datetime(2024, 3, 1, 5, tzinfo=UTC)
    assert SV.fred_available_at("2024-06") == datetime(2024, 7, 1, 4, tzinfo=UTC)
    assert SV.labels_for(["2010-02", "2010-01"], "2010-01") == [
        "2009-10",
        "2009-11",
        "2009-12",
        "2010-01",
        "2010-02",
    ]
    assert (
        SV.partition_for("2009-11", "2010-01") == "2010-01"
        and SV.partition_for("2024-02", "2010-01") == "2024-02"
    )


def _rows(entries) -> pl.DataFrame:
    """entries: (source, series_id, vintage, available_at, [(period, value)], tcode)."""
    out = []
    for src, sid, vin, at, obs, tcode in entries:
        out += [
            {
                "partition_key": vin,
                "source": src,
                "series_id": sid,
                "vintage": vin,
                "reference_period": p,
                "value": v,
                "tcode": tcode,
                "available_at": at,
            }
            for p, v in obs
        ]
    return pl.DataFrame(out, schema=storage.polars_schema("series_vintages"))


def test_store_chooses_the_latest_label_published_by_the_issue_time():
    q = [(date(2023, 10, 1), 1.0)]
    t = lambda *a: datetime(*a, tzinfo=UTC)  # noqa: E731
    store = SV.VintageStore(
        _rows(
            [
                ("philly-rtdsm", "ROUTPUT", "2024-02", t(2024, 2, 16, 5), q, 5),
                ("gdp-releases", "ROUTPUT", "2024-02", t(2024, 2, 28, 13), q + [(date(2024, 1, 1), 2.0)], 5),
                ("gdp-releases", "ROUTPUT", "2024-04", t(2024, 4, 25, 12), q, 5),
                ("fred-qd", "GDPC1", "2024-02", t(2024, 3, 1, 5), q, 5),
            ]
        )
    )
    cols = ("GDPC1", "ROUTPUT")
    # label <= wanted; on the same label the latest published, known by the issue time
    assert store.choose(cols, "2024-03").source == "fred-qd"
    pick = store.choose(cols, "2024-03", known_by=t(2024, 2, 29))
    assert (pick.source, pick.vintage, pick.gap_months) == ("gdp-releases", "2024-02", 1)
    assert store.choose(cols, "2024-02", known_by=t(2024, 2, 20)).source == "philly-rtdsm"
    assert store.choose(cols, "2024-01") is None and store.choose(("CPIAUCSL",), "2030-01") is None
    assert store.choose(cols, "2024-02", known_by=t(2024, 2, 16, 4, 59)) is None  # one minute before RTDSM's
    with pytest.raises(
        ValueError, match="tz"
    ):  # the point-in-time filter (core.pit.known_by) wants an instant
        store.choose(cols, "2024-03", known_by=datetime(2024, 2, 29))
    periods, values, tcode = store.observations(pick)
    assert periods == [date(2023, 10, 1), date(2024, 1, 1)] and values.tolist() == [1.0, 2.0] and tcode == 5
    assert store.describe(cols) == "2024-02 .. 2024-04 (2 vintages)"
    with pytest.raises(ValueError, match="several tcodes"):
        SV.VintageStore(
            _rows(
                [
                    ("fred-md", "X", "2024-02", t(2024, 3, 1), [(date(2024, 1, 1), 1.0)], 5),
                    ("fred-md", "X", "2024-02", t(2024, 3, 1), [(date(2024, 2, 1), 1.0)], 6),
                ]
            )
        )


def test_stored_rows_are_the_vintage_files_cells(snapshot_dir, series_vintage_rows):
    rows = series_vintage_rows
    # 2009-10 .. 2024-03 monthly FRED-MD vintages + the approximate 2025-03 and 2025-12 files; FRED-QD
    # 2025-03; RTDSM quarterly vintages 2009Q4 .. 2024Q1; release-chained vintages 2024-04 .. 2026-03
    n = rows.group_by("source").agg(pl.col("vintage").n_unique()).sort("source").rows()
    assert n == [("fred-md", 176), ("fred-qd", 1), ("gdp-releases", 22), ("philly-rtdsm", 58)]
    levels, tcodes = FredMdSnapshot(snapshot_dir).load_vintage("2016-05", "md")
    for col in ("CPIAUCSL", "WPSFD49207", "PAYEMS"):
        ours = rows.filter((pl.col("vintage") == "2016-05") & (pl.col("series_id") == col)).sort(
            "reference_period"
        )
        theirs = levels.select("date", col).drop_nulls()
        assert ours["reference_period"].to_list() == theirs["date"].to_list()
        np.testing.assert_array_equal(ours["value"].to_numpy(), theirs[col].to_numpy())
        assert set(ours["tcode"]) == {tcodes[col]} and set(ours["partition_key"]) == {"2016-05"}
    # PPI under its pre-2016-03 name; every vintage known only after its last observation's period ended
    assert rows.filter((pl.col("vintage") == "2015-06") & (pl.col("series_id") == "PPIFGS")).height > 600
    late = rows.group_by("source", "series_id", "vintage").agg(
        pl.col("reference_period").max(), pl.col("available_at").min()
    )
    assert late.filter(pl.col("available_at").dt.date() <= pl.col("reference_period")).height == 0
    assert rows.filter(pl.col("vintage") < "2010-01")["partition_key"].unique().to_list() == ["2010-01"]


def test_gdp_nowcasts_exist_for_every_backtest_quarter_the_real_time_data_covers(vintage_store):
    # advance releases 2018-01 .. 2026-04: 2017Q4 .. 2026Q1 (34 quarters; 30 were invalid with FRED-QD alone)
    quarters = [
        date(y, m, 1)
        for y in range(2017, 2027)
        for m in (1, 4, 7, 10)
        if date(2017, 10, 1) <= date(y, m, 1) <= date(2026, 1, 1)
    ]
    batch = arima_nowcast_batch([("real_gdp_advance", q) for q in quarters], vintages=vintage_store)
    f = batch.frame.sort("reference_period")
    assert f.height == 34 and f["valid"].all()
    assert f["value"].is_between(-60, 60).all() and set(f["source_variable"]) == {"ROUTPUT"}
    for r, (_, t) in zip(f.iter_rows(named=True), batch.targets):
        q = r["reference_period"]
        wanted = f"{q.year}-{q.month + 1:02d}"  # the month before the quarter's last month
        if q <= date(2024, 1, 1):  # the RTDSM vintage of exactly that month, one quarter ahead
            assert f"Philadelphia Fed RTDSM ROUTPUT, vintage {wanted};" in r["rationale"], r["rationale"]
            assert "h=1 quarters" in r["rationale"] and t.history.vintage_gap_months == 0
        else:
            assert "GDP releases (approx. vintage) ROUTPUT" in r["rationale"] and t.history.vintage <= wanted


def test_asset_stores_each_months_vintages(snapshot_dir, series_vintage_rows, tmp_path):
    db = tmp_path / "v.duckdb"
    res = materialize(
        [series_vintages],
        resources=default_resources(db=db, snapshot=snapshot_dir),
        instance=DagsterInstance.ephemeral(),
        partition_key="2024-02",
    )
    assert res.success
    con = storage.connect_read_only(db)
    try:
        got = storage.read_table(con, "series_vintages").sort(
            "source", "series_id", "vintage", "reference_period"
        )
    finally:
        con.close()
    want = series_vintage_rows.filter(pl.col("partition_key") == "2024-02").sort(
        "source", "series_id", "vintage", "reference_period"
    )
    assert got.equals(want) and set(got["source"]) == {"fred-md", "philly-rtdsm"}
    meta = res.asset_materializations_for_node("series_vintages")[0].metadata
    assert meta["dagster/row_count"].value == want.height
