"""Fed nowcasts as comparator series (step functions of publication time): snapshot files and the live client.

Snapshot files are read where they lie; the live client is driven against a loopback HTTP server
that serves the services' formats (the real Chicago Fed workbook; GDPNow/Cleveland bodies rebuilt from the
real snapshot values in the services' layouts)."""

from __future__ import annotations

import io
import json
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import openpyxl
import polars as pl
import pytest
from livemacro_helpers import serve

from leaf_live.core.settings import get_settings
from leaf_live.core.sources import SourceError
from leaf_live.core.storage import conform
from leaf_live.macro.nowcasts import WRITER_COLUMNS, latest_as_of
from leaf_live.macro.sources.fed_nowcasts import (
    CHICAGO,
    CLEVELAND,
    GDPNOW,
    NYFED,
    SNAPSHOT_FILES,
    STLOUIS,
    FedNowcastsLive,
    FedNowcastsSnapshot,
    parse_cleveland_chart_csv,
    parse_fred_stleni_csv,
    parse_gdpnow_csv,
    parse_nyfed_csv,
)

ET = ZoneInfo("America/New_York")


def snap():
    return get_settings().require_snapshot()


@pytest.fixture(scope="module")
def fed() -> pl.DataFrame:
    return FedNowcastsSnapshot(snap()).nowcasts()


def value_at(frame: pl.DataFrame, model: str, ref: date, at: datetime, strict: bool = False) -> float | None:
    rows = latest_as_of(
        frame.filter(pl.col("model_id") == model, pl.col("reference_period") == ref), at, strict=strict
    )
    return rows.get_column("value")[0] if rows.height else None


def test_snapshot_row_counts(fed):
    conform("nowcasts", fed, deferred=WRITER_COLUMNS)
    counts = dict(fed.group_by("model_id").len().iter_rows())
    # GDPNow: 1801 history rows (2014-05-01..2026-02-19) + 30 for 2026Q1; Cleveland: 2288 history days +
    # 29 non-blank CPI days of the March-2026 chart (03/02..04/09); NY Fed 22 Fridays; Chicago 2 releases
    assert counts == {GDPNOW: 1831, CLEVELAND: 2317, NYFED: 22, CHICAGO: 2}
    assert fed.get_column("producer").null_count() == fed.height  # the writing asset stamps its producer
    assert fed.get_column("valid").all() and not fed.get_column("after_release").any()
    assert (fed.get_column("partition_key") == fed.get_column("model_id")).all()


def test_gdpnow_history_is_a_step_function_of_publication_time(fed):
    q2_2014 = date(2014, 4, 1)  # rows 5/1/14 3.9, 5/2/14 4.2, 5/6/14 4, 5/9/14 3.7 (quarter 6/30/14)
    assert value_at(fed, GDPNOW, q2_2014, datetime(2014, 5, 1, 16, 59, tzinfo=ET)) is None
    assert value_at(fed, GDPNOW, q2_2014, datetime(2014, 5, 1, 17, 0, tzinfo=ET)) == 3.9
    assert value_at(fed, GDPNOW, q2_2014, datetime(2014, 5, 6, 16, 59, tzinfo=ET)) == 4.2
    assert value_at(fed, GDPNOW, q2_2014, datetime(2014, 5, 6, 17, 0, tzinfo=ET)) == 4.0
    assert value_at(fed, GDPNOW, q2_2014, datetime(2014, 5, 8, 23, 0, tzinfo=ET)) == 4.0
    q1 = date(2026, 1, 1)
    assert value_at(fed, GDPNOW, q1, datetime(2026, 4, 16, 16, 0, tzinfo=ET)) == 1.1  # 4/15/26
    assert value_at(fed, GDPNOW, q1, datetime(2026, 4, 16, 17, 0, tzinfo=ET)) == 0.9  # 4/16/26
    # last value strictly before the 2026-04-30 08:30 ET advance release: 4/29/26 1.2
    assert value_at(fed, GDPNOW, q1, datetime(2026, 4, 30, 12, 30, tzinfo=UTC), strict=True) == 1.2
    # 17:00 ET is 22:00Z before the 2026-03-08 DST change and 21:00Z after it
    issued = dict(
        fed.filter(pl.col("model_id") == GDPNOW, pl.col("reference_period") == q1)
        .select("issued_at", "value")
        .iter_rows()
    )
    assert issued[datetime(2026, 3, 6, 22, tzinfo=UTC)] == 2.1
    assert issued[datetime(2026, 3, 10, 21, tzinfo=UTC)] == 2.2
    # the history file's last quarter: 2025Q4 (12/31/25), last row 2/19/26 3.0
    assert (
        value_at(fed, GDPNOW, date(2025, 10, 1), datetime(2026, 2, 20, 13, 30, tzinfo=UTC), strict=True)
        == 3.0
    )


