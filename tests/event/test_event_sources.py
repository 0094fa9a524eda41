"""Event-track sources on the real snapshot files: every file variant parses to the right values, times land
in UTC with the stated available_at rules, malformed files fail naming file / row / field, and the live
transports parse their services' wire formats (Open-Meteo, Gamma + CLOB over a loopback server)."""

from __future__ import annotations

import gzip
import io
import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

import leaf_live.event  # noqa: F401  (registers the event tables)
from leaf_live.core.sources import SourceError, clear_cache
from leaf_live.event import catalog
from leaf_live.event.sources import electricity as el
from leaf_live.event.sources import markets as mk
from leaf_live.event.sources import prediction_markets as pm
from leaf_live.event.sources import weather as wx


def _text(p: Path) -> str:
    return gzip.decompress(p.read_bytes()).decode("utf-8-sig")


def _bars(snapshot_dir: Path, folder: str, symbol: str) -> pl.DataFrame:
    p = snapshot_dir / "leaf" / folder / f"{symbol}.csv.gz"
    return mk.parse_daily_csv(_text(p), symbol=symbol, file=str(p), source=folder)


def _on(f: pl.DataFrame, d: date) -> dict:
    return f.filter(pl.col("session_date") == d).to_dicts()[0]


# ------------------------------------------------------------------------------------------------ markets


def test_daily_csv_variants_parse_to_the_file_values(snapshot_dir):
    # classic Yahoo CSV with Adj Close: close = Adj Close, open scaled by Adj Close / Close
    r = _on(_bars(snapshot_dir, "stocks/yfinance_2000_2024-03", "AAPL"), date(2000, 1, 3))
    assert r["close"] == pytest.approx(0.846127) and r["raw_close"] == pytest.approx(0.846127)
    assert r["open"] == pytest.approx(0.936384 * 0.846127 / 0.999442)
    # UTC timestamps 04:00+00:00 mean the US session date
    hood = _bars(snapshot_dir, "stocks/yfinance_midcaps_to_2025-04", "HOOD")
    assert hood["session_date"][0] == date(2021, 7, 29) and hood["close"][0] == pytest.approx(34.74)
    # auto-adjusted, no Adj Close, Close-first column order
    r = _on(_bars(snapshot_dir, "stocks/yfinance_nasdaq100plus_to_2026-05", "AAPL"), date(2025, 8, 14))
    assert r["close"] == pytest.approx(232.33717346191406) and r["open"] == pytest.approx(233.61473725595164)
    # 3-row MultiIndex header (Price / Ticker / Date)
    cl = _bars(snapshot_dir, "commodities/blank-app_2025-09_2026-03", "CL=F")
    assert cl["session_date"][0] == date(2025, 9, 8) and cl["close"][0] == pytest.approx(62.2599983215332)
    # 2-row header whose second row is the ticker row
    zw = _bars(snapshot_dir, "commodities/storage_data_fy_2000_2026-02", "ZW=F")
    assert zw["session_date"][0] == date(2000, 7, 17) and zw["close"][0] == pytest.approx(244.0)
    # lower-case 'timestamp' header, 'Vol' column, tz-aware local timestamps with Dividends/Stock Splits
    assert _bars(snapshot_dir, "commodities/backtesting-quant-engine", "CL=F")["close"][0] == pytest.approx(
        32.04999923706055
    )
    zs = _bars(snapshot_dir, "commodities/bayes_excersice_2000_2026-01", "ZS=F")
    assert zs["close"][0] == pytest.approx(493.75) and zs["volume"][0] == 445
    sm = _bars(snapshot_dir, "commodities/stockmaster", "CL=F")
    assert sm["session_date"][0] == date(2018, 1, 2) and sm["close"][0] == pytest.approx(60.369998931884766)
    # an unfinished session (volume only) is skipped, not an error
    u = _bars(snapshot_dir, "stocks/yfinance_watchlist63_2024-12_2026-08", "HOOD")
    assert u["close"].null_count() == 0


