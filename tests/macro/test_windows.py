"""Nowcast windows (LiveMacroEval Sec. 3.4) on the real live-window release calendar."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import polars as pl
import pytest
from livemacro_helpers import live_releases

from leaf_live.core.storage import conform
from leaf_live.macro.windows import (
    WindowError,
    betting_windows,
    hourly_issue_times,
    mark_after_release,
    nowcast_windows,
    scheduled_releases,
    target_month,
)

ET = ZoneInfo("America/New_York")


@pytest.fixture(scope="module")
def windows() -> pl.DataFrame:
    return nowcast_windows(live_releases())


def _one(w: pl.DataFrame, ind: str, ref: date) -> dict:
    rows = w.filter((pl.col("indicator_id") == ind) & (pl.col("reference_period") == ref))
    assert rows.height == 1
    return rows.row(0, named=True)


def test_live_calendar_gives_one_window_per_release(windows):
    # 103 live-window releases (PROVENANCE: 2025-11 .. 2026-05), all distinct (indicator, period)
    assert windows.height == 103
    conform("nowcast_windows", windows)  # schema holds
    assert (windows.get_column("closes_at") > windows.get_column("opens_at")).all()


def test_march_2026_cpi_window(windows):
    w = _one(windows, "cpi", date(2026, 3, 1))
    # opens 2026-03-25 00:00 EDT (UTC-4), closes at the 2026-04-10 08:30 EDT release
    assert w["opens_at"] == datetime(2026, 3, 25, 4, 0, tzinfo=UTC)
    assert w["opens_at"].astimezone(ET) == datetime(2026, 3, 25, 0, 0, tzinfo=ET)
    assert w["closes_at"] == datetime(2026, 4, 10, 12, 30, tzinfo=UTC)
    assert w["partition_key"] == "2026-04"
    assert w["release_time_et"] == "08:30"
    assert w["prompt_group"] == "output_core"
    assert w["available_at"] == w["opens_at"]
    times = hourly_issue_times(w)
    # 16 days x 24 h (03-25 04:00Z .. 04-10 03:00Z) + 04:00Z..12:00Z on 04-10 = 384 + 9
    assert len(times) == 393 == w["n_issue_hours"]
    assert times[0] == w["opens_at"]
    assert times[-1] == datetime(2026, 4, 10, 12, 0, tzinfo=UTC)  # 08:00 ET: last hour strictly before 08:30
    assert all(b - a == timedelta(hours=1) for a, b in zip(times, times[1:]))


def test_quarterly_gdp_window_opens_in_last_month_of_quarter(windows):
    w = _one(windows, "real_gdp_advance", date(2026, 1, 1))
    assert w["target_month"] == date(2026, 3, 1)
    assert w["opens_at"] == datetime(2026, 3, 25, 4, 0, tzinfo=UTC)
    assert w["closes_at"] == datetime(2026, 4, 30, 12, 30, tzinfo=UTC)
    assert w["n_issue_hours"] == 36 * 24 + 9  # 03-25 04:00Z .. 04-30 12:00Z


def test_ten_oclock_release_last_issue_is_nine(windows):
    w = _one(windows, "ism_manufacturing", date(2026, 2, 1))
    times = hourly_issue_times(w)
    assert times[0].astimezone(ET) == datetime(2026, 2, 25, 0, 0, tzinfo=ET)  # EST, UTC-5
    assert times[-1].astimezone(ET) == datetime(2026, 3, 2, 9, 0, tzinfo=ET)
    assert len(times) == 4 * 24 + 24 + 10  # Feb 25..28, Mar 1, Mar 2 00:00..09:00


def test_window_across_spring_forward_skips_2am_like_the_paper_runner(windows):
    # Feb-2026 CPI: window 2026-02-25 .. release 2026-03-11 08:30 EDT spans the 2026-03-08 DST change
    times = hourly_issue_times(_one(windows, "cpi", date(2026, 2, 1)))
    local = [t.astimezone(ET) for t in times]
    on_dst_day = [t.hour for t in local if t.date() == date(2026, 3, 8)]
    assert on_dst_day == [0, 1] + list(range(3, 24))  # 23 runs: no 02:00, as in the recorded GPT-5 file
    # 02-25 05:00Z .. 03-11 12:00Z inclusive
    assert (
        len(times)
        == (datetime(2026, 3, 11, 12, tzinfo=UTC) - datetime(2026, 2, 25, 5, tzinfo=UTC))
        // timedelta(hours=1)
        + 1
    )


def test_target_month_and_bad_reference_periods():
    assert target_month("real_gdp_advance", date(2025, 10, 1)) == date(2025, 12, 1)
    assert target_month("cpi", date(2025, 10, 1)) == date(2025, 10, 1)
    with pytest.raises(WindowError, match="first day of a quarter"):
        target_month("real_gdp_advance", date(2026, 2, 1))
    with pytest.raises(WindowError, match="not the first day of a month"):
        target_month("cpi", date(2026, 3, 15))


def test_bad_release_rows_are_named():
    rel = datetime(2026, 4, 10, 12, 30, tzinfo=UTC)
    base = {"indicator_id": ["cpi"], "reference_period": [date(2026, 3, 1)], "release_at": [rel]}
    with pytest.raises(WindowError, match=r"row 0, field indicator_id='cpi_yoy'"):
        nowcast_windows(pl.DataFrame({**base, "indicator_id": ["cpi_yoy"]}))
    with pytest.raises(WindowError, match="second release"):
        nowcast_windows(pl.concat([pl.DataFrame(base)] * 2))
    with pytest.raises(WindowError, match="at or before its window opens"):
        nowcast_windows(pl.DataFrame({**base, "release_at": [datetime(2026, 3, 20, 12, 30, tzinfo=UTC)]}))
    with pytest.raises(WindowError, match="tz-aware"):
        nowcast_windows(pl.DataFrame({**base, "release_at": [datetime(2026, 4, 10, 12, 30)]}))
    with pytest.raises(WindowError, match="lacks column"):
        nowcast_windows(pl.DataFrame({"indicator_id": ["cpi"]}))


def test_mark_after_release_uses_greater_or_equal(windows):
    rel = datetime(2026, 4, 10, 12, 30, tzinfo=UTC)
    nc = pl.DataFrame(
        {
            "indicator_id": ["cpi", "cpi", "cpi", "ppi"],
            "reference_period": [date(2026, 3, 1)] * 3 + [date(2030, 1, 1)],
            "issued_at": [rel - timedelta(minutes=1), rel, rel + timedelta(hours=1), rel],
            "value": [3.0, 3.3, 3.3, 0.1],
        }
    )
    out = mark_after_release(nc, windows)
    assert out.get_column("after_release").to_list() == [
        False,
        True,
        True,
        False,
    ]  # no window for ppi 2030-01
    assert out.columns == nc.columns + ["after_release"]
    assert out.get_column("value").to_list() == [3.0, 3.3, 3.3, 0.1]
    with pytest.raises(WindowError, match="more than one window"):
        mark_after_release(nc, pl.concat([windows, windows]))


def test_live_windows_exist_before_their_release_lands():
    """Live operation: the calendar replayed at 2026-02-10 00:00 UTC shows February's later releases as
    scheduled (no actual). Windows from the landed first releases plus the scheduled ones equal the windows
    built once every value is known, so the hourly nowcasts find a release's window open before it lands; a
    GDP period whose advance estimate landed gets no second window from its later estimates."""
    from leaf_live.core.settings import get_settings
    from leaf_live.macro.scoring.surprises import first_releases
    from leaf_live.macro.sources.releases import calendar_known_at
    from leaf_live.macro.windows import open_windows, scheduled_releases
    from resources.sources import source_resources

    months = ["2026-01", "2026-02", "2026-03"]
    cal = source_resources(get_settings(), "snapshot")["calendar"].client().calendar(months=months)
    at = datetime(2026, 2, 10, tzinfo=UTC)
    known = calendar_known_at(cal, at)
    landed = first_releases(known)
    due = scheduled_releases(known, landed)
    assert due.height > 0 and (due["release_at"] > at).all()
    cols = ["indicator_id", "reference_period", "release_at"]
    live = nowcast_windows(pl.concat([landed.select(cols), due]))
    full = nowcast_windows(first_releases(cal).select(cols))
    assert live.sort("indicator_id", "reference_period").equals(full.sort("indicator_id", "reference_period"))
    # every window open at the clock closes on a release that has not landed yet
    now_open = open_windows(live, at)
    assert (
        now_open.height > 0
        and now_open.join(landed, on=["indicator_id", "reference_period"], how="semi").is_empty()
    )
    # GDP: the (delayed) 2025Q4 advance estimate is due on 2026-02-20 and its window is open at the clock; the
    # source-marked later estimate of 2026-03-13 opens no second window
    gdp = "real_gdp_advance"
    assert due.filter(pl.col("indicator_id") == gdp).rows() == [
        (gdp, date(2025, 10, 1), datetime(2026, 2, 20, 13, 30, tzinfo=UTC))
    ]
    assert now_open.filter(pl.col("indicator_id") == gdp)["reference_period"].to_list() == [date(2025, 10, 1)]
    assert live.filter(pl.col("indicator_id") == gdp).group_by("reference_period").len()["len"].max() == 1


def test_scheduled_releases_rule_on_a_constructed_calendar():
    t = lambda d, h: datetime(2026, 3, d, h, 30, tzinfo=UTC)  # noqa: E731
    cal = pl.DataFrame(
        {
            "indicator_id": ["cpi", "cpi", "gdp", "gdp", "retail_sales", "retail_sales", "ppi"],
            "reference_period": [
                date(2026, 2, 1),
                date(2026, 2, 1),
                date(2025, 10, 1),
                date(2026, 1, 1),
                date(2026, 2, 1),
                date(2026, 2, 1),
                None,
            ],
            "release_at": [t(11, 12), t(11, 12), t(26, 12), t(27, 12), t(17, 12), t(18, 12), t(12, 12)],
            "actual": [None, None, None, None, None, None, None],
            "marked_revision": [False, False, False, False, True, False, False],
        },
        schema_overrides={"actual": pl.Float64},
    )
    landed = pl.DataFrame({"indicator_id": ["gdp"], "reference_period": [date(2025, 10, 1)]})
    got = scheduled_releases(cal, landed).sort("indicator_id").rows()
    # cpi listed by two sources -> once; gdp 2025Q4 landed -> its later estimate dropped, 2026Q1 kept;
    # a source-marked revision never counts; a row without a reference period cannot close a window
    assert got == [
        ("cpi", date(2026, 2, 1), t(11, 12)),
        ("gdp", date(2026, 1, 1), t(27, 12)),
        ("retail_sales", date(2026, 2, 1), t(18, 12)),
    ]
    with pytest.raises(WindowError, match="actual"):
        scheduled_releases(cal.drop("actual"), landed)


def test_betting_windows_follow_the_target_months_that_nowcast_the_market():
    """App. O: Q1 2026 GDP is bet across the February and March target windows; the January job (opened
    2026-01-25, before the 2025Q4 advance estimate of 2026-02-20 08:30 ET) still bets on 2025Q4."""
    rel = live_releases()
    q1 = betting_windows("real_gdp_advance", date(2026, 1, 1), rel)
    assert q1 == [
        ("2026-02 window", datetime(2026, 2, 25, 5, 0, tzinfo=UTC)),  # 00:00 EST
        ("2026-03 window", datetime(2026, 3, 25, 4, 0, tzinfo=UTC)),  # 00:00 EDT
    ]
    # 2025Q4: 2025Q3 printed 2025-12-23, after the October and November windows opened: December only
    assert betting_windows("real_gdp_advance", date(2025, 10, 1), rel) == [
        ("2025-12 window", datetime(2025, 12, 25, 5, 0, tzinfo=UTC))
    ]
    # a monthly market is bet from its own month's window only (March CPI: the nowcast window)
    assert betting_windows("cpi", date(2026, 3, 1), rel) == [
        ("2026-03 window", datetime(2026, 3, 25, 4, 0, tzinfo=UTC))
    ]
    # previous quarter not stored: the quarter's last month only
    none = rel.filter(pl.col("indicator_id") != "real_gdp_advance")
    assert betting_windows("real_gdp_advance", date(2026, 1, 1), none) == [q1[1]]
    with pytest.raises(WindowError, match="not the first day of a quarter"):
        betting_windows("real_gdp_advance", date(2026, 2, 1), rel)
