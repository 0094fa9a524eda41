"""Polymarket bucket prices: LiveMacroEval hourly grids and recorded Gamma/CLOB responses (snapshot), and
the live client against a loopback server answering with the recorded bodies."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
from livemacro_helpers import serve

from leaf_live.core.settings import get_settings
from leaf_live.core.sources import SourceError
from leaf_live.core.storage import conform, open_db, read_table, replace_partition
from leaf_live.macro.sources.polymarket import (
    CLOB_URL,
    PLSITE_CACHE_DIR,
    MarketSpec,
    PolymarketLive,
    PolymarketSnapshot,
    cache_key,
    event_buckets,
    read_cached_responses,
    read_price_grid,
)

JUNE = "how-many-jobs-added-in-june"  # June-2024 NFP event (released 2024-07-05, actual 206k)
WINDOW = (1720094400, 1720110600)  # recorded request window: 2024-07-04 12:00Z .. 16:30Z, fidelity 1
JUNE_MARKET = MarketSpec(JUNE, "nonfarm_payrolls", date(2024, 6, 1), *WINDOW, fidelity=1)


def cache_dir() -> Path:
    return get_settings().require_snapshot() / PLSITE_CACHE_DIR


@pytest.fixture(scope="module")
def grids() -> pl.DataFrame:
    # the snapshot client with no market configured serves the recorded hourly grids
    return PolymarketSnapshot(get_settings().require_snapshot()).market_prices()


def test_grid_sizes_and_verbatim_labels(grids):
    conform("prediction_market_prices", grids)
    # rows x buckets, no empty cells in these files
    assert dict(grids.group_by("market_id").len().iter_rows()) == {
        "cpi-mar": 1334 * 9,
        "gdp-q1-2026": 3025 * 7,
        "jobs-mar": 547 * 7,
        "unemp-mar": 1166 * 9,
    }
    labels = {
        m: g.get_column("bucket_label").unique(maintain_order=True).to_list()
        for (m,), g in grids.group_by("market_id", maintain_order=True)
    }
    assert labels["cpi-mar"] == ["≤2.0%", "2.1%", "2.2%", "2.3%", "2.4%", "2.5%", "2.6%", "2.7%", "≥2.8%"]
    assert labels["gdp-q1-2026"] == [
        "<1.0%",
        "1.0–1.5%",
        "1.5–2.0%",
        "2.0–2.5%",
        "2.5–3.0%",
        "3.0–3.5%",
        "≥3.5%",
    ]
    assert labels["jobs-mar"][:2] == ["<-150k", "-150k – -100k"] and labels["jobs-mar"][-1] == "100k+"
    meta = grids.group_by("market_id").agg(pl.col("indicator_id").first(), pl.col("reference_period").first())
    assert {r[0]: (r[1], r[2]) for r in meta.iter_rows()} == {
        "cpi-mar": ("cpi", date(2026, 3, 1)),
        "gdp-q1-2026": ("real_gdp_advance", date(2026, 1, 1)),
        "jobs-mar": ("nonfarm_payrolls", date(2026, 3, 1)),
        "unemp-mar": ("unemployment_rate", date(2026, 3, 1)),
    }
    assert (grids.get_column("available_at") == grids.get_column("ts")).all()


def test_grid_values(grids):
    def price(market, bucket, ts):
        return (
            grids.filter(pl.col("market_id") == market, pl.col("bucket_label") == bucket, pl.col("ts") == ts)
            .get_column("price")
            .to_list()
        )

    # first row of cpi-mar: "02-13-2026 23:00,1771023600,0.41,0.41,0.41,0.41,0.425,..."
    assert price("cpi-mar", "2.4%", datetime(2026, 2, 13, 23, tzinfo=UTC)) == [0.425]
    # last row: resolved to >=2.8% (March CPI printed 3.3%)
    assert price("cpi-mar", "≥2.8%", datetime(2026, 4, 10, 16, tzinfo=UTC)) == [0.9995]
    assert price("unemp-mar", "4.3%", datetime(2026, 4, 3, 16, tzinfo=UTC)) == [0.26]


def test_appendix_o_nyfed_gdp_segment(grids):
    # App. O: 2026-02-27 05:00 .. 2026-03-03 18:00, 110 hourly bets on "2.0-2.5%" at $0.07..$0.125, mean
    # $0.1103
    seg = grids.filter(
        pl.col("market_id") == "gdp-q1-2026",
        pl.col("bucket_label") == "2.0–2.5%",
        pl.col("ts").is_between(datetime(2026, 2, 27, 5, tzinfo=UTC), datetime(2026, 3, 3, 18, tzinfo=UTC)),
    ).get_column("price")
    assert seg.len() == 110
    assert (seg.min(), seg.max()) == (0.07, 0.125)
    assert seg.mean() == pytest.approx(0.1103, abs=5e-5)


def test_grid_errors_name_row_and_field(tmp_path):
    head = "Date (UTC),Timestamp (UTC),≤2.0%,≥2.1%\n"
    cases = [
        (
            "02-13-2026 23:00,1771023600,0.4,0.6\n02-14-2026 00:00,1771023600,0.4,0.6\n",
            r"row 2 \(line 3\), field Timestamp \(UTC\)='1771023600'.*Date \(UTC\) says 02-14-2026 00:00",
        ),
        ("02-13-2026 23:00,1771023600,0.4,1.2\n", r"row 1 \(line 2\), field ≥2.1%='1.2'.*outside \[0, 1\]"),
        ("2026-02-13 23:00,1771023600,0.4,0.6\n", r"field Date \(UTC\)='2026-02-13 23:00'"),
        (
            "02-14-2026 00:00,1771027200,0.4,0.6\n02-13-2026 23:00,1771023600,0.4,0.6\n",
            "not after the previous",
        ),
    ]
    for body, pattern in cases:
        p = tmp_path / "x-polymarket-price-data.csv"
        p.write_text(head + body, encoding="utf-8")
        with pytest.raises(SourceError, match=pattern):
            read_price_grid(p, indicator_id="cpi", reference_period=date(2026, 3, 1))
    p.write_text("Date,Timestamp (UTC),a\n", encoding="utf-8")
    with pytest.raises(SourceError, match="Date \\(UTC\\)"):
        read_price_grid(p, indicator_id="cpi", reference_period=date(2026, 3, 1))


def test_recorded_cache_parses_whole():
    events, histories = read_cached_responses(cache_dir())
    # PROVENANCE: 22 Gamma event objects, 260 prices-history responses, 111,972 points
    assert (len(events), len(histories)) == (22, 260)
    assert sum(h.height for h in histories.values()) == 111_972
    assert all(h.get_column("price").is_between(0, 1).all() for h in histories.values())


def test_snapshot_client_finds_recorded_requests():
    client = PolymarketSnapshot(cache_dir=cache_dir())
    ev = client.event_by_slug(JUNE)
    assert (
        cache_key("event_slug", f"https://gamma-api.polymarket.com/events/slug/{JUNE}")
        == "508712e27134586d17faab698066655c9c6367d2"
    )
    b = event_buckets(ev)
    assert b.get_column("bucket_label").to_list() == ["<150k", "150-200k", "200-250k", "250-300k", ">300k"]
    # resolution: June 2024 payrolls printed +206k -> only "200-250k" paid out
    assert b.get_column("resolved_yes").to_list() == [0.0, 0.0, 1.0, 0.0, 0.0]
    token = b.filter(pl.col("bucket_label") == "150-200k").get_column("yes_token_id")[0]
    url = client.prices_history_url(token, *WINDOW, 1)
    assert url.startswith(
        f"{CLOB_URL}/prices-history?market={token}&startTs=1720094400&endTs=1720110600&fidelity=1"
    )
    assert cache_key("prices_history", url) == "5607805f967846f4dcc3aaa3df3c42724e510974"
    h = client.prices_history(token, *WINDOW, fidelity=1)
    assert h.height == 270
    assert h.row(0) == (datetime(2024, 7, 4, 12, 0, 2, tzinfo=UTC), 0.27)
    assert h.row(-1) == (datetime(2024, 7, 4, 16, 29, 2, tzinfo=UTC), 0.27)
    with pytest.raises(SourceError, match="not in the snapshot cache"):
        client.prices_history(token, WINDOW[0], WINDOW[1] + 60, fidelity=1)


def test_live_client_against_loopback_server_matches_snapshot(tmp_path):
    cache = cache_dir()

    def prices(q):
        # answer like CLOB: look the request up by its canonical public URL (what was recorded)
        url = PolymarketSnapshot(cache_dir=cache).prices_history_url(
            q["market"][0], int(q["startTs"][0]), int(q["endTs"][0]), int(q["fidelity"][0])
        )
        p = cache / f"{cache_key('prices_history', url)}.json"
        return (200, p.read_bytes()) if p.is_file() else (400, b'{"error": "invalid filters"}')

    event_body = (
        cache / f"{cache_key('event_slug', f'https://gamma-api.polymarket.com/events/slug/{JUNE}')}.json"
    ).read_bytes()
    with serve({f"/events/slug/{JUNE}": event_body, "/prices-history": prices}) as (base, seen):
        live = PolymarketLive(gamma_url=base, clob_url=base)
        got = live.market_prices([JUNE_MARKET])
        with pytest.raises(SourceError, match=r"HTTP 400"):
            live.prices_history("123", *WINDOW, fidelity=1)
        with pytest.raises(SourceError, match=r"/events/slug/nope.*HTTP 404"):
            live.event_by_slug("nope")
    assert sum(s.startswith("/prices-history?market=") for s in seen) == 6
    snap = PolymarketSnapshot(get_settings().require_snapshot()).market_prices([JUNE_MARKET])
    cols = ["market_id", "bucket_label", "token_id", "ts", "price"]
    assert got.height == snap.height == 5 * 270
    assert got.select(cols).equals(snap.select(cols))
    assert got.get_column("source_file")[0].startswith(f"{base}/prices-history?market=")
    # stored and read back through the one partition-replace helper
    with open_db(tmp_path / "p.duckdb") as con:
        replace_partition(con, "prediction_market_prices", got, {"partition_key": JUNE})
        back = read_table(con, "prediction_market_prices")
    assert back.height == got.height
    first = back.filter(pl.col("bucket_label") == "200-250k").sort("ts").row(0, named=True)
    assert (first["ts"], first["price"]) == (datetime(2024, 7, 4, 12, 0, 2, tzinfo=UTC), 0.245)


def test_event_bucket_errors():
    bad = {"markets": [{"groupItemTitle": "a", "outcomes": '["Yes", "No"]', "clobTokenIds": '["1"]'}]}
    with pytest.raises(SourceError, match=r"row 1 \(line 2\), field markets\[0\].outcomes"):
        event_buckets(bad)
    dup = {"markets": [{"groupItemTitle": "a", "outcomes": ["Yes", "No"], "clobTokenIds": ["1", "2"]}] * 2}
    with pytest.raises(SourceError, match="repeated"):
        event_buckets(dup)
    with pytest.raises(SourceError, match="no markets"):
        event_buckets(json.loads('{"markets": []}'))