def test_precedence_splices_older_folders_on_the_newest_basis(snapshot_dir):
    s = mk.SnapshotDailyPrices(snapshot_dir)
    assert [f for f, _ in s.files_for("AAPL")][:2] == [
        "stocks/yfinance_us_2025-08_2026-08",
        "stocks/yfinance_nasdaq100plus_to_2026-05",
    ]
    bars = s.daily_bars(["AAPL"], date(2025, 8, 1), date(2025, 8, 29))
    new = _on(_bars(snapshot_dir, "stocks/yfinance_us_2025-08_2026-08", "AAPL"), date(2025, 8, 15))["close"]
    old = _bars(snapshot_dir, "stocks/yfinance_nasdaq100plus_to_2026-05", "AAPL")
    factor = new / _on(old, date(2025, 8, 15))["close"]
    got = _on(bars, date(2025, 8, 14))
    assert got["source"] == "yfinance_nasdaq100plus_to_2026-05"
    assert got["close"] == pytest.approx(_on(old, date(2025, 8, 14))["close"] * factor)
    assert got["raw_close"] == pytest.approx(232.33717346191406)  # the file's own value is kept
    assert _on(bars, date(2025, 8, 15))["source"] == "yfinance_us_2025-08_2026-08"
    # every large cap has the paper span; coffee (KC=F) has no recorded closes after 2022
    every = s.daily_bars([t.symbol for t in catalog.LARGE_CAPS], date(2025, 9, 1), date(2026, 2, 27))
    assert every["symbol"].n_unique() == 30
    assert s.daily_bars(["KC=F"], date(2025, 1, 1), date(2026, 12, 31)).height == 0


def test_daily_close_available_at_is_the_new_york_close():
    f = mk.to_market_prices(
        pl.DataFrame(
            {
                "symbol": ["AAPL", "AAPL", "CL=F"],
                "session_date": [date(2025, 10, 1), date(2026, 1, 5), date(2025, 10, 1)],
                "open": [1.0] * 3,
                "high": [1.0] * 3,
                "low": [1.0] * 3,
                "close": [1.0] * 3,
                "raw_close": [1.0] * 3,
                "volume": [1.0] * 3,
                "source": ["x"] * 3,
                "source_file": ["x"] * 3,
                "source_row": [1, 2, 3],
            },
            schema_overrides={"source_row": pl.Int32},
        )
    )
    assert f["available_at"].to_list() == [
        datetime(2025, 10, 1, 20, tzinfo=UTC),
        datetime(2026, 1, 5, 21, tzinfo=UTC),
        datetime(2025, 10, 1, 21, tzinfo=UTC),
    ]
    assert f["partition_key"].to_list() == ["2025-10-01", "2026-01-05", "2025-10-01"]


def test_malformed_daily_csv_names_file_row_and_field(snapshot_dir, tmp_path):
    lines = _text(snapshot_dir / "leaf/stocks/yfinance_2000_2024-03/AAPL.csv.gz").splitlines()
    cells = lines[3].split(",")
    cells[4] = "12..5"  # Close of data row 3
    lines[3] = ",".join(cells)
    bad = tmp_path / "stocks" / "AAPL.csv"
    bad.parent.mkdir()
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(SourceError) as e:
        mk.parse_daily_csv(bad.read_text(), symbol="AAPL", file=str(bad), source="t")
    assert (
        e.value.file == str(bad)
        and e.value.row == 3
        and e.value.field == "Close"
        and e.value.value == "12..5"
    )
    assert "row 3" in str(e.value) and "Close='12..5'" in str(e.value)
    with pytest.raises(SourceError, match=r"row 2 .*field Date='2000-13-04'"):
        mk.parse_daily_csv(
            "\n".join([lines[0], lines[1], lines[2].replace("2000-01-04", "2000-13-04")]),
            symbol="AAPL",
            file="x.csv",
            source="t",
        )
    with pytest.raises(SourceError, match=r"row 2 .*session date repeats"):
        mk.parse_daily_csv("\n".join([lines[0], lines[1], lines[1]]), symbol="AAPL", file="x.csv", source="t")
    # a snapshot folder with the bad file fails the whole read; nothing partial comes back
    root = tmp_path / "snap"
    (root / "leaf/stocks/only").mkdir(parents=True)
    (root / "leaf/stocks/only/AAPL.csv").write_text("\n".join(lines) + "\n")
    clear_cache()
    with pytest.raises(SourceError, match=r"leaf/stocks/only/AAPL.csv, row 3"):
        mk.SnapshotDailyPrices(root, stock_folders=("stocks/only",)).daily_bars(
            ["AAPL"], date(2000, 1, 1), date(2001, 1, 1)
        )


