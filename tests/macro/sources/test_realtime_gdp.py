"""Real-time GDP vintages: the Philadelphia Fed's RTDSM workbook, the approximate vintages chained from the
ALFRED first/second/third-release panel, and the live client on a loopback server serving the Philadelphia
Fed's file.
"""

from __future__ import annotations

import io
from datetime import date, datetime

import openpyxl
import polars as pl
import pytest

from leaf_live.core.pit import UTC
from leaf_live.core.sources import SourceError
from leaf_live.macro.sources import realtime_gdp as G

PANEL_HEADER = (
    "observation_date,first_release_date,first_release,alfred_prev_level_first,second_release_date,"
    "second_release,alfred_prev_level_second,third_release_date,third_release,alfred_prev_level_third"
)


def _workbook(rows: list[list]) -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "ROUTPUT"
    for r in rows:
        ws.append(r)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def test_vintage_labels_are_the_middle_month_known_at_the_end_of_its_15th():
    # 24Q1 -> February 15 2024, known from 2024-02-16 00:00 EST = 05:00 UTC; 65Q4 -> November 1965
    assert G.vintage_label("ROUTPUT24Q1") == ("2024-02", datetime(2024, 2, 16, 5, tzinfo=UTC))
    assert G.vintage_label("ROUTPUT23Q3") == ("2023-08", datetime(2023, 8, 16, 4, tzinfo=UTC))  # EDT
    assert G.vintage_label("ROUTPUT65Q4")[0] == "1965-11"
    with pytest.raises(SourceError, match="not a vintage column"):
        G.vintage_label("RCON24Q1")


def test_parse_workbook_long_rows_and_errors():
    raw = _workbook(
        [
            ["DATE", "ROUTPUT23Q4", "ROUTPUT24Q1"],
            ["2023:Q2", 100.5, 101.0],
            ["2023:Q3", "#N/A", 102.25],
            [None, None, None],
        ]
    )
    f = G.parse_workbook(raw, file="w.xlsx")
    assert f.columns == list(G.COLUMNS)
    assert f.select("vintage", "reference_period", "value").rows() == [
        ("2023-11", date(2023, 4, 1), 100.5),
        ("2024-02", date(2023, 4, 1), 101.0),
        ("2024-02", date(2023, 7, 1), 102.25),
    ]
    assert set(f["source"]) == {G.SOURCE_RTDSM} and set(f["series_id"]) == {"ROUTPUT"}
    with pytest.raises(SourceError, match=r"row 1 .*field DATE='2023Q2': not a quarter"):
        G.parse_workbook(_workbook([["DATE", "ROUTPUT24Q1"], ["2023Q2", 1.0]]), file="w.xlsx")
    with pytest.raises(SourceError, match=r"field ROUTPUT24Q1='abc': not a number"):
        G.parse_workbook(_workbook([["DATE", "ROUTPUT24Q1"], ["2023:Q2", "abc"]]), file="w.xlsx")
    with pytest.raises(SourceError, match="cannot read workbook"):
        G.parse_workbook(b"not a zip", file="w.xlsx")


