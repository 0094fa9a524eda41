"""Source-client resources: the one place that picks snapshot or live, and the swap itself — for every source
whose live client can be pointed at a base URL, the live resource on a loopback server serving the snapshot's
own files gives the snapshot resource's tables (the release calendar also through the Dagster asset).

Sources without such a swap: the futures windows (the live client asks an intraday-bar provider, yfinance,
not a file server), the recorded nowcasts (an archive: snapshot only), and GDPNow / Cleveland / Chicago Fed
nowcasts (their live files are workbooks or JSON, not the recorded CSVs;
tests/macro/sources/test_fed_nowcasts.py drives them against the services' own layouts)."""

from __future__ import annotations

import tarfile
from dataclasses import replace
from datetime import date

import polars as pl
import pytest
from dagster import DagsterInstance, EnvVar, materialize

from assets.macro_releases import release_calendar
from leaf_live.core import storage
from leaf_live.core.settings import Settings
from leaf_live.macro.sources import fed_nowcasts, fred_md, polymarket, realtime_gdp
from leaf_live.macro.sources.releases import LIVE_FILE
from resources import default_resources
from resources.sources import (
    SOURCES,
    FedNowcastsLiveResource,
    FedNowcastsSnapshotResource,
    FredLiveResource,
    FredMdLiveResource,
    FredMdSnapshotResource,
    FredSnapshotResource,
    PolymarketLiveResource,
    PolymarketSnapshotResource,
    ReleaseCalendarLiveResource,
    ReleaseCalendarSnapshotResource,
    source_resources,
)

ALL_CALENDARS = ["livemacroeval_panel", "livemacroeval_live", "forexfactory"]


def _same_but_provenance(snap: pl.DataFrame, live: pl.DataFrame, col: str, base: str) -> None:
    """Equal frames, except that ``col`` names the file by URL (``base/<snapshot path>``) in the live one."""
    assert live.height == snap.height > 0
    rest = [c for c in snap.columns if c != col]
    assert live.select(rest).equals(snap.select(rest))
    assert live[col].to_list() == [f"{base}/{p}" for p in snap[col].to_list()]


def test_one_place_chooses_snapshot_or_live_for_every_source(tmp_path):
    s = Settings(
        db_path=tmp_path / "x.duckdb",
        snapshot_dir=tmp_path,
        transport="snapshot",
        urls={
            "LEAF_LIVE_FRED_MD_BASE_URL": "http://127.0.0.1:9/md",
            "LEAF_LIVE_NYFED_NOWCAST_URL": "http://ny",
            "LEAF_LIVE_OPEN_METEO_URL": "http://127.0.0.1:9/om",
        },
        secrets_set=frozenset({"FRED_API_KEY"}),
    )
    snap = source_resources(s)
    live = source_resources(replace(s, transport="live"))
    assert set(snap) == set(live) == set(SOURCES)
    assert [type(r).__name__ for r in snap.values()] == [
        "ReleaseCalendarSnapshotResource",
        "WindowPricesSnapshotResource",
        "FredSnapshotResource",
        "FredMdSnapshotResource",
        "RealTimeGdpSnapshotResource",
        "FedNowcastsSnapshotResource",
        "PolymarketSnapshotResource",
        "RecordedNowcastsResource",
        "DailyPricesSnapshotResource",
        "WeatherSnapshotResource",
        "GridLoadSnapshotResource",
        "EventMarketsSnapshotResource",
        "RecordedEventsResource",
        "EventSearchSnapshotResource",
    ]
    assert [type(r).__name__ for r in live.values()] == [
        "ReleaseCalendarLiveResource",
        "WindowPricesLiveResource",
        "FredLiveResource",
        "FredMdLiveResource",
        "RealTimeGdpLiveResource",
        "FedNowcastsLiveResource",
        "PolymarketLiveResource",
        "RecordedNowcastsResource",
        "DailyPricesLiveResource",
        "WeatherLiveResource",
        "GridLoadLiveResource",
        "EventMarketsLiveResource",
        "RecordedEventsResource",
        "EventSearchLiveResource",
    ]
    assert live["event_search"].client() is None  # live: each model's own provider web search
    # settings reach the live clients; the secret travels as an EnvVar, never as its value
    assert live["fred_md"].client().base_url == "http://127.0.0.1:9/md"
    assert (
        live["realtime_gdp"].client().base_url == realtime_gdp.DEFAULT_BASE_URL
    )  # LEAF_LIVE_PHILLY_RTDSM_URL unset
    assert live["fed_nowcasts"].urls == {fed_nowcasts.NYFED: "http://ny"}
    assert live["fed_nowcasts"].client().urls[fed_nowcasts.NYFED] == "http://ny"
    assert isinstance(live["fred"].api_key, EnvVar) and live["fred"].api_key.env_var_name == "FRED_API_KEY"
    assert live["weather"].client().base == "http://127.0.0.1:9/om"
    assert snap["calendar"].client() is snap["calendar"].client()  # built once per resource (one per run)
    with pytest.raises(ValueError, match="transport='ftp'"):
        source_resources(s, "ftp")
    with pytest.raises(ValueError, match="set snapshot_dir"):
        source_resources(replace(s, snapshot_dir=None))["fred_md"].client()


def test_release_calendar_swap(http_server, snapshot_dir):
    http_server.static = snapshot_dir
    snap = ReleaseCalendarSnapshotResource(snapshot_dir=str(snapshot_dir), calendar_sources=ALL_CALENDARS)
    live = ReleaseCalendarLiveResource(
        calendar_file=f"{http_server.url}/{LIVE_FILE}",
        archive_url=http_server.url,
        calendar_sources=ALL_CALENDARS,
    )
    a, b = snap.client().calendar(), live.client().calendar()
    assert set(a["source"]) == {"livemacroeval_panel", "livemacroeval_live", "forexfactory"}
    _same_but_provenance(a, b, "source_file", http_server.url)
    # the ForexFactory years are named over HTTP (no directory listing): the same 14 files were read
    assert sum(p.startswith("/macro/calendar_forexfactory_spoluan/") for p, _ in http_server.requests) == 14