def test_yfinance_frame_conversion_matches_the_snapshot_export(snapshot_dir):
    # the 3-row header file IS DataFrame.to_csv of a yf.download frame; reading it back gives that frame
    p = snapshot_dir / "leaf/commodities/blank-app_2025-09_2026-03/CL=F.csv.gz"
    pdf = pd.read_csv(io.StringIO(_text(p)), header=[0, 1], index_col=0, skiprows=[2])
    pdf.index = pd.to_datetime(pdf.index)
    got = mk.frame_from_yfinance(pdf, source_file="yfinance.download")
    want = mk.parse_daily_csv(_text(p), symbol="CL=F", file=str(p), source="x")
    assert got["symbol"].unique().to_list() == ["CL=F"]
    assert got["session_date"].to_list() == want["session_date"].to_list()
    for c in ("open", "high", "low", "close", "volume"):  # pandas' float parser may differ in the last ulp
        np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=1e-12)


# ------------------------------------------------------------------------------------------------ weather


def test_nyc_archive_degf_local_time_to_degc_utc(snapshot_dir):
    p = snapshot_dir / "leaf/weather" / wx.NYC_ARCHIVE
    f = wx.parse_nyc_archive(_text(p), file="nyc")
    first = f.row(0, named=True)
    assert first["ts"] == datetime(2023, 10, 8, 4, tzinfo=UTC)  # 00:00 EDT
    assert first["temperature_c"] == pytest.approx((52.1 - 32) * 5 / 9)
    assert first["wind_speed_kmh"] == pytest.approx(9.6 * 1.609344)
    at = {r["ts"]: r["temperature_c"] for r in f.iter_rows(named=True)}
    assert at[datetime(2023, 11, 5, 5, tzinfo=UTC)] == pytest.approx(
        (50.3 - 32) * 5 / 9
    )  # fall-back day: EST all day
    # spring-forward day: 00:00 placed at 04:00 UTC (EDT), colliding with the previous day's 23:00 EST: later
    # day wins
    assert at[datetime(2024, 3, 10, 4, tzinfo=UTC)] == pytest.approx((46.6 - 32) * 5 / 9)
    assert (
        f["ts"].is_duplicated().sum() == 0 and f.height == 25056 - 3
    )  # one collision per spring-forward day
    rows = wx.to_weather_hourly(f.head(2))
    assert rows["available_at"].to_list() == [t + timedelta(hours=1) for t in rows["ts"].to_list()]


def test_greendcc_new_york_is_utc_minus_4_all_year(snapshot_dir):
    d = snapshot_dir / "leaf/weather"
    a = wx.parse_nyc_archive(_text(d / wx.NYC_ARCHIVE), file="a").select(
        "ts", pl.col("temperature_c").alias("a")
    )
    g = wx.parse_greendcc(
        _text(d / wx.GREENDCC_DIR / "NewYork_US-NY-NYIS_hourly.csv.gz"),
        file="g",
        city="new_york",
        offset_hours=-4,
    )
    assert g["ts"][0] == datetime(2020, 1, 1, 4, tzinfo=UTC)
    for months in ((12, 1, 2), (6, 7, 8)):
        mae = {}
        for lag in (-1, 0, 1):
            j = a.join(
                g.select(
                    (pl.col("ts") + pl.duration(hours=lag)).alias("ts"), pl.col("temperature_c").alias("g")
                ),
                on="ts",
            ).filter(pl.col("ts").dt.month().is_in(months))
            mae[lag] = float((j["a"] - j["g"]).abs().mean())
        assert mae[0] < mae[-1] and mae[0] < mae[1], (months, mae)


