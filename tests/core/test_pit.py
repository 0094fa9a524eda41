"""core.pit: as-of selection, point-in-time filter, cutoff flag, month keys, first release per period (the
as-of join: test_pit_as_of_join.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from leaf_live.core import pit

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "k": ["a", "a", "a", "b", "b"],
            "available_at": [
                T0,
                T0 + timedelta(hours=2),
                T0 + timedelta(hours=2),
                T0 + timedelta(hours=1),
                T0 + timedelta(hours=5),
            ],
            "valid": [True, True, False, True, True],
            "v": [1, 2, 3, 4, 5],
        }
    )


def test_as_of_latest_row_per_key_ties_keep_last_and_where_filters_first():
    f = _frame()
    at = T0 + timedelta(hours=2)
    assert pit.as_of(f, at, ["k"])["v"].to_list() == [3, 4]  # tie at +2h: last row in frame order
    assert pit.as_of(f, at, ["k"], where=pl.col("valid"))["v"].to_list() == [2, 4]
    assert pit.as_of(f, at, ["k"], strict=True)["v"].to_list() == [1, 4]  # strictly before +2h
    assert pit.as_of(f, T0 - timedelta(seconds=1), ["k"]).height == 0


def test_known_by_is_inclusive_and_refuses_naive_times():
    f = _frame()
    assert pit.known_by(f, T0 + timedelta(hours=1))["v"].to_list() == [1, 4]
    with pytest.raises(ValueError, match="tz-aware"):
        pit.known_by(f, datetime(2026, 3, 1))
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['issued_at'\]"):
        pit.known_by(f, T0, time_col="issued_at")


def test_flag_at_or_after_release_is_inclusive():
    f = pl.DataFrame(
        {"issued_at": [T0 - timedelta(minutes=1), T0, T0 + timedelta(minutes=1)], "closes_at": [T0] * 3}
    )
    assert f.select(pit.flag_at_or_after(pl.col("issued_at"), pl.col("closes_at")))[
        "issued_at"
    ].to_list() == [False, True, True]


def test_month_arithmetic_and_reference_periods():
    assert pit.shift_month(2025, 11, 3) == (2026, 2)
    assert pit.shift_month(2026, 1, -1) == (2025, 12)
    assert pit.reference_period("2026-Q1", "quarterly").isoformat() == "2026-01-01"
    assert pit.reference_period("2010-01", "quarterly").isoformat() == "2009-10-01"  # Feb release = 2009Q4


def test_month_keys_checks_and_new_york_months():
    assert pit.check_month("2026-03") == "2026-03"
    for bad in ("2026-13", "2026-3", "26-03", None, "2026-03-01"):
        with pytest.raises(ValueError, match=r"start=.*expected a month YYYY-MM"):
            pit.check_month(bad, "start")
    assert pit.shift_month_key("2026-01", -1) == "2025-12" and pit.shift_month_key("2025-11", 14) == "2027-01"
    assert pit.month_keys("2025-11", "2026-02") == ["2025-11", "2025-12", "2026-01", "2026-02"]
    assert pit.month_keys("2026-02", "2026-01") == []
    assert pit.month_index("2026-03") - pit.month_index(datetime(2025, 12, 31).date()) == 3
    assert pit.month_of_index(pit.month_index("1999-08")) == "1999-08"
    # 2026-04-01 02:00 UTC is still March 31 in New York (EDT, UTC-4)
    t = datetime(2026, 4, 1, 2, tzinfo=UTC)
    assert pit.et_month_key(t) == "2026-03" and pit.et_month_start(t).isoformat() == "2026-03-01"
    f = pl.DataFrame({"release_at": [t, t + timedelta(hours=4)]})
    assert f.select(pit.et_month_expr())["release_at"].to_list() == ["2026-03", "2026-04"]
    assert pit.quarter_start(datetime(2026, 2, 14).date()).isoformat() == "2026-01-01"
    q = pit.period_index(datetime(2026, 5, 1).date(), True) - pit.period_index(
        datetime(2025, 12, 1).date(), True
    )
    assert (
        q == 2
        and pit.period_start(pit.period_index(datetime(2026, 5, 9).date(), True), True).isoformat()
        == "2026-04-01"
    )


def test_first_release_per_period_keeps_the_advance_estimate():
    import datetime as dt

    f = pl.DataFrame(
        {
            "indicator_id": ["gdp", "gdp", "gdp", "cpi"],
            "reference_period": [dt.date(2013, 7, 1)] * 3 + [dt.date(2013, 9, 1)],
            "release_at": [T0 + timedelta(days=60), T0, T0 + timedelta(days=30), T0 + timedelta(days=1)],
            "actual": [4.1, 2.8, 3.6, 1.2],  # third, advance, second estimate; one CPI
        }
    )
    first = pit.first_per_period(f)
    assert first.select("indicator_id", "actual").rows() == [("gdp", 2.8), ("cpi", 1.2)]  # in release order
    assert f.select(pit.is_first_per_period())["release_at"].to_list() == [False, True, False, True]
