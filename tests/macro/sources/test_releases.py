"""Release-calendar sources: LiveMacroEval panel / live file / calendar export, ForexFactory, errors."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest

from leaf_live.core import storage
from leaf_live.core.sources import SourceError
from leaf_live.macro.sources.releases import (
    LIVE_FILE,
    PANEL_FILES,
    ReleaseCalendarLive,
    ReleaseCalendarSnapshot,
    read_calendar_file,
)

HEADER = "field_id,release_datetime_et,event,event_base_matched,A,C,raw_surprise\n"
GOOD = (
    "nonfarm_payrolls,2024-03-08 08:30:00,Nonfarm Payrolls  (Feb),Nonfarm"
    " Payrolls,275000.0,200000.0,75000.0\n"
)


def _row(cal: pl.DataFrame, indicator: str, at: datetime) -> dict:
    hit = cal.filter((pl.col("indicator_id") == indicator) & (pl.col("release_at") == at))
    assert hit.height == 1, (indicator, at, hit)
    return hit.row(0, named=True)


@pytest.fixture(scope="module")
def cal(snapshot_dir):
    return ReleaseCalendarSnapshot(snapshot_dir).calendar()


@pytest.fixture(scope="module")
def ff(snapshot_dir):
    return ReleaseCalendarSnapshot(snapshot_dir, sources=("forexfactory",)).calendar()


# ------------------------------------------------------------------------------------------------
# LiveMacroEval files
# ------------------------------------------------------------------------------------------------


def test_panel_and_live_rows_conform(cal):
    storage.conform("release_calendar", cal)
    counts = dict(cal.group_by("source").len().iter_rows())
    assert counts == {"livemacroeval_panel": 2733 + 145, "livemacroeval_live": 103}
    assert cal.filter(pl.col("marked_revision"))["source_file"].unique().to_list() == [PANEL_FILES[1]]
    assert cal.filter(pl.col("marked_revision")).height == 145
    assert (cal["available_at"] == cal["release_at"]).all()


def test_et_to_utc_units_and_partition(cal):
    # EST (UTC-5): payrolls 2010-01-08 08:30 ET; persons -> thousands
    nfp = _row(cal, "nonfarm_payrolls", datetime(2010, 1, 8, 13, 30, tzinfo=UTC))
    assert (nfp["actual"], nfp["consensus"], nfp["consensus_source"]) == (-85.0, 0.0, "investing")
    assert (nfp["release_time_et"], nfp["partition_key"], nfp["period_label"]) == (
        "08:30",
        "2010-01",
        "2009-12",
    )
    assert nfp["period_source"] == "release_lag" and nfp["reference_period"] == date(2009, 12, 1)
    # EDT (UTC-4): the last panel row, 2025-10-24 08:30 CPI
    cpi = _row(cal, "cpi", datetime(2025, 10, 24, 12, 30, tzinfo=UTC))
    assert cpi["period_label"] == "2025-09" and cpi["period_source"] == "event_text"
    # existing home sales 4,150,000.000000001 units -> 4150.000000000001 thousand
    ehs = _row(cal, "existing_home_sales", datetime(2025, 12, 19, 15, 0, tzinfo=UTC))
    assert ehs["consensus"] == pytest.approx(4150.0, rel=1e-15) and ehs["actual"] == 4130.0
    assert ehs["source"] == "livemacroeval_live" and ehs["source_file"] == LIVE_FILE


def test_period_labels(cal):
    # GDP without a period in the event text: release month - 1, as the source did (dropped_revisions.csv)
    gdp = _row(cal, "real_gdp_advance", datetime(2013, 12, 20, 13, 30, tzinfo=UTC))
    assert (gdp["period_label"], gdp["period_source"], gdp["marked_revision"]) == (
        "2013-11",
        "release_lag",
        True,
    )
    # The 2013-12-20 release is the third estimate of 2013Q3: a month label names the latest quarter
    # complete by the end of that month.
    assert gdp["reference_period"] == date(2013, 7, 1)
    q2 = _row(cal, "real_gdp_advance", datetime(2014, 8, 28, 12, 30, tzinfo=UTC))
    assert (q2["period_label"], q2["reference_period"]) == ("2014-Q2", date(2014, 4, 1))
    # Q4 released in February belongs to the previous year
    q4 = _row(cal, "real_gdp_advance", datetime(2026, 2, 20, 13, 30, tzinfo=UTC))
    assert (q4["period_label"], q4["reference_period"]) == ("2025-Q4", date(2025, 10, 1))
    # a December figure released in January is the previous year's
    dec = _row(cal, "cpi", datetime(2026, 1, 13, 13, 30, tzinfo=UTC))
    assert dec["period_label"] == "2025-12"
    # unlabelled 10:00 durable-goods revision early in April 2018 belongs to February (March's advance
    # release, labelled '(Mar)', comes later that month)
    dg = _row(cal, "durable_goods", datetime(2018, 4, 4, 14, 0, tzinfo=UTC))
    assert (dg["period_label"], dg["period_source"]) == ("2018-02", "release_lag")
    # catch-up release stamped one minute early keeps its own (older) period
    old = _row(cal, "nonfarm_payrolls", datetime(2025, 12, 16, 13, 29, tzinfo=UTC))
    assert (old["period_label"], old["consensus"], old["consensus_source"]) == ("2025-10", None, None)


def test_months_filter(snapshot_dir, cal):
    part = ReleaseCalendarSnapshot(snapshot_dir).calendar(months=["2018-04"])
    assert part.height > 0 and set(part["partition_key"]) == {"2018-04"}
    assert part.equals(cal.filter(pl.col("partition_key") == "2018-04"))


def test_cache_follows_file_changes(tmp_path):
    f = tmp_path / "cal.csv"
    f.write_text(HEADER + GOOD)
    first = read_calendar_file(f)
    assert first["actual"].to_list() == [275.0]
    f.write_text(HEADER + GOOD.replace("275000.0", "276000.0").replace("75000.0", "76000.0"))
    os.utime(f, ns=(1, 10**18))  # a different mtime even on coarse file systems
    assert read_calendar_file(f)["actual"].to_list() == [276.0]


# ------------------------------------------------------------------------------------------------
# malformed rows
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "field", "fragment"),
    [
        (
            (
                "nonfarm_payrolls,2024-04-05 08:30:00,Nonfarm Payrolls  (Mar),Nonfarm"
                " Payrolls,30three,200000.0,\n"
            ),
            "field A='30three'",
            "not a number",
        ),
        (
            (
                "nonfarm_payroll,2024-04-05 08:30:00,Nonfarm Payrolls  (Mar),Nonfarm"
                " Payrolls,303000.0,200000.0,\n"
            ),
            "field field_id='nonfarm_payroll'",
            "unknown indicator_id",
        ),
        # 02:30 on 2021-03-14 does not exist in New York (clocks jump 02:00 -> 03:00)
        (
            "cpi,2021-03-14 02:30:00,CPI (YoY)  (Feb),CPI (YoY),1.7,1.7,0.0\n",
            "field release_datetime_et='2021-03-14 02:30:00'",
            "does not exist",
        ),
        # 01:30 on 2021-11-07 happens twice in New York
        (
            "cpi,2021-11-07 01:30:00,CPI (YoY)  (Oct),CPI (YoY),6.2,5.8,0.4\n",
            "field release_datetime_et='2021-11-07 01:30:00'",
            "ambiguous",
        ),
        (
            "cpi,2021-11-10 8.30am,CPI (YoY)  (Oct),CPI (YoY),6.2,5.8,0.4\n",
            "field release_datetime_et='2021-11-10 8.30am'",
            "not a timestamp",
        ),
        (
            "cpi,2021-11-10 08:30:00,CPI (YoY)  (Oct),CPI (YoY),6.2,5.8,0.3\n",
            "field raw_surprise='0.3'",
            "raw_surprise is not A - C",
        ),
    ],
)
def test_malformed_row_names_file_row_field(tmp_path, line, field, fragment):
    f = tmp_path / "bad_calendar.csv"
    f.write_text(HEADER + GOOD + line)
    with pytest.raises(SourceError) as err:
        ReleaseCalendarSnapshot(tmp_path, sources=("livemacroeval_live",), calendar_file=f).calendar()
    msg = str(err.value)
    assert "bad_calendar.csv" in msg and "row 2 (line 3)" in msg and field in msg and fragment in msg, msg
    assert (err.value.row, err.value.file) == (2, "bad_calendar.csv")


def test_missing_column_and_wrong_ref_period(tmp_path):
    f = tmp_path / "no_c.csv"
    f.write_text("field_id,release_datetime_et,event,A\n" + "cpi,2021-11-10 08:30:00,CPI (YoY),6.2\n")
    with pytest.raises(SourceError, match=r"no_c.csv.*missing column\(s\) \['C'\]"):
        read_calendar_file(f)
    g = tmp_path / "ref.csv"
    g.write_text(
        "field_id,release_datetime_et,event,ref_period,A,C\n"
        "cpi,2021-11-10 08:30:00,CPI (YoY)  (Oct),2021-09,6.2,5.8\n"
    )
    with pytest.raises(
        SourceError, match=r"ref.csv, row 1 \(line 2\), field ref_period='2021-09'.*'2021-10'"
    ):
        read_calendar_file(g)


def test_bad_file_in_snapshot_fails_whole_load(tmp_path, snapshot_dir):
    """A malformed row in the recorded panel stops the load with its file, row and field."""
    for rel in PANEL_FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(snapshot_dir / rel, tmp_path / rel)
    path = tmp_path / PANEL_FILES[0]
    lines = path.read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace("2010-01-14 08:30:00", "2010-01-14 08:30:xx")
    path.write_text("".join(lines))
    with pytest.raises(
        SourceError, match=r"field_releases.csv, row 5 \(line 6\), field release_datetime_et="
    ):
        ReleaseCalendarSnapshot(tmp_path, sources=("livemacroeval_panel",)).calendar()


# ------------------------------------------------------------------------------------------------
# ForexFactory
# ------------------------------------------------------------------------------------------------


def test_forexfactory_rows_by_hand(ff):
    storage.conform("release_calendar", ff)
    assert set(ff["consensus_source"].drop_nulls()) == {"forexfactory"}
    # 2013-01-04,9:30pm,USD,Non-Farm Employment Change,High,155K,150K,161K  (UTC+8 -> 13:30 UTC = 08:30 EST)
    nfp = _row(ff, "nonfarm_payrolls", datetime(2013, 1, 4, 13, 30, tzinfo=UTC))
    assert (nfp["actual"], nfp["consensus"], nfp["release_time_et"]) == (155.0, 150.0, "08:30")
    assert (nfp["period_label"], nfp["period_source"]) == ("2012-12", "release_lag")
    # 2020-07-30,8:30pm,USD,Advance GDP q/q,High,-32.9%,-34.5%  (summer: 12:30 UTC = 08:30 EDT)
    gdp = _row(ff, "real_gdp_advance", datetime(2020, 7, 30, 12, 30, tzinfo=UTC))
    assert (gdp["actual"], gdp["consensus"], gdp["release_time_et"]) == (-32.9, -34.5, "08:30")
    assert gdp["reference_period"] == date(2020, 4, 1)
    # 2013-11-26,9:30pm,USD,Building Permits,High,1.03M,0.94M -> thousands of units
    bp = _row(ff, "building_permits", datetime(2013, 11, 26, 13, 30, tzinfo=UTC))
    assert (bp["actual"], bp["consensus"], bp["period_label"]) == (1030.0, 940.0, "2013-10")
    # same day "Sep Data" catch-up row 0.97M: its own period, one minute earlier
    sep = _row(ff, "building_permits", datetime(2013, 11, 26, 13, 29, tzinfo=UTC))
    assert (sep["actual"], sep["period_label"], sep["period_source"]) == (970.0, "2013-09", "event_text")
    hs = ff.filter(
        (pl.col("indicator_id") == "housing_starts") & (pl.col("partition_key") == "2013-12")
    ).sort("release_at")
    assert hs.select("release_time_et", "period_label", "actual").rows() == [
        ("08:28", "2013-09", 870.0),
        ("08:29", "2013-10", 890.0),
        ("08:30", "2013-11", 1090.0),
    ]
    # 2010-01-04 ISM 11:00pm UTC+8 = 10:00 EST
    ism = _row(ff, "ism_manufacturing", datetime(2010, 1, 4, 15, 0, tzinfo=UTC))
    assert ism["release_time_et"] == "10:00"


def test_forexfactory_scraper_quirks(ff):
    # the 2011 file's last rows are January 2012 stamped 2011: ISM Dec-2011 53.9 was released 2012-01-03
    ism = _row(ff, "ism_manufacturing", datetime(2012, 1, 3, 15, 0, tzinfo=UTC))
    assert (ism["actual"], ism["consensus"]) == (53.9, 53.3)
    jan11 = _row(ff, "ism_manufacturing", datetime(2011, 1, 3, 15, 0, tzinfo=UTC))
    assert jan11["actual"] == 57.0  # the real 2011-01-03 row, kept once although two files list it
    assert ff.group_by(["indicator_id", "release_at"]).len()["len"].max() == 1


def test_forexfactory_agrees_with_panel(ff, cal):
    """Independent cross-check: same release instant and same actual (ET and UTC+8 both placed right)."""
    panel = cal.filter((pl.col("source") == "livemacroeval_panel") & ~pl.col("marked_revision"))
    j = ff.join(panel, on=["indicator_id", "release_at"], suffix="_p")
    for ind, n_min in [
        ("nonfarm_payrolls", 168),
        ("unemployment_rate", 168),
        ("ism_manufacturing", 168),
        ("cpi", 138),
        ("ppi", 167),
        ("retail_sales", 168),
    ]:
        sub = j.filter(pl.col("indicator_id") == ind)
        assert sub.height >= n_min, ind
        assert ((sub["actual"] - sub["actual_p"]).abs() < 1e-9).all(), ind


def test_forexfactory_bad_value(tmp_path):
    folder = tmp_path / "macro" / "calendar_forexfactory_spoluan"
    folder.mkdir(parents=True)
    (folder / "forex_factory_calendar_2015.csv").write_text(
        "Date,Time,Currency,Event,Impact,Actual,Forecast,Previous,Combined DateTime\n"
        "2015-01-09,9:30pm,USD,Non-Farm Employment Change,High,252K,241K,353K,2015-01-09 21:30:00\n"
        "2015-02-06,9:30pm,USD,Non-Farm Employment Change,High,257Q,234K,329K,2015-02-06 21:30:00\n"
    )
    with pytest.raises(
        SourceError, match=r"forex_factory_calendar_2015.csv, row 2 \(line 3\), field Actual='257Q'"
    ):
        ReleaseCalendarSnapshot(tmp_path, sources=("forexfactory",)).calendar()


# ------------------------------------------------------------------------------------------------
# live transport: calendar export file or URL
# ------------------------------------------------------------------------------------------------


def test_live_calendar_needs_a_file():
    with pytest.raises(ValueError, match="consensus forecasts have no free live API: pass calendar_file="):
        ReleaseCalendarLive(None)
    with pytest.raises(ValueError, match="'livemacroeval_panel' reads recorded files"):
        ReleaseCalendarLive("x.csv").calendar()


def test_live_calendar_from_url(http_server, snapshot_dir):
    body = (snapshot_dir / LIVE_FILE).read_text()
    http_server.routes["/export/calendar.csv"] = lambda q: (200, "text/csv", body)
    url = f"{http_server.url}/export/calendar.csv?week=this"
    live = ReleaseCalendarLive(url, sources=("livemacroeval_live",)).calendar()
    recorded = ReleaseCalendarSnapshot(snapshot_dir, sources=("livemacroeval_live",)).calendar()
    assert live.height == 103
    cols = [c for c in live.columns if c != "source_file"]
    assert live.select(cols).equals(recorded.select(cols))
    assert set(live["source_file"]) == {url}
    assert http_server.requests == [("/export/calendar.csv", {"week": ["this"]})]


def test_live_calendar_http_error(http_server):
    with pytest.raises(SourceError, match=r"/missing.csv: HTTP 404"):
        ReleaseCalendarLive(f"{http_server.url}/missing.csv", sources=("livemacroeval_live",)).calendar()


def test_live_calendar_local_file_with_scheduled_rows(tmp_path):
    f = tmp_path / "export.csv"
    f.write_text(
        "field_id,release_datetime_et,event,A,C\n"
        "ism_manufacturing,2026-06-01 10:00:00,ISM Manufacturing PMI  (May),,52.9\n"
        "housing_starts,2026-05-19 08:30:00,Housing Starts  (Apr),1402000.0,1390000.0\n"
    )
    live = ReleaseCalendarLive(f, sources=("livemacroeval_live",)).calendar()
    storage.conform("release_calendar", live)
    assert live.select("indicator_id", "period_label", "actual", "consensus").rows() == [
        ("housing_starts", "2026-04", 1402.0, 1390.0),
        ("ism_manufacturing", "2026-05", None, 52.9),
    ]
    assert Path(live["source_file"][0]).name == "export.csv"