def test_malformed_weather_file_names_row_and_field():
    text = (
        "time,temperature_2m,relativehumidity_2m,windspeed_10m\n"
        "2024-01-01T00:00,30.0,50,5\n2024-01-01T01:00,x,50,5\n"
    )
    with pytest.raises(SourceError) as e:
        wx.parse_nyc_archive(text, file="w.csv")
    assert (e.value.file, e.value.row, e.value.field, e.value.value) == ("w.csv", 2, "temperature_2m", "x")
    with pytest.raises(SourceError, match=r"row 1 .*field temperature_2m=None: value is required but empty"):
        wx.parse_nyc_archive(text.replace("30.0", ""), file="w.csv")
    with pytest.raises(SourceError, match=r"field header=.*missing column\(s\) \['windspeed_10m'\]"):
        wx.parse_nyc_archive("time,temperature_2m,relativehumidity_2m\n", file="w.csv")


def test_open_meteo_live_transport_over_loopback(http_server):
    body = {
        "latitude": 40.71,
        "longitude": -74.0,
        "utc_offset_seconds": 0,
        "timezone": "GMT",
        "hourly_units": {"time": "iso8601", "temperature_2m": "°C"},
        "hourly": {
            "time": ["2026-01-05T00:00", "2026-01-05T01:00", "2026-01-05T02:00"],
            "temperature_2m": [-1.5, -2.0, None],
            "relative_humidity_2m": [70, 71, 72],
            "wind_speed_10m": [10.1, 9.8, 9.0],
        },
    }
    http_server.routes["/v1/archive"] = lambda q: (200, "application/json", json.dumps(body))
    live = wx.LiveWeather(http_server.url, use_meteostat=False)
    got = live.hourly([catalog.get_target("weather", "new_york")], date(2026, 1, 5), date(2026, 1, 5))
    assert got["temperature_c"].to_list() == [-1.5, -2.0]  # the null hour is dropped
    assert got["ts"][1] == datetime(2026, 1, 5, 1, tzinfo=UTC) and got["available_at"][1] == datetime(
        2026, 1, 5, 2, tzinfo=UTC
    )
    path, q = http_server.requests[0]
    assert q["latitude"] == ["40.7128"] and q["timezone"] == ["GMT"] and q["start_date"] == ["2026-01-05"]
    http_server.routes["/v1/archive"] = lambda q: (
        400,
        "application/json",
        '{"error": true, "reason": "bad"}',
    )
    with pytest.raises(SourceError, match="HTTP 400"):
        live.hourly([catalog.get_target("weather", "new_york")], date(2026, 1, 5), date(2026, 1, 5))


def test_meteostat_frame_conversion():
    idx = pd.DatetimeIndex(["2026-01-05 00:00", "2026-01-05 01:00"], name="time")
    pdf = pd.DataFrame({"temp": [-1.0, np.nan], "rhum": [70.0, 71.0], "wspd": [10.0, 9.0]}, index=idx)
    f = wx.frame_from_meteostat(pdf, city="boston")
    assert f["temperature_c"].to_list() == [-1.0] and f["ts"][0] == datetime(2026, 1, 5, tzinfo=UTC)


# ------------------------------------------------------------------------------------------------ electricity


def test_eia930_hour_ending_utc_and_missing_raw(snapshot_dir):
    s = el.SnapshotLoad(snapshot_dir)
    ny = s.read_area(catalog.get_target("electricity", "new_york_city"))
    r = ny.row(0, named=True)
    assert r["interval_end"] == datetime(2018, 10, 1, tzinfo=UTC) and r["interval_start"] == datetime(
        2018, 9, 30, 23, tzinfo=UTC
    )
    assert r["load_mw"] == 5712 and r["quality"] == "OKAY"
    sf = s.read_area(catalog.get_target("electricity", "san_francisco"))
    row = sf.filter(pl.col("interval_end") == datetime(2018, 11, 8, 20, tzinfo=UTC)).row(0, named=True)
    assert row["raw_load_mw"] is None and row["load_mw"] == 10467 and row["quality"] == "MISSING"
    rows = s.hourly_load(catalog.ELECTRICITY_AREAS, date(2018, 12, 1), date(2018, 12, 1))
    assert rows.height == 72 and (rows["available_at"] == rows["interval_end"]).all()