def test_release_calendar_asset_swap(http_server, snapshot_dir, tmp_path):
    """The same asset, partition and code; only the resource differs."""
    http_server.static = snapshot_dir
    tables = {}
    for name, calendar in (
        ("snapshot", ReleaseCalendarSnapshotResource(snapshot_dir=str(snapshot_dir))),
        (
            "live",
            ReleaseCalendarLiveResource(
                calendar_file=f"{http_server.url}/{LIVE_FILE}", archive_url=http_server.url
            ),
        ),
    ):
        db = tmp_path / f"{name}.duckdb"
        resources = {**default_resources(db=db, snapshot=snapshot_dir), "calendar": calendar}
        for key in ("2018-04", "2026-01"):  # a panel month and a live-window month
            assert materialize(
                [release_calendar],
                resources=resources,
                instance=DagsterInstance.ephemeral(),
                partition_key=key,
            ).success
        with storage.open_db(db) as con:
            tables[name] = storage.read_table(con, "release_calendar").sort(
                "release_at", "indicator_id", "source"
            )
    assert set(tables["snapshot"]["partition_key"]) == {"2018-04", "2026-01"}
    _same_but_provenance(tables["snapshot"], tables["live"], "source_file", http_server.url)


def test_fred_md_swap(http_server, snapshot_dir):
    with tarfile.open(snapshot_dir / fred_md.ARCHIVE) as tf:
        for v in ("2017-12", "2024-02"):
            body = tf.extractfile(f"fred-md_vintages/{v}.csv").read()
            http_server.routes[f"/fred-md/monthly/{v}.csv"] = lambda q, body=body: (200, "text/csv", body)
    snap = FredMdSnapshotResource(snapshot_dir=str(snapshot_dir)).client()
    live = FredMdLiveResource(base_url=f"{http_server.url}/fred-md").client()
    for target in (date(2018, 1, 1), date(2024, 3, 1)):  # App. I: the vintage preceding the target month
        v = snap.vintage_preceding(target)
        assert v == live.vintage_preceding(target)
        (a, ta), (b, tb) = snap.load_vintage(v), live.load_vintage(v)
        assert a.equals(b) and ta == tb and a.height > 700


def test_fred_swap(http_server, snapshot_dir):
    body = (snapshot_dir / "macro/fred_series/codex_macro_monitor/PAYEMS.csv").read_bytes()
    http_server.routes["/graph/fredgraph.csv"] = lambda q: (
        (200, "text/csv", body) if q["id"] == ["PAYEMS"] else (404, "text/plain", "")
    )
    snap = FredSnapshotResource(snapshot_dir=str(snapshot_dir)).client().series("PAYEMS")
    live = FredLiveResource(graph_url=http_server.url).client().series("PAYEMS")
    assert live.equals(snap) and snap.height > 500


def test_nyfed_nowcast_swap(http_server, snapshot_dir):
    http_server.static = snapshot_dir
    rel = fed_nowcasts.SNAPSHOT_FILES[fed_nowcasts.NYFED][0]
    snap = (
        FedNowcastsSnapshotResource(snapshot_dir=str(snapshot_dir), models=[fed_nowcasts.NYFED])
        .client()
        .nowcasts()
    )
    live = (
        FedNowcastsLiveResource(
            models=[fed_nowcasts.NYFED], urls={fed_nowcasts.NYFED: f"{http_server.url}/{rel}"}
        )
        .client()
        .nowcasts()
    )
    assert snap.height == 22
    # raw_response_id is file#row: the same rows of the same file, named by URL
    rest = [c for c in snap.columns if c != "raw_response_id"]
    assert live.select(rest).equals(snap.select(rest))
    assert live["raw_response_id"].to_list() == [f"{http_server.url}/{r}" for r in snap["raw_response_id"]]


def test_polymarket_swap(http_server, snapshot_dir):
    cache = snapshot_dir / polymarket.PLSITE_CACHE_DIR
    market = polymarket.MarketSpec(
        "how-many-jobs-added-in-june",
        "nonfarm_payrolls",
        date(2024, 6, 1),
        1720094400,
        1720110600,
        fidelity=1,
    )
    recorded = polymarket.PolymarketSnapshot(cache_dir=cache)

    def answer(namespace: str, url: str):
        p = cache / f"{polymarket.cache_key(namespace, url)}.json"
        return (200, "application/json", p.read_bytes()) if p.is_file() else (404, "text/plain", "")

    http_server.routes[f"/events/slug/{market.slug}"] = lambda q: answer(
        "event_slug", recorded.event_url(market.slug)
    )
    http_server.routes["/prices-history"] = lambda q: answer(
        "prices_history",
        recorded.prices_history_url(
            q["market"][0], int(q["startTs"][0]), int(q["endTs"][0]), int(q["fidelity"][0])
        ),
    )
    snap = PolymarketSnapshotResource(snapshot_dir=str(snapshot_dir)).client().market_prices([market])
    live = (
        PolymarketLiveResource(gamma_url=http_server.url, clob_url=http_server.url)
        .client()
        .market_prices([market])
    )
    assert snap.height == 5 * 270
    rest = [c for c in snap.columns if c != "source_file"]
    assert live.select(rest).equals(snap.select(rest))
    assert live["source_file"].to_list() == [
        u.replace(polymarket.CLOB_URL, http_server.url) for u in snap["source_file"]
    ]