def test_nyfed_weekly_fridays_at_noon(fed):
    ny = fed.filter(pl.col("model_id") == NYFED).sort("issued_at")
    local = [t.astimezone(ET) for t in ny.get_column("issued_at")]
    assert {t.weekday() for t in local} == {4} and {(t.hour, t.minute) for t in local} == {(12, 0)}
    assert local[0] == datetime(2025, 11, 28, 12, 0, tzinfo=ET) and ny.get_column("value")[0] == 2.66
    # App. O: 2026-02-27 05:00 .. 2026-03-03 18:00 the NY Fed bets sat in the 2.0-2.5% bucket
    q1 = date(2026, 1, 1)
    assert value_at(fed, NYFED, q1, datetime(2026, 2, 27, 5, tzinfo=UTC)) == 2.37  # 20-Feb-26
    assert value_at(fed, NYFED, q1, datetime(2026, 3, 3, 18, tzinfo=UTC)) == 2.38  # 27-Feb-26
    assert value_at(fed, NYFED, q1, datetime(2026, 4, 30, 12, 30, tzinfo=UTC), strict=True) == 2.36


def test_cleveland_march_2026_and_history(fed):
    mar = date(2026, 3, 1)
    rows = fed.filter(pl.col("model_id") == CLEVELAND, pl.col("reference_period") == mar).sort("issued_at")
    assert rows.height == 29
    assert rows.get_column("issued_at")[0] == datetime(2026, 3, 2, 22, tzinfo=UTC)  # 03/02 17:00 EST
    assert rows.get_column("value")[0] == pytest.approx(2.63930298635922)
    # latest before the 2026-04-10 08:30 ET CPI release: the 04/09 nowcast
    assert value_at(
        fed, CLEVELAND, mar, datetime(2026, 4, 10, 12, 30, tzinfo=UTC), strict=True
    ) == pytest.approx(3.25234150525464)
    # >= 2.8% (the winning bucket) on 03/03 and on all 22 update days from 03/11 to 04/09
    assert (rows.get_column("value") >= 2.8).sum() == 23
    hist = fed.filter(pl.col("model_id") == CLEVELAND, pl.col("reference_period") == date(2013, 8, 1)).sort(
        "issued_at"
    )
    assert hist.height == 9
    assert (hist.get_column("issued_at")[0], hist.get_column("value")[0]) == (
        datetime(2013, 8, 20, 21, tzinfo=UTC),
        pytest.approx(1.5730623987),
    )