def test_malformed_eia930_names_row_and_field():
    head = "date_time,raw demand (MW),category,cleaned demand (MW),forecast demand (MW)\n"
    with pytest.raises(SourceError) as e:
        el.parse_eia930(
            head + "2019-01-01 01:00:00,5,OKAY,5,5\n2019-01-01 02:00:00,5,OKAY,-3,5\n", area="a", file="e.csv"
        )
    assert (e.value.row, e.value.field, e.value.value) == (2, "cleaned demand (MW)", "-3")
    with pytest.raises(SourceError, match=r"row 1 .*field date_time='2019-01-01T01'"):
        el.parse_eia930(head + "2019-01-01T01,5,OKAY,5,5\n", area="a", file="e.csv")


def test_five_minute_readings_average_to_hourly_means():
    t0 = datetime(2026, 1, 5, 14, tzinfo=UTC)
    ts = [t0 + timedelta(minutes=5 * i) for i in range(24)] + [t0 + timedelta(hours=2)]
    vals = [100.0 + i for i in range(24)] + [7.0]
    pdf = pd.DataFrame(
        {"Interval Start": pd.DatetimeIndex(ts).tz_convert("America/New_York"), "N.Y.C.": vals}
    )
    got = el.hourly_means(
        el.readings_from_gridstatus(pdf, zone_column="N.Y.C.", file="g"),
        area="new_york_city",
        source_file="g",
    )
    assert got["load_mw"].to_list() == [np.mean(vals[:12]), np.mean(vals[12:24]), 7.0]
    assert got["quality"].to_list() == ["n=12", "n=12", "n=1"]
    assert got["interval_end"][0] == t0 + timedelta(hours=1)
    with pytest.raises(SourceError, match="lacks 'Interval Start' or 'PGE'"):
        el.readings_from_gridstatus(pdf, zone_column="PGE", file="g")


# ------------------------------------------------------------------------------------------------ prediction
# markets


@pytest.fixture(scope="module")
def markets(snapshot_dir) -> pm.MarketData:
    return pm.SnapshotPredictionMarkets(snapshot_dir).load()


def test_forecastbench_question_in_several_sets_has_several_prices(markets):
    freeze = markets.path.filter(pl.col("kind") == "freeze")
    counts = freeze.group_by("question_id").len()
    assert counts["len"].max() >= 8  # one question sits in 10 biweekly sets (two fall on the same freeze day)
    qid = counts.sort("len", descending=True)["question_id"][0]
    p = freeze.filter(pl.col("question_id") == qid).sort("observed_at")
    assert (p["available_at"] > p["observed_at"]).all()  # published at the due date, after the freeze
    assert (p["available_at"].dt.hour() == 0).all()
    res = markets.path.filter(pl.col("kind") == "resolution")
    assert res["price"].is_in([0.0, 1.0]).all()
    q = markets.questions.filter(pl.col("source") == "forecastbench")
    assert q.height == 1177 and q.filter(pl.col("resolve_at").is_not_null()).height == 746