def test_release_vintages_chain_each_quarters_latest_growth_by_hand():
    # base: the last RTDSM vintage (2024-02) ends 2023Q4 at 200.0
    base = pl.DataFrame(
        {
            "source": [G.SOURCE_RTDSM] * 2,
            "series_id": ["ROUTPUT"] * 2,
            "vintage": ["2024-02"] * 2,
            "reference_period": [date(2023, 7, 1), date(2023, 10, 1)],
            "value": [190.0, 200.0],
            "available_at": [datetime(2024, 2, 16, 5, tzinfo=UTC)] * 2,
            "approximate": [False] * 2,
        },
        schema=G.COLUMNS,
    )
    text = "\n".join(
        [
            PANEL_HEADER,
            # 2023Q4: released before the base vintage -> not a new quarter; its later revision is not used
            # either
            "2023-10-01,2024-01-25,1000,990,2024-02-28,1001,990,2024-03-28,1002,990",
            # 2024Q1: advance +1% on its previous quarter, second +2%, third not yet
            "2024-01-01,2024-04-25,1010,1000,2024-05-30,1020,1000,,,",
            # 2024Q2: advance +0.5%
            "2024-04-01,2024-07-25,1025.1,1020,,,,,,",
        ]
    )
    rel = G.parse_release_panel(text, file="panel.csv")
    out = G.extend_with_releases(base, rel)
    by = {v: g.sort("reference_period") for (v,), g in out.group_by("vintage")}
    # one vintage per release that adds or revises a quarter after 2023Q4 (the Feb/Mar 2024 ones do not)
    assert sorted(by) == ["2024-04", "2024-05", "2024-07"]
    assert by["2024-04"]["value"].to_list() == pytest.approx([190.0, 200.0, 202.0])
    assert by["2024-05"]["value"].to_list() == pytest.approx([190.0, 200.0, 204.0])
    assert by["2024-07"]["value"].to_list() == pytest.approx([190.0, 200.0, 204.0, 204.0 * 1.005])
    # available at the release, 08:30 New York (EDT in May: 12:30 UTC)
    assert by["2024-05"]["available_at"][0] == datetime(2024, 5, 30, 12, 30, tzinfo=UTC)
    assert set(out["source"]) == {G.SOURCE_RELEASES} and out["approximate"].all()
    with pytest.raises(SourceError, match=r"row 1 .*field observation_date='2024-02-01'"):
        G.parse_release_panel(PANEL_HEADER + "\n2024-02-01,2024-04-25,1,1,,,,,,", file="panel.csv")


def test_snapshot_rtdsm_agrees_with_alfred_releases(snapshot_dir):
    # two independent records of the same releases: in every RTDSM vintage 2000-2024, the newest quarter
    # equals (to the RTDSM's 0.1 rounding) the latest of its ALFRED first/second/third releases published by
    # that date
    c = G.RealTimeGdpSnapshot(snapshot_dir)
    base = c.rtdsm()
    panel = c.files.parsed(
        "gdp-release-panel", G.SNAPSHOT_PANEL, lambda t, n: G.parse_release_panel(t, file=n)
    )
    checked = 0
    for (label,), g in base.filter(pl.col("vintage") >= "2000-01").group_by("vintage"):
        at, last = g["available_at"][0], g.sort("reference_period").row(-1, named=True)
        known = [r for r in panel if r["period"] == last["reference_period"] and r["release_at"] <= at]
        if known:
            assert max(known, key=lambda r: r["release_at"])["level"] == pytest.approx(
                last["value"], abs=0.051
            ), label
            checked += 1
    assert checked == 96
    # the workbook: 234 quarterly vintages 1965Q4 .. 2024Q1; the last ends 2023Q4 at 22,672.9
    assert base["vintage"].n_unique() == 234 and base["vintage"].max() == "2024-02"
    assert base.filter(pl.col("vintage") == "2024-02").sort("reference_period").row(-1)[3:5] == (
        date(2023, 10, 1),
        22672.9,
    )
    # the extension: monthly vintages after it through the 2026-03-13 release, never the panel's 'latest'
    # column
    v = c.vintages()
    ext = v.filter(pl.col("source") == G.SOURCE_RELEASES)
    assert ext["vintage"].min() == "2024-04" and ext["vintage"].max() == "2026-03"
    assert ext.filter(pl.col("vintage") == "2026-03")["reference_period"].max() == date(2025, 10, 1)


def test_live_client_reads_the_philadelphia_fed_workbook(http_server, snapshot_dir):
    http_server.routes["/xlsx/ROUTPUTQvQd.xlsx"] = lambda q: (
        200,
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        (snapshot_dir / G.SNAPSHOT_WORKBOOK).read_bytes(),
    )
    live = G.RealTimeGdpLive(f"{http_server.url}/xlsx")
    assert live.vintages().equals(
        G.RealTimeGdpSnapshot(snapshot_dir).rtdsm().sort("vintage", "available_at", "reference_period")
    )
    live.vintages()
    assert [p for p, _ in http_server.requests] == ["/xlsx/ROUTPUTQvQd.xlsx"]  # fetched once per client
    with pytest.raises(SourceError, match="HTTP 404"):
        G.RealTimeGdpLive(f"{http_server.url}/missing").vintages()