def test_chicago_release_times_and_stlouis_needs_as_of(fed):
    mar = date(2026, 3, 1)
    assert value_at(fed, CHICAGO, mar, datetime(2026, 3, 26, 12, 29, tzinfo=UTC)) is None
    assert value_at(fed, CHICAGO, mar, datetime(2026, 3, 26, 12, 30, tzinfo=UTC)) == 4.46  # advance 08:30 EDT
    assert value_at(fed, CHICAGO, mar, datetime(2026, 4, 3, 12, 30, tzinfo=UTC), strict=True) == 4.49  # final
    assert STLOUIS not in set(fed.get_column("model_id"))
    text = (snap() / SNAPSHOT_FILES[STLOUIS][0]).read_text()
    with pytest.raises(ValueError, match="as_of"):
        parse_fred_stleni_csv(text, file="gdp-stlouisfed.csv", as_of=None)
    as_of = datetime(2026, 3, 1, tzinfo=UTC)
    st = parse_fred_stleni_csv(text, file="gdp-stlouisfed.csv", as_of=as_of)
    # FRED observation_date 10/1/25 = the 2025Q4 nowcast, not 2026Q1
    assert st.select("reference_period", "issued_at", "value").rows() == [
        (date(2025, 10, 1), as_of, -0.17368)
    ]
    both = FedNowcastsSnapshot(snap(), models=(), stlouis_as_of=as_of).nowcasts()
    assert both.height == 1 and both.get_column("model_id")[0] == STLOUIS


def test_bad_fed_rows_name_file_row_field():
    with pytest.raises(
        SourceError,
        match=r"file g.csv, row 2 \(line 3\), field Quarter being forecasted='2026-02-28'.*quarter-end",
    ):
        parse_gdpnow_csv(
            "Forecast Date,Quarter being forecasted,GDP Nowcast\n2/20/26,3/31/26,3.1\n2/23/26,2/28/26,3.1\n",
            file="g.csv",
        )
    with pytest.raises(SourceError, match=r"row 1 \(line 2\), field GDP Nowcast='n/a'"):
        parse_gdpnow_csv(
            "Forecast Date,Quarter being forecasted,GDP Nowcast\n2/20/26,3/31/26,n/a\n", file="g.csv"
        )
    with pytest.raises(SourceError, match=r"field 2026-Q5"):
        parse_nyfed_csv("Forecast Date,2026-Q5\n28-Nov-25,2.66\n", file="n.csv")
    with pytest.raises(SourceError, match=r"field Label='07/01'.*within 3 months"):
        parse_cleveland_chart_csv("Label,CPI Inflation\n07/01,2.5\n", file="c-2026-3.csv")
    with pytest.raises(SourceError, match="missing column"):
        parse_gdpnow_csv("Date,Nowcast\n", file="g.csv")


# ------------------------------------------------------------------------------------------------
# live transports against a loopback server
# ------------------------------------------------------------------------------------------------


def gdpnow_workbook_from_snapshot() -> bytes:
    """A GDPTrackingModelDataAndForecasts-style workbook carrying the real 2026Q1 GDPNow rows."""
    text = (snap() / SNAPSHOT_FILES[GDPNOW][1]).read_text(encoding="utf-8-sig")
    wb = openpyxl.Workbook()
    wb.active.title = "ReadMe"
    wb.active.append(["GDPNow model data and forecasts"])
    ws = wb.create_sheet("TrackingArchives")
    ws.append(["Forecast Date", "Quarter being forecasted", "Major Releases", "GDP Nowcast"])
    for line in text.strip().splitlines()[1:]:
        fd, q, v, _pub = line.split(",")
        ws.append([datetime.strptime(fd, "%m/%d/%y"), datetime.strptime(q, "%m/%d/%y"), "data", float(v)])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def cleveland_json_from_snapshot() -> bytes:
    """FusionCharts layout of nowcast_year.json for the real March-2026 chart (plus a release v-line)."""
    text = (snap() / SNAPSHOT_FILES[CLEVELAND][1]).read_text()
    lines = [ln.split(",") for ln in text.strip().splitlines()]
    header, body = lines[0], lines[1:]
    category = [{"label": r[0]} for r in body]
    category.insert(10, {"vline": "true", "label": "CPI release", "linePosition": "0"})
    datasets = []
    for j, name in enumerate(header[1:], start=1):
        data = [{"value": r[j], "tooltext": f"{name}{{br}}{r[0]}{{br}}"} for r in body]
        data.insert(10, {"value": ""})
        datasets.append({"seriesname": name, "data": data})
    return json.dumps(
        [
            {
                "chart": {"subcaption": "2026-3", "_comment": "2026-04-24"},
                "categories": [{"category": category}],
                "dataset": datasets,
            }
        ]
    ).encode()


