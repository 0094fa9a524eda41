"""The macro models under the one forecaster contract: the consensus, published series (Fed nowcasts, recorded
runs) and auto-ARIMA turn nowcast windows into ``nowcasts`` rows; forecast_nowcasts stacks them in forecaster
order, stamps the writing stage's producer and flags rows issued at or after the release."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import polars as pl
import pytest

from leaf_live.core.forecaster import Forecaster
from leaf_live.macro.forecasters.arima.nowcasts import MODEL_ID, AutoArima, arima_nowcasts_for_windows
from leaf_live.macro.forecasters.consensus import ConsensusForecaster, consensus_forecasters
from leaf_live.macro.forecasters.published import PublishedNowcasts, published_forecasters
from leaf_live.macro.nowcasts import build_nowcasts, forecast_nowcasts
from leaf_live.macro.scoring.surprises import first_releases
from leaf_live.macro.sources.releases import ReleaseCalendarSnapshot
from leaf_live.macro.windows import nowcast_windows

CPI_FEB = datetime(2026, 3, 11, 12, 30, tzinfo=UTC)  # February CPI, 08:30 EDT
PAY_FEB = datetime(2026, 3, 6, 13, 30, tzinfo=UTC)  # February payrolls, 08:30 EST


def _releases() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "indicator_id": ["nonfarm_payrolls", "cpi", "ppi"],
            "reference_period": [date(2026, 2, 1)] * 3,
            "release_at": [PAY_FEB, CPI_FEB, CPI_FEB + timedelta(days=1)],
            "consensus": [60.0, 2.5, None],
            "consensus_source": ["investing", "forexfactory", None],
        }
    )


def _published() -> pl.DataFrame:
    rows = pl.DataFrame(
        {
            "partition_key": ["fed/cleveland-cpi"] * 3 + ["fed/gdpnow"],
            "model_id": ["fed/cleveland-cpi"] * 3 + ["fed/gdpnow"],
            "indicator_id": ["cpi"] * 3 + ["real_gdp_advance"],
            "reference_period": [date(2026, 2, 1)] * 3 + [date(2026, 4, 1)],  # 2026Q2 GDP: not scheduled yet
            # the last CPI value was published after the release: kept, flagged, never scored
            "issued_at": [
                CPI_FEB - timedelta(days=2),
                CPI_FEB - timedelta(hours=20),
                CPI_FEB + timedelta(hours=9),
                CPI_FEB,
            ],
            "value": [2.6, 2.55, 2.4, 1.9],
        }
    )
    return build_nowcasts(rows)


def test_consensus_and_published_series_become_rows_of_the_nowcasts_table():
    rel = _releases()
    windows = nowcast_windows(rel.select("indicator_id", "reference_period", "release_at"))
    cons = consensus_forecasters(rel)
    assert [f.model_id for f in cons] == ["consensus/forexfactory", "consensus/investing"]
    assert all(isinstance(f, Forecaster) for f in cons)
    pub = published_forecasters(_published())
    assert [f.model_id for f in pub] == ["fed/cleveland-cpi", "fed/gdpnow"]
    out = forecast_nowcasts([*cons, *pub], windows, producer="comparator_nowcasts")
    assert set(out["producer"]) == {"comparator_nowcasts"}
    assert out.select("model_id", "indicator_id", "value", "after_release").rows() == [
        ("consensus/forexfactory", "cpi", 2.5, False),
        ("consensus/investing", "nonfarm_payrolls", 60.0, False),  # ppi has no consensus: no row
        ("fed/cleveland-cpi", "cpi", 2.6, False),
        ("fed/cleveland-cpi", "cpi", 2.55, False),
        ("fed/cleveland-cpi", "cpi", 2.4, True),  # issued at/after the 08:30 release
        ("fed/gdpnow", "real_gdp_advance", 1.9, False),  # no window yet: nothing to be after
    ]
    cons_row = out.row(0, named=True)
    assert (
        cons_row["issued_at"] == CPI_FEB - timedelta(minutes=1)
        and cons_row["partition_key"] == "consensus/forexfactory"
    )


def test_consensus_forecaster_answers_only_the_tasks_it_is_given():
    rel = _releases()
    windows = nowcast_windows(rel.select("indicator_id", "reference_period", "release_at"))
    only_cpi = windows.filter(pl.col("indicator_id") == "cpi")
    assert ConsensusForecaster(rel, "forexfactory").forecast(only_cpi)["indicator_id"].to_list() == ["cpi"]
    assert ConsensusForecaster(rel, "investing").forecast(only_cpi).height == 0
    assert PublishedNowcasts("fed/nyfed-staff", _published()).forecast(windows).height == 0


@pytest.fixture(scope="module")
def first_release_table(snapshot_dir) -> pl.DataFrame:
    return first_releases(ReleaseCalendarSnapshot(snapshot_dir).calendar())


def test_auto_arima_forecaster_is_the_batch_entry_on_the_windows(
    snapshot_dir, first_release_table, vintage_store
):
    # ISM manufacturing (AR(1) on the log level, first-release history) for two release months
    rel = first_release_table.filter(pl.col("indicator_id") == "ism_manufacturing")
    windows = nowcast_windows(rel.filter(pl.col("release_at").dt.year() == 2024).head(2))
    model = AutoArima(vintage_store, first_release_table, workers=1)
    assert isinstance(model, Forecaster) and model.model_id == MODEL_ID
    got = model.forecast(windows)
    direct = arima_nowcasts_for_windows(windows, vintages=vintage_store, releases=first_release_table)
    assert got.equals(direct) and got.height == 2 and got["valid"].all()
    assert got["partition_key"].to_list() == windows["partition_key"].to_list()  # release months, in order
    assert got["issued_at"].to_list() == windows["opens_at"].to_list()
    # without the releases table the first-release indicators get a row saying why, not an exception
    none = AutoArima(vintage_store, None).forecast(windows)
    assert not none["valid"].any() and none["invalid_reason"].str.contains("pass releases=").all()
