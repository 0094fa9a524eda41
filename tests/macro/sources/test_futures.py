"""Announcement-window ES prices: the panel's closes, the coverage file, and the live provider path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from leaf_live.core.sources import SourceError
from leaf_live.macro.sources.futures import (
    COVERAGE_FILE,
    PANEL_VALID_FILE,
    FuturesLive,
    FuturesSnapshot,
    IntradayBarProvider,
    minute_closes,
)


@pytest.fixture(scope="module")
def prices(snapshot_dir):
    return FuturesSnapshot(snapshot_dir).window_prices()


def test_panel_windows(prices, snapshot_dir):
    panel = prices.filter(pl.col("source") == "livemacroeval_panel")
    valid = pl.read_csv(snapshot_dir / PANEL_VALID_FILE, infer_schema=False)
    assert panel.height == valid["release_datetime_et"].n_unique() == 2163
    first = panel.row(0, named=True)
    # field_releases_valid.csv row 1: ism_manufacturing 2010-01-04 10:00 ET, H10, 1123.5 -> 1127.0
    assert first["release_at"] == datetime(2010, 1, 4, 15, 0, tzinfo=UTC)
    assert (first["contract_code"], first["price_before"], first["price_after"]) == ("H10", 1123.5, 1127.0)
    assert (first["partition_key"], first["available_at"]) == (
        "2010-01",
        first["release_at"] + timedelta(minutes=30),
    )
    assert prices["release_at"].is_unique().all()


def test_coverage_adds_the_live_window_and_agrees_with_panel(prices, snapshot_dir):
    cov = prices.filter(pl.col("source") == "livemacroeval_coverage")
    live = cov.filter(pl.col("release_at") > datetime(2025, 11, 1, tzinfo=UTC))
    assert live.height == 72 and set(live["contract_code"]) == {"Z25", "H26", "M26"}
    # before the live window it only adds the two 2015 08:30 windows the panel has no scored release at
    assert cov.height - live.height == 2
    catch_up = cov.filter(pl.col("release_at") == datetime(2025, 12, 16, 13, 29, tzinfo=UTC)).row(
        0, named=True
    )
    assert (catch_up["price_before"], catch_up["price_after"]) == (6875.75, 6867.75)
    # independent copy: wherever both files price a window they agree
    both = FuturesSnapshot(snapshot_dir, include_coverage=False).window_prices()
    coverage_only = pl.read_csv(snapshot_dir / COVERAGE_FILE, infer_schema=False).filter(
        pl.col("valid") == "True"
    )
    cov_all = coverage_only.select(
        pl.col("release_datetime_et")
        .str.to_datetime("%Y-%m-%d %H:%M:%S")
        .dt.replace_time_zone("America/New_York")
        .dt.convert_time_zone("UTC")
        .cast(pl.Datetime("us", "UTC"))
        .alias("release_at"),
        pl.col("start_bar_close").cast(pl.Float64),
        pl.col("end_bar_close").cast(pl.Float64),
    )
    j = both.join(cov_all, on="release_at")
    assert j.height > 1400
    assert (j["price_before"] == j["start_bar_close"]).all() and (
        j["price_after"] == j["end_bar_close"]
    ).all()


def test_snapshot_filter_by_release_times(snapshot_dir):
    t = datetime(2010, 1, 8, 13, 30, tzinfo=UTC)
    got = FuturesSnapshot(snapshot_dir).window_prices([t, t + timedelta(days=1)])
    assert got.select("release_at", "price_before", "price_after").rows() == [(t, 1137.75, 1135.0)]


def test_conflicting_windows_in_one_minute(tmp_path, snapshot_dir):
    dst = tmp_path / PANEL_VALID_FILE
    dst.parent.mkdir(parents=True)
    lines = (snapshot_dir / PANEL_VALID_FILE).read_text().splitlines(keepends=True)[:6]
    # rows 3 and 4 (payrolls and unemployment, 2010-01-08 08:30) share one window; break the second
    assert lines[4].startswith("unemployment_rate,2010-01-08 08:30:00")
    lines[4] = lines[4].replace(",1137.75,1135.0", ",1137.5,1135.0")
    dst.write_text("".join(lines))
    with pytest.raises(
        SourceError, match=r"field_releases_valid.csv, row 4 \(line 5\), field start_bar_close="
    ):
        FuturesSnapshot(tmp_path, include_coverage=False).window_prices()


class MinuteBars:
    """An intraday provider over an in-memory table of 1-minute closes (keyed by bar open time, UTC)."""

    name = "memory"

    def __init__(self, closes: dict[datetime, float]) -> None:
        self.closes = closes
        self.asked: list[datetime] = []

    def close_at(self, symbol: str, ts: datetime) -> float | None:
        self.asked.append(ts)
        return self.closes.get(ts.astimezone(UTC))


def test_live_provider_windows():
    t1 = datetime(2026, 6, 5, 12, 30, tzinfo=UTC)  # 08:30 EDT payrolls
    t2 = datetime(2026, 6, 1, 14, 0, tzinfo=UTC)  # 10:00 EDT ISM: T-5 bar missing, T-6 used
    t3 = datetime(2026, 6, 3, 14, 0, tzinfo=UTC)  # no bars at all
    bars = MinuteBars(
        {
            t1 - timedelta(minutes=5): 7300.25,
            t1 + timedelta(minutes=30): 7321.0,
            t2 - timedelta(minutes=6): 7290.0,
            t2 + timedelta(minutes=30): 7288.5,
        }
    )
    assert isinstance(bars, IntradayBarProvider)
    got = FuturesLive(bars).window_prices(pl.Series([t1, t2, t3, t1]))
    assert got.select("release_at", "price_before", "price_after", "source", "contract_code").rows() == [
        (t2, 7290.0, 7288.5, "memory", None),
        (t1, 7300.25, 7321.0, "memory", None),
    ]
    assert got["partition_key"].to_list() == ["2026-06", "2026-06"]
    assert (got["available_at"] == got["release_at"] + timedelta(minutes=30)).all()
    assert t3 - timedelta(minutes=6) in bars.asked  # the one-minute fallback was tried, then given up
    with pytest.raises(ValueError, match="release_times"):
        FuturesLive(bars).window_prices()


def test_live_provider_bad_close():
    t = datetime(2026, 6, 5, 12, 30, tzinfo=UTC)
    bars = MinuteBars({t - timedelta(minutes=5): 0.0, t + timedelta(minutes=30): 7321.0})
    with pytest.raises(SourceError, match="memory:ES=F.*non-positive"):
        FuturesLive(bars).window_prices([t])


def test_yfinance_history_becomes_minute_closes_in_utc():
    import pandas as pd

    # a yfinance 1-minute history of ES=F: bar open times in America/New_York, one NaN close (no trade)
    idx = pd.DatetimeIndex(
        ["2026-03-06 08:24", "2026-03-06 08:25", "2026-03-06 08:26", "2026-03-06 09:00"],
        tz="America/New_York",
    )
    hist = pd.DataFrame({"Open": [1.0] * 4, "Close": [6801.25, float("nan"), 6799.5, 6790.0]}, index=idx)
    got = minute_closes(hist)
    # 08:24 EST = 13:24 UTC; the NaN bar is absent, so close_at falls back a minute (the panel's convention)
    assert got == {
        datetime(2026, 3, 6, 13, 24, tzinfo=UTC): 6801.25,
        datetime(2026, 3, 6, 13, 26, tzinfo=UTC): 6799.5,
        datetime(2026, 3, 6, 14, 0, tzinfo=UTC): 6790.0,
    }
    # a naive index is read as New York time (summer: UTC-4)
    naive = pd.DataFrame({"Close": [7000.5]}, index=pd.DatetimeIndex(["2026-06-05 08:25"]))
    assert minute_closes(naive) == {datetime(2026, 6, 5, 12, 25, tzinfo=UTC): 7000.5}
    assert minute_closes(None) == {} and minute_closes(hist.iloc[:0]) == {}