def test_fomc_token_map_trades_and_resolution(markets):
    q = markets.questions.filter(pl.col("question_id") == "fed-interest-rates-march-2024/noChange").row(
        0, named=True
    )
    assert q["category"] == "economy_business"
    assert q["resolve_at"] == datetime(2024, 3, 20, 18, tzinfo=UTC)  # 14:00 EDT on the meeting day
    assert q["open_at"] == datetime.fromtimestamp(1706744995, tz=UTC)  # first recorded trade of the event
    up = markets.path.filter(
        pl.col("question_id") == "fed-interest-rates-march-2024/up25", pl.col("kind") == "trade"
    )
    first = up.sort("observed_at").row(0, named=True)
    assert first["observed_at"] == datetime.fromtimestamp(1706744995, tz=UTC)
    assert first["price"] == pytest.approx(
        0.03
    )  # YES at 0.03 and NO at 0.97 in the same second both say 0.03
    outcome = markets.path.filter(
        pl.col("question_id") == "fed-interest-rates-march-2024/noChange", pl.col("kind") == "resolution"
    )
    assert outcome["price"].to_list() == [1.0]
    # July 2025 was still trading when recorded (outcomeYes 0.81): no resolution, no resolve time
    jul = markets.questions.filter(pl.col("question_id") == "fed-decision-in-july/noChange").row(
        0, named=True
    )
    assert jul["resolve_at"] is None


def test_categories_follow_the_c25_rules():
    assert (
        pm.categorize("Will the Fed decrease interest rates by 25 bps after its March 2024 meeting?")
        == "economy_business"
    )
    assert pm.categorize("Will Anthropic have the best AI model at the end of June 2026?") == "tech_ai"
    assert pm.categorize("Will Putin visit China by May 31?") == "politics_world"
    assert pm.categorize("Will the Boston Celtics win the NBA Eastern Conference Finals?") == "other"
    assert pm.categorize("Will Solana reach $140 in March?") == "other"


def test_malformed_question_set_names_question_and_field():
    doc = {
        "forecast_due_date": "2025-10-26",
        "questions": [
            {"id": "a", "source": "manifold", "question": "x"},
            {
                "id": "0x1",
                "source": "polymarket",
                "question": "q",
                "freeze_datetime": "2025-10-16T00:00:00+00:00",
                "freeze_datetime_value": "1.7",
            },
        ],
    }
    with pytest.raises(SourceError) as e:
        pm.parse_question_set(doc, file="set.json")
    assert (e.value.file, e.value.row, e.value.field, e.value.value) == (
        "set.json",
        2,
        "freeze_datetime_value",
        "1.7",
    )
    doc["questions"][1]["freeze_datetime_value"] = "0.4"
    doc["questions"][1]["market_info_open_datetime"] = "May 1"
    with pytest.raises(SourceError, match=r"row 2 .*field market_info_open_datetime='May 1'"):
        pm.parse_question_set(doc, file="set.json")


def test_gamma_and_clob_live_transport_over_loopback(snapshot_dir, http_server):
    raw = json.loads(
        gzip.decompress(
            (
                snapshot_dir / "leaf/polymarket/wom-polymarket-strategy/gamma_markets_raw_600.json.gz"
            ).read_bytes()
        )
    )
    m = next(x for x in raw if x.get("slug") == "btc-multistrike-4h-1758873600-110k")
    cache = (
        snapshot_dir
        / "macro/polymarket/plsite_nfp/polymarket_cache/008f4d0e70570e986ffd0b591926eb19a6c1468e.json"
    )
    history = cache.read_text()
    http_server.routes["/markets"] = lambda q: (200, "application/json", json.dumps([m]))
    http_server.routes["/prices-history"] = lambda q: (200, "application/json", history)
    got = pm.LivePolymarket([m["slug"]], gamma_url=http_server.url, clob_url=http_server.url).load()
    q = got.questions.row(0, named=True)
    assert q["question_id"] == m["conditionId"] and q["resolve_at"] == datetime(
        2025, 9, 26, 10, 9, 27, tzinfo=UTC
    )
    trades = got.path.filter(pl.col("kind") == "trade")
    assert trades.height == len(json.loads(history)["history"])
    assert trades["price"][0] == pytest.approx(0.335)
    assert got.path.filter(pl.col("kind") == "resolution")["price"].to_list() == [
        0.0
    ]  # outcomePrices ["0", "1"]
    reqs = dict(http_server.requests)
    assert reqs["/markets"]["slug"] == [m["slug"]]
    assert reqs["/prices-history"]["market"] == [json.loads(m["clobTokenIds"])[0]]