def test_live_transports_parse_the_service_formats():
    s = snap()
    chicago_xlsx = (s / "macro/kalshi_urate_rmmomin/raw/chi-labor-market-indicators.xlsx").read_bytes()
    routes = {
        "/gdpnow/GDPTrackingModelDataAndForecasts.xlsx": gdpnow_workbook_from_snapshot(),
        "/webcharts/nowcast_year.json": cleveland_json_from_snapshot(),
        "/nowcast/nyfed.csv": (s / SNAPSHOT_FILES[NYFED][0]).read_bytes(),
        "/graph/fredgraph.csv": (s / SNAPSHOT_FILES[STLOUIS][0]).read_bytes(),
        "/lmi/chi-labor-market-indicators.xlsx": chicago_xlsx,
    }
    now = datetime(2026, 4, 29, 18, 0, tzinfo=UTC)  # 14:00 EDT: before the 4/29 GDPNow 17:00 stamp
    with serve(routes) as (base, seen):
        urls = {
            GDPNOW: f"{base}/gdpnow/GDPTrackingModelDataAndForecasts.xlsx",
            CLEVELAND: f"{base}/webcharts/nowcast_year.json",
            NYFED: f"{base}/nowcast/nyfed.csv",
            STLOUIS: f"{base}/graph/fredgraph.csv?id=STLENI",
            CHICAGO: f"{base}/lmi/chi-labor-market-indicators.xlsx",
        }
        live = FedNowcastsLive(urls=urls, clock=lambda: now).nowcasts()
        assert "/graph/fredgraph.csv?id=STLENI" in seen
        with pytest.raises(SourceError, match=r"/missing.xlsx.*HTTP 404"):
            FedNowcastsLive(
                models=[GDPNOW], urls={GDPNOW: f"{base}/missing.xlsx"}, clock=lambda: now
            ).nowcasts()
        with pytest.raises(SourceError, match="not an .xlsx workbook"):
            FedNowcastsLive(
                models=[GDPNOW], urls={GDPNOW: f"{base}/nowcast/nyfed.csv"}, clock=lambda: now
            ).nowcasts()
    conform("nowcasts", live, deferred=WRITER_COLUMNS)
    snapshot = FedNowcastsSnapshot(s).nowcasts()

    def series(frame, model, ref):
        return (
            frame.filter(pl.col("model_id") == model, pl.col("reference_period") == ref)
            .sort("issued_at")
            .select("issued_at", "value")
            .rows()
        )

    q1, mar = date(2026, 1, 1), date(2026, 3, 1)
    gd_live, gd_snap = series(live, GDPNOW, q1), series(snapshot, GDPNOW, q1)
    assert [v for _, v in gd_live] == [v for _, v in gd_snap] and len(gd_live) == 30
    assert [t for t, _ in gd_live[:-1]] == [t for t, _ in gd_snap[:-1]]
    assert gd_live[-1] == (now, 1.2)  # 4/29 value seen at 14:00 EDT: stamped with the fetch time, not 17:00
    assert series(live, CLEVELAND, mar) == series(snapshot, CLEVELAND, mar)
    assert series(live, NYFED, q1) == series(snapshot, NYFED, q1)
    assert series(live, STLOUIS, date(2025, 10, 1)) == [(now, -0.17368)]
    # the real Chicago Fed workbook: median forecast of the latest release of each month's nowcast
    chi = dict(live.filter(pl.col("model_id") == CHICAGO).select("reference_period", "value").iter_rows())
    assert chi == {
        date(2025, 9, 1): 4.34,
        date(2025, 10, 1): 4.46,
        date(2025, 11, 1): 4.44,
        date(2025, 12, 1): 4.56,
        date(2026, 1, 1): 4.36,
    }
    assert set(live.filter(pl.col("model_id") == CHICAGO).get_column("source_variable")) == {
        "forecast50f",
        "forecast50r",
    }
